"""Bug: latest_checkpoint builds its answer with os.path.join and returns a str, not a pathlib.Path."""
import os
import pathlib
import re

EXPECT_FAIL = {
    'latest_by_number': 'a str was returned; the specification asks',
    'latest_ignores_other_entries': 'a str was returned; the specification asks',
    'latest_missing_or_empty_directory': 'a str was returned; the specification asks',
}


def _names(directory):
    if not os.path.isdir(directory):
        return []
    names = []
    for name in os.listdir(directory):
        m = re.fullmatch(r"step_([0-9]+)\.pt", name)
        if m and os.path.isfile(os.path.join(directory, name)):
            names.append((int(m.group(1)), name))
    return [name for _, name in sorted(names)]


def latest_checkpoint(directory):
    names = _names(directory)
    if not names:
        return None
    return os.path.join(directory, names[-1])


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    deleted = []
    for name in _names(directory)[:-keep]:
        path = pathlib.Path(directory) / name
        path.unlink()
        deleted.append(path)
    return deleted
