"""Correct: globs step_*.pt, then keeps only regular files whose name fully matches step_(\\d+)\\.pt compiled with re.ASCII; sorts with a key function."""
import re
from pathlib import Path

EXPECT_PASS = True

PATTERN = re.compile(r"step_(\d+)\.pt", re.ASCII)


def _key(path):
    return int(PATTERN.fullmatch(path.name).group(1)), path.name


def _find(directory):
    folder = Path(directory)
    candidates = folder.glob("step_*.pt")
    return sorted((p for p in candidates if PATTERN.fullmatch(p.name) and p.is_file()), key=_key)


def latest_checkpoint(directory):
    found = _find(directory)
    if not found:
        return None
    return Path(directory) / found[-1].name


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be positive")
    found = _find(directory)
    n_delete = len(found) - keep
    if n_delete <= 0:
        return []
    removed = []
    for p in found[:n_delete]:
        p.unlink()
        removed.append(Path(directory) / p.name)
    return removed
