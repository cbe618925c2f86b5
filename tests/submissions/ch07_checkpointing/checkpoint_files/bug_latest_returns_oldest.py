"""Bug: latest_checkpoint takes element [0] of the ascending sort, i.e. the oldest checkpoint, not the newest."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_by_number': 'the smallest step was returned',
    'latest_ignores_other_entries': 'the smallest step was returned',
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
    ckpts = _checkpoints(directory)
    if not ckpts:
        return None
    return ckpts[0]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
