"""Bug: latest_checkpoint returns the slice ckpts[-1:], a list with the newest path (or [] when there is none), instead of the path itself or None."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_by_number': 'latest_checkpoint returned the wrong thing',
    'latest_ignores_other_entries': 'latest_checkpoint returned the wrong thing',
    'latest_missing_or_empty_directory': 'latest_checkpoint must return None when there is',
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
    return [d / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    return _checkpoints(directory)[-1:]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
