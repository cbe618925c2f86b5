"""Correct, written differently: `except OutOfMemoryError: pass` with an `else:` clause that records the fit, and a list of the sizes that fit."""
import torch

EXPECT_PASS = True


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if not (1 <= start <= limit):
        raise ValueError("bad start/limit")
    good = []
    bad = None
    size = start
    while size is not None:
        try:
            try_batch(size)
        except torch.OutOfMemoryError:
            pass
        else:
            good.append(size)
        if not good or good[-1] != size:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if not good:
                raise RuntimeError("start does not fit")
            bad = size
        if bad is None:
            size = None if size == limit else min(size * 2, limit)
        else:
            size = (good[-1] + bad) // 2 if bad - good[-1] > 1 else None
    return good[-1]
