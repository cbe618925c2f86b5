"""Bug: takes the part before the first dot (name.split('.')[0]) and only checks that the name ends in .pt, so step_25.pt.pt counts as step 25."""
import os
import pathlib

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'the name must be exactly step_<N>.pt',
    'rotate_leaves_other_files_alone': 'the name must be exactly step_<N>.pt',
}


def _step(name):
    if not name.endswith(".pt"):
        return None
    base = name.split(".")[0]
    if not base.startswith("step_"):
        return None
    digits = base[5:]
    if digits and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def _checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        n = _step(name)
        if n is not None and os.path.isfile(os.path.join(directory, name)):
            found.append((n, name))
    return [pathlib.Path(directory) / name for _, name in sorted(found)]


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
