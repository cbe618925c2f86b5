"""Bug: rotate_checkpoints deletes the right files but returns sorted(deleted), which orders the paths as text (step_10 before step_2), not oldest first."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_keeps_the_newest': 'the paths must be in order, oldest'}


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
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    deleted = []
    for p in _checkpoints(directory)[:-keep]:
        p.unlink()
        deleted.append(p)
    return sorted(deleted)
