"""Bug: rotate_checkpoints also "cleans up" leftover step_<N>.pt.tmp files from interrupted saves, but other files must never be touched."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_leaves_other_files_alone': 'a temporary file'}

CKPT = re.compile(r"step_([0-9]+)\.pt")
TMP = re.compile(r"step_([0-9]+)\.pt\.tmp")


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = CKPT.fullmatch(p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [d / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    d = Path(directory)
    if not d.is_dir():
        return []
    # half-written checkpoints from a crash are useless: remove them as well
    for p in d.iterdir():
        if TMP.fullmatch(p.name) and p.is_file():
            p.unlink()
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
