"""Bug: orders checkpoints by N alone (max and a reversed sort keep the listing order among equal steps), forgetting that equal steps are ordered by name."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_by_number': "'step_007.pt' and 'step_7.pt' are both step 7",
    'rotate_keeps_the_newest': 'step_007.pt and step_7.pt have the same step',
}


def _step(path):
    return int(path.name[5:-3])


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    # sorted by name first so the result does not depend on the file system's order
    return sorted(p for p in d.iterdir() if re.fullmatch(r"step_[0-9]+\.pt", p.name) and p.is_file())


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    if not ckpts:
        return None
    return Path(directory) / max(ckpts, key=_step).name


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    newest_first = sorted(_checkpoints(directory), key=_step, reverse=True)
    old = [Path(directory) / p.name for p in newest_first[keep:]]
    for p in old:
        p.unlink()
    old.reverse()
    return old
