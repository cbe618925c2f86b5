"""Bug: returns Path(directory).resolve() / name, an absolute path, instead of Path(directory) / name (a relative directory gives relative paths).

Written by an independent red team."""
EXPECT_FAIL = {'latest_by_number': 'the name is right but the path', 'rotate_keeps_the_newest': 'the name is right but the path'}

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
    return [(Path(directory) / name).resolve() for _, name in found]


def latest_checkpoint(directory):
    cps = _checkpoints(directory)
    return cps[-1] if cps else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    cps = _checkpoints(directory)
    old = cps[:-keep]
    for p in old:
        p.unlink()
    return old
