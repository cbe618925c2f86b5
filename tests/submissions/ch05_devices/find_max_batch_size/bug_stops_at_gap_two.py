"""Bug: stops bisecting when hi - lo == 2, one size short."""
import torch

EXPECT_FAIL = {'finds_the_largest': 'never called with'}


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
    while hi - lo > 2:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
