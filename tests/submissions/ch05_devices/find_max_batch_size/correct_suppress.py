"""Correct, written differently: contextlib.suppress around the step, a while loop with lo/hi where hi starts at None."""
import contextlib

import torch

EXPECT_PASS = True


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("start must be >= 1 and limit >= start")
    lo, hi = start - 1, None
    b = start
    while True:
        ran = False
        with contextlib.suppress(torch.OutOfMemoryError):
            try_batch(b)
            ran = True
        if ran:
            lo = b
        else:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if b == start:
                raise RuntimeError("start does not fit")
            hi = b
        if hi is None:
            if lo == limit:
                return lo
            b = min(lo * 2, limit)
        else:
            if hi - lo <= 1:
                return lo
            b = (lo + hi) // 2
