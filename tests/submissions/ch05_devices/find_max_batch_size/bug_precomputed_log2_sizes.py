"""BUG: precomputes the doubling sizes with float math.log2; for huge limits log2 rounds up and a size above limit is probed."""
EXPECT_FAIL = {"probes_in_order": "the spec tries"}
import math

import torch


def _fits(try_batch, b):
    try:
        try_batch(b)
    except torch.OutOfMemoryError:
        oom = True
    else:
        return True
    if oom and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return False


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1:
        raise ValueError("start must be >= 1")
    if limit < start:
        raise ValueError("limit must be >= start")
    steps = int(math.log2(limit / start))
    sizes = [start * 2 ** k for k in range(steps + 1)]
    if sizes[-1] != limit:
        sizes.append(limit)
    lo = None
    hi = None
    for size in sizes:
        if _fits(try_batch, size):
            lo = size
        else:
            hi = size
            break
    if lo is None:
        raise RuntimeError("start does not fit")
    if hi is None:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(try_batch, mid):
            lo = mid
        else:
            hi = mid
    return lo
