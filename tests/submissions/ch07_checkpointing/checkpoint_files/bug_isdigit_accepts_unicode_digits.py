"""Bug: checks N with str.isdigit() alone, which is also true for non-ASCII digits such as Arabic-Indic or full-width ones."""
import os
import pathlib

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'N must be ASCII digits',
    'rotate_leaves_other_files_alone': 'N must be ASCII digits',
}


def _number(name):
    if name.startswith("step_") and name.endswith(".pt"):
        middle = name[5:-3]
        if middle.isdigit():
            return int(middle)
    return None


def _list(directory):
    out = []
    if not os.path.isdir(directory):
        return out
    with os.scandir(directory) as it:
        for entry in it:
            n = _number(entry.name)
            if n is not None and entry.is_file():
                out.append((n, entry.name))
    out.sort()
    return out


def latest_checkpoint(directory):
    ckpts = _list(directory)
    if not ckpts:
        return None
    return pathlib.Path(directory) / ckpts[-1][1]


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep < 1")
    ckpts = _list(directory)
    removed = []
    for _, name in ckpts[:-keep]:
        path = pathlib.Path(directory) / name
        path.unlink()
        removed.append(path)
    return removed
