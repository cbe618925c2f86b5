"""Bug: returns [] for a missing or empty directory before checking keep, so keep=0 there raises nothing.

Written by an independent red team."""
EXPECT_FAIL = {'rotate_missing_directory_and_bad_keep': 'keep < 1 is an error whatever the directory holds'}

import re
from pathlib import Path

_PAT = re.compile(r"step_([0-9]+)\.pt")


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = _PAT.fullmatch(p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    found.sort()
    return [Path(directory) / name for _, name in found]


def latest_checkpoint(directory):
    cps = _checkpoints(directory)
    return cps[-1] if cps else None


def rotate_checkpoints(directory, keep):
    cps = _checkpoints(directory)
    if not cps:
        return []
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = cps[:-keep]
    for p in old:
        p.unlink()
    return old
