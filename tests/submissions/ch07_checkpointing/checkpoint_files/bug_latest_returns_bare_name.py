"""Bug: latest_checkpoint returns Path(name), just the file name, without the directory in front."""
from pathlib import Path
import re

EXPECT_FAIL = {
    'latest_by_number': 'the name is right but the path',
    'latest_ignores_other_entries': 'the name is right but the path',
    'latest_missing_or_empty_directory': 'the name is right but the path',
}


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [name for _, name in sorted(found)]


def latest_checkpoint(directory):
    names = _checkpoints(directory)
    if not names:
        return None
    return Path(names[-1])


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    deleted = []
    for name in _checkpoints(directory)[:-keep]:
        path = Path(directory) / name
        path.unlink()
        deleted.append(path)
    return deleted
