"""Bug: rotate_checkpoints walks the checkpoints newest first and returns the deleted paths in that order, newest first instead of oldest first."""
import os
import pathlib
import re

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'the paths must come oldest first',
    'rotate_leaves_other_files_alone': 'the paths must come oldest first',
}

PAT = re.compile(r"step_([0-9]+)\.pt")


def _newest_first(directory):
    if not os.path.isdir(directory):
        return []
    items = []
    for name in os.listdir(directory):
        m = PAT.fullmatch(name)
        if m and os.path.isfile(os.path.join(directory, name)):
            items.append((int(m.group(1)), name))
    items.sort(reverse=True)
    return [pathlib.Path(directory) / name for _, name in items]


def latest_checkpoint(directory):
    ckpts = _newest_first(directory)
    return ckpts[0] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    extra = _newest_first(directory)[keep:]
    for p in extra:
        p.unlink()
    return extra
