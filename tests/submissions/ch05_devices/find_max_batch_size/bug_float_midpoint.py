"""Bug: bisects with mid = int((lo + hi) / 2), a float midpoint: exact for the sizes of a GPU, but past 2**53 the
float rounds (lo + hi) / 2 and the search probes other sizes than (lo + hi) // 2, or loops on one it has tried."""
import torch

EXPECT_FAIL = {'probes_in_order': 'a generated case'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")

    def fits(b):
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            ok = False
        else:
            ok = True
        if not ok and torch.cuda.is_available():
            torch.cuda.empty_cache()
        return ok

    if not fits(start):
        raise RuntimeError("batch size start does not fit")
    lo = start
    while lo < limit:
        b = min(2 * lo, limit)
        if not fits(b):
            hi = b
            break
        lo = b
    else:
        return limit
    while hi - lo > 1:
        mid = int((lo + hi) / 2)
        if mid <= lo or mid >= hi:
            break
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
