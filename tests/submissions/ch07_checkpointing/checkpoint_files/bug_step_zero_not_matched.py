"""Bug: the pattern step_0*([1-9][0-9]*)\\.pt skips leading zeros but cannot match step_0.pt, so step 0 is never found."""
import re
from pathlib import Path

EXPECT_FAIL = {'latest_missing_or_empty_directory': 'latest_checkpoint returned the wrong thing'}

PATTERN = re.compile(r"step_0*([1-9][0-9]*)\.pt")


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = PATTERN.fullmatch(p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [d / name for _, name in sorted(found)]


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
