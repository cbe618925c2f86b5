"""Bug: normalises the directory with os.path.normpath before joining, so for a directory like 'a/../b' the returned
paths are not pathlib.Path(directory) / name."""
import os
import pathlib
import re

EXPECT_FAIL = {"latest_on_generated_directories": "sub/../"}

NAME = re.compile(r"step_([0-9]+)\.pt")


def _found(directory):
    folder = pathlib.Path(os.path.normpath(directory))
    if not folder.is_dir():
        return []
    hits = [(int(m.group(1)), p.name, p) for p in folder.iterdir() if (m := NAME.fullmatch(p.name)) and p.is_file()]
    return [p for _, _, p in sorted(hits)]


def latest_checkpoint(directory):
    found = _found(directory)
    return found[-1] if found else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    doomed = _found(directory)[:-keep]
    for path in doomed:
        path.unlink()
    return doomed
