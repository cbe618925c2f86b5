"""Correct, written differently: a helper fits(b) returning a bool, empty_cache called by the helper after its try statement."""
import torch

EXPECT_PASS = True


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1:
        raise ValueError("start must be >= 1")
    if limit < start:
        raise ValueError("limit must be >= start")

    def fits(b):
        try:
            try_batch(b)
            return True
        except torch.OutOfMemoryError:
            pass
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return False

    if not fits(start):
        raise RuntimeError("even the smallest batch size does not fit")
    lo = start
    while lo < limit:
        b = min(lo * 2, limit)
        if not fits(b):
            hi = b
            break
        lo = b
    else:
        return limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
