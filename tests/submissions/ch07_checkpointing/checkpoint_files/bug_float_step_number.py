"""Bug: converts N with float() instead of int(), so huge step numbers past 2**53 compare equal and the name decides."""
import re
from pathlib import Path

EXPECT_FAIL = {'latest_by_number': 'compare N as an int'}


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            found.append((float(m.group(1)), p.name))
    found.sort()
    return [d / name for _, name in found]


def latest_checkpoint(directory):
    found = _checkpoints(directory)
    return found[-1] if found else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
