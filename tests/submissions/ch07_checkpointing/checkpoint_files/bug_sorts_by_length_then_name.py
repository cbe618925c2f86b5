"""Bug: "natural" sort by (len(name), name), which works for step_9 vs step_10 but treats step_007.pt as newer than step_7.pt and step_8.pt."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_by_number': "'step_007.pt' and 'step_7.pt' are both step 7",
    'rotate_keeps_the_newest': 'the oldest checkpoints were kept instead of',
}


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    names = [p.name for p in d.iterdir() if re.fullmatch(r"step_[0-9]+\.pt", p.name) and p.is_file()]
    names.sort(key=lambda n: (len(n), n))
    return [d / n for n in names]


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
