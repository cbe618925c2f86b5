"""Bug: deletes the old checkpoints first and only then checks keep, so keep=0 or -1 deletes files before the ValueError."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_missing_directory_and_bad_keep': "raised but deleted ['step_1.pt', 'step_2.pt'] first",
}


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
    ckpts = _checkpoints(directory)
    deleted = []
    while len(ckpts) > max(keep, 0):
        oldest = ckpts.pop(0)
        oldest.unlink()
        deleted.append(oldest)
    if keep < 1:
        raise ValueError("keep must be >= 1")
    return deleted
