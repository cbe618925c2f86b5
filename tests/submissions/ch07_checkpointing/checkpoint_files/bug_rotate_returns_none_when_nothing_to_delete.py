"""Bug: rotate_checkpoints returns early with a bare return (None) when there are no more than keep checkpoints, instead of []."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'rotate_checkpoints must return the deleted paths as',
    'rotate_missing_directory_and_bad_keep': 'rotate_checkpoints must return',
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
    if keep < 1:
        raise ValueError("keep must be >= 1")
    ckpts = _checkpoints(directory)
    if len(ckpts) <= keep:
        return
    old = ckpts[:-keep]
    for p in old:
        p.unlink()
    return old
