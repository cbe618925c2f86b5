"""Correct: parses names with re.fullmatch("step_([0-9]+)[.]pt"), uses heapq.nlargest for rotate's survivors and a sorted list of (N, name) tuples for what is deleted."""
import heapq
import os
import pathlib
import re

EXPECT_PASS = True


def _parse(directory):
    d = pathlib.Path(directory)
    if not d.is_dir():
        return d, []
    items = []
    for name in os.listdir(d):
        m = re.fullmatch("step_([0-9]+)[.]pt", name)
        if m is not None and (d / name).is_file():
            items.append((int(m[1]), name))
    return d, items


def latest_checkpoint(directory):
    d, items = _parse(directory)
    if not items:
        return None
    _, name = max(items)
    return d / name


def rotate_checkpoints(directory, keep):
    if not isinstance(keep, int) or keep < 1:
        raise ValueError("keep must be an integer >= 1")
    d, items = _parse(directory)
    survivors = set(heapq.nlargest(keep, items))
    deleted = []
    for item in sorted(items):
        if item in survivors:
            continue
        path = d / item[1]
        path.unlink()
        deleted.append(path)
    return deleted
