"""Bug: calls torch.cuda.empty_cache() inside the except block, while the exception and its frames are still alive."""
import torch

EXPECT_FAIL = {'releases_the_error': 'inside the except block'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")

    def fits(b):
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            ok = False
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        else:
            ok = True
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
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
