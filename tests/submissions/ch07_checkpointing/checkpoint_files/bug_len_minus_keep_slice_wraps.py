"""Bug: rotate_checkpoints deletes ckpts[:len(ckpts) - keep]. When keep > len(ckpts) the end is negative and
counts from the end: with 3 checkpoints and keep=4 it deletes the oldest 2 (only keep >= 2 * len deletes none)."""
import re
from pathlib import Path

EXPECT_FAIL = {'rotate_on_generated_directories': 'the slice [:len(checkpoints) - keep] wraps around'}

PATTERN = re.compile(r"step_([0-9]+)\.pt")


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
        raise ValueError("keep must be at least 1")
    ckpts = _checkpoints(directory)
    doomed = ckpts[:len(ckpts) - keep]
    for p in doomed:
        p.unlink()
    return doomed
