"""Bug: trusts glob('step_*.pt') and pulls the first run of digits out of the name with re.search, so step_18a.pt, step_2_2.pt, step_-19.pt and step_25.pt.pt pass as checkpoints."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'N must be digits only',
    'rotate_leaves_other_files_alone': 'N must be digits only',
}


def _step(path):
    m = re.search(r"[0-9]+", path.name)
    return int(m.group()) if m else None


def _checkpoints(directory):
    folder = Path(directory)
    ckpts = [p for p in folder.glob("step_*.pt") if p.is_file() and _step(p) is not None]
    ckpts.sort(key=lambda p: (_step(p), p.name))
    return [folder / p.name for p in ckpts]


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
