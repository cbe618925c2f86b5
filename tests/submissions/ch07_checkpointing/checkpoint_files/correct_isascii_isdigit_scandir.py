"""Correct: walks the folder with os.scandir, checks the name with startswith/endswith and isascii()+isdigit() on the middle, picks the latest with max()."""
import os
import pathlib

EXPECT_PASS = True


def _step_number(name):
    if not (name.startswith("step_") and name.endswith(".pt")):
        return None
    digits = name[len("step_"):-len(".pt")]
    if digits and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def latest_checkpoint(directory):
    if not os.path.isdir(directory):
        return None
    best = None
    with os.scandir(directory) as entries:
        for entry in entries:
            n = _step_number(entry.name)
            if n is None or not entry.is_file():
                continue
            if best is None or (n, entry.name) > best:
                best = (n, entry.name)
    if best is None:
        return None
    return pathlib.Path(directory) / best[1]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    if not os.path.isdir(directory):
        return []
    ckpts = []
    with os.scandir(directory) as entries:
        for entry in entries:
            n = _step_number(entry.name)
            if n is not None and entry.is_file():
                ckpts.append((n, entry.name))
    ckpts.sort()
    to_delete = ckpts[:max(len(ckpts) - keep, 0)]
    deleted = []
    for _, name in to_delete:
        path = pathlib.Path(directory) / name
        os.remove(path)
        deleted.append(path)
    return deleted
