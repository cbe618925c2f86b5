"""Bug: rglob searches the subfolders too, so sub/step_99.pt is taken for the directory's latest checkpoint and
rotation deletes the directory's own checkpoints to keep it."""
import pathlib
import re

EXPECT_FAIL = {"latest_on_generated_directories": "a folder holding"}


def _ordered(directory):
    root = pathlib.Path(directory)
    if not root.is_dir():
        return []
    pairs = []
    for path in root.rglob("step_*.pt"):
        match = re.fullmatch(r"step_([0-9]+)\.pt", path.name)
        if match and path.is_file():
            pairs.append((int(match.group(1)), path.name, path))
    pairs.sort()
    return [path for *_, path in pairs]


def latest_checkpoint(directory):
    ordered = _ordered(directory)
    return ordered[-1] if ordered else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError(f"keep={keep}")
    removed = _ordered(directory)[:-keep]
    for path in removed:
        path.unlink()
    return removed
