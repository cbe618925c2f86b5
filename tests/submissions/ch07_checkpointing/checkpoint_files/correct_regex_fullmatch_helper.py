"""Correct: one helper lists the regular files whose whole name matches step_([0-9]+)\\.pt, sorted by (int(N), name); both functions use it."""
import pathlib
import re

EXPECT_PASS = True

CHECKPOINT = re.compile(r"step_([0-9]+)\.pt")


def _checkpoints(directory):
    """Checkpoints in directory, oldest first."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = CHECKPOINT.fullmatch(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry.name))
    found.sort()
    return [directory / name for _, name in found]


def latest_checkpoint(directory):
    checkpoints = _checkpoints(directory)
    return checkpoints[-1] if checkpoints else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    old = _checkpoints(directory)[:-keep]
    for path in old:
        path.unlink()
    return old
