"""Bug: rotate_checkpoints starts with mkdir(parents=True, exist_ok=True), so a missing directory gets created."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_missing_directory_and_bad_keep': 'created the directory'}


def _checkpoints(d):
    found = []
    for p in d.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [d / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    d = Path(directory)
    if not d.is_dir():
        return None
    ckpts = _checkpoints(d)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    old = _checkpoints(d)[:-keep]
    for p in old:
        p.unlink()
    return old
