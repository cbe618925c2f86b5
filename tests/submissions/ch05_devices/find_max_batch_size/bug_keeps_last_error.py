"""Bug: copies the OOM into a local (`error = e`) to test it after the except block, keeping the exception and its frames alive."""
import torch

EXPECT_FAIL = {'releases_the_error': 'storing the exception'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")

    def fits(b):
        error = None
        try:
            try_batch(b)
        except torch.OutOfMemoryError as e:
            error = e
        if error is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
        return error is None

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
