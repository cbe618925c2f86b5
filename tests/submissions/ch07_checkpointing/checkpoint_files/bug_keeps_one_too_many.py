"""Bug: off by one in rotate_checkpoints: slices ckpts[:-(keep + 1)], so keep + 1 checkpoints survive."""
import os
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'one checkpoint too many was kept',
    'rotate_leaves_other_files_alone': 'rotate_checkpoints did not delete every old checkpoint',
    'rotate_missing_directory_and_bad_keep': 'one checkpoint too many was kept',
}


def _checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    found = sorted(
        (int(m.group(1)), name)
        for name in os.listdir(directory)
        if (m := re.fullmatch(r"step_([0-9]+)\.pt", name)) and os.path.isfile(os.path.join(directory, name))
    )
    return [Path(directory) / name for _, name in found]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-(keep + 1)]
    for p in old:
        p.unlink()
    return old
