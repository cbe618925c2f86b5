"""Bug: uses re.match, which only anchors the start, so step_12.pt.tmp, step_14.pt.bak and step_25.pt.pt count as checkpoints."""
import os
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'the name must be exactly step_<N>.pt',
    'latest_missing_or_empty_directory': 'latest_checkpoint must return None when there is',
    'rotate_leaves_other_files_alone': 'a temporary file',
}


def _checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    result = []
    for name in os.listdir(directory):
        m = re.match(r"step_([0-9]+)\.pt", name)
        if m and os.path.isfile(os.path.join(directory, name)):
            result.append((int(m.group(1)), name))
    result.sort()
    return [Path(directory) / name for _, name in result]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        os.remove(p)
    return old
