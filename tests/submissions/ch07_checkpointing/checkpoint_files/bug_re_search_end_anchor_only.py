"""Bug: uses re.search with only a $ anchor, so xstep_15.pt (anything ending in step_<N>.pt) counts as a checkpoint."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'the name must start with step_',
    'rotate_leaves_other_files_alone': 'the name must start with step_',
}


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = re.search(r"step_([0-9]+)\.pt$", p.name)
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
