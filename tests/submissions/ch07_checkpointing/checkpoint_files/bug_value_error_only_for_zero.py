"""Bug: raises ValueError only when keep == 0; a negative keep slips through and deletes checkpoints."""
import os
import pathlib

EXPECT_FAIL = {'rotate_missing_directory_and_bad_keep': 'keep < 1 is not checked before'}


def _is_ckpt(name):
    if not name.startswith("step_") or not name.endswith(".pt"):
        return False
    n = name[5:-3]
    return len(n) > 0 and all("0" <= c <= "9" for c in n)


def _sorted_ckpts(directory):
    if not os.path.isdir(directory):
        return []
    names = [n for n in os.listdir(directory) if _is_ckpt(n) and os.path.isfile(os.path.join(directory, n))]
    names.sort(key=lambda n: (int(n[5:-3]), n))
    return [pathlib.Path(directory) / n for n in names]


def latest_checkpoint(directory):
    ckpts = _sorted_ckpts(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep == 0:
        raise ValueError("keep must not be 0")
    old = _sorted_ckpts(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
