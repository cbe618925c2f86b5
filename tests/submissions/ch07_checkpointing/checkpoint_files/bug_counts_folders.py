"""Bug: never checks that an entry is a regular file, so a folder named step_99.pt is taken for a checkpoint."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'a folder, not a regular file',
    'latest_missing_or_empty_directory': 'latest_checkpoint must return None when there is',
    'rotate_leaves_other_files_alone': 'raised IsADirectoryError',
}


def _checkpoints(directory):
    directory = Path(directory)
    if not directory.exists():
        return []
    pairs = []
    for p in directory.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m:
            pairs.append((int(m.group(1)), p.name))
    pairs.sort()
    return [directory / name for _, name in pairs]


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
