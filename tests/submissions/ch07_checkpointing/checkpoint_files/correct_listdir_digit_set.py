"""Correct: os.listdir and os.path.isfile, N checked character by character against "0123456789"; no shared helper, latest uses max with a key and rotate a sorted list."""
import os
import pathlib

EXPECT_PASS = True

DIGITS = set("0123456789")


def latest_checkpoint(directory):
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    good = []
    for name in names:
        if name[:5] != "step_" or name[-3:] != ".pt" or len(name) < 9:
            continue
        middle = name[5:-3]
        if all(ch in DIGITS for ch in middle) and os.path.isfile(os.path.join(directory, name)):
            good.append(name)
    if not good:
        return None
    newest = max(good, key=lambda name: (int(name[5:-3]), name))
    return pathlib.Path(directory) / newest


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("need to keep at least one checkpoint")
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    good = []
    for name in names:
        if name[:5] != "step_" or name[-3:] != ".pt" or len(name) < 9:
            continue
        middle = name[5:-3]
        if all(ch in DIGITS for ch in middle) and os.path.isfile(os.path.join(directory, name)):
            good.append(name)
    good.sort(key=lambda name: (int(name[5:-3]), name))
    doomed = good[:len(good) - keep] if len(good) > keep else []
    result = []
    for name in doomed:
        path = pathlib.Path(directory) / name
        path.unlink()
        result.append(path)
    return result
