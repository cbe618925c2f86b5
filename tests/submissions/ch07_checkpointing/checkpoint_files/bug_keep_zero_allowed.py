"""Bug: only rejects negative keep (keep < 0), so keep=0 is accepted instead of raising ValueError."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_missing_directory_and_bad_keep': 'keep < 1 is not checked before'}


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
    if keep < 0:
        raise ValueError("keep must not be negative")
    ckpts = _checkpoints(directory)
    old = ckpts[:max(len(ckpts) - keep, 0)]
    for p in old:
        p.unlink()
    return old
