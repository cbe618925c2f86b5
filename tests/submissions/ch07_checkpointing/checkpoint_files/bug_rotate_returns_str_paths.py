"""Bug: rotate_checkpoints returns the deleted paths as strings (os.path.join) instead of pathlib.Path objects."""
import os
import pathlib
import re

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'a str was returned; the specification asks',
    'rotate_leaves_other_files_alone': 'a str was returned; the specification asks',
    'rotate_missing_directory_and_bad_keep': 'a str was returned; the specification asks',
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
    return pathlib.Path(directory) / names[-1]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    deleted = []
    for name in _names(directory)[:-keep]:
        path = os.path.join(directory, name)
        os.remove(path)
        deleted.append(path)
    return deleted
