"""Bug: checks only that the name starts with step_ and ends with .pt, then trusts int() on the middle, which also accepts '+20', '-19', ' 21', '2_2' and non-ASCII digits."""
import os
import pathlib

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'N must be ASCII digits',
    'rotate_leaves_other_files_alone': 'N must be digits only',
}


def _checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        if not (name.startswith("step_") and name.endswith(".pt")):
            continue
        if not os.path.isfile(os.path.join(directory, name)):
            continue
        try:
            step = int(name[5:-3])
        except ValueError:
            continue
        found.append((step, name))
    found.sort()
    return [pathlib.Path(directory) / name for _, name in found]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    if ckpts:
        return ckpts[-1]
    return None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be at least 1")
    ckpts = _checkpoints(directory)
    deleted = ckpts[:-keep]
    for path in deleted:
        os.remove(path)
    return deleted
