"""Bug: stores the checkpoints in a dict keyed by step number, so step_007.pt, step_07.pt and step_7.pt overwrite each other and only one of them is ever seen."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_keeps_the_newest': 'step_007.pt and step_07.pt have the same step'}


def _by_step(directory):
    d = Path(directory)
    if not d.is_dir():
        return {}
    by_step = {}
    for p in sorted(d.iterdir()):
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            by_step[int(m.group(1))] = d / p.name
    return by_step


def latest_checkpoint(directory):
    by_step = _by_step(directory)
    if not by_step:
        return None
    return by_step[max(by_step)]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    by_step = _by_step(directory)
    steps = sorted(by_step)
    deleted = []
    for step in steps[:-keep]:
        by_step[step].unlink()
        deleted.append(by_step[step])
    return deleted
