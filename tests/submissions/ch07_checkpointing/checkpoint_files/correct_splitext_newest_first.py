"""Correct: splits off the extension with os.path.splitext, sorts newest first and deletes everything after the first keep, then reverses the deleted list so it comes oldest first."""
import os
from pathlib import Path

EXPECT_PASS = True


def _is_checkpoint(entry):
    stem, ext = os.path.splitext(entry.name)
    if ext != ".pt" or not stem.startswith("step_"):
        return False
    number = stem[5:]
    return number != "" and number.isascii() and number.isdigit() and entry.is_file()


def _newest_first(directory):
    directory = Path(directory)
    if not directory.exists():
        return []
    ckpts = [p for p in directory.iterdir() if _is_checkpoint(p)]
    ckpts.sort(key=lambda p: (int(p.name[5:-3]), p.name), reverse=True)
    return [directory / p.name for p in ckpts]


def latest_checkpoint(directory):
    ckpts = _newest_first(directory)
    return ckpts[0] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be at least 1")
    extra = _newest_first(directory)[keep:]
    for p in extra:
        p.unlink()
    extra.reverse()
    return extra
