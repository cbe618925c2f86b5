"""Bug: latest_checkpoint removes leftover *.tmp files from interrupted saves while it looks, but it must never change the directory."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'changed the directory',
    'latest_missing_or_empty_directory': 'changed the directory',
}


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
    for tmp in d.glob("*.tmp"):
        if tmp.is_file():
            tmp.unlink()  # a save that never finished
    ckpts = _checkpoints(d)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    d = Path(directory)
    if not d.is_dir():
        return []
    old = _checkpoints(d)[:-keep]
    for p in old:
        p.unlink()
    return old
