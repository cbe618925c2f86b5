"""Bug: calls os.listdir without checking that the directory exists, so a missing directory raises FileNotFoundError instead of giving None / []."""
import os
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_missing_or_empty_directory': 'raised FileNotFoundError',
    'rotate_missing_directory_and_bad_keep': 'raised FileNotFoundError',
}


def _checkpoints(directory):
    found = []
    for name in os.listdir(directory):
        m = re.fullmatch(r"step_([0-9]+)\.pt", name)
        if m and os.path.isfile(os.path.join(directory, name)):
            found.append((int(m.group(1)), name))
    found.sort()
    return [Path(directory) / name for _, name in found]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
