"""Bug: a missing directory is created (mkdir(parents=True, exist_ok=True)) so that listing it never fails; looking must not change the disk."""
import pathlib
import re

EXPECT_FAIL = {
    'latest_missing_or_empty_directory': 'changed the directory',
    'rotate_missing_directory_and_bad_keep': 'created the directory',
}

CHECKPOINT = re.compile(r"step_([0-9]+)\.pt")


def _checkpoints(directory):
    """Checkpoints in directory, oldest first."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)  # so that iterdir() never fails
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
