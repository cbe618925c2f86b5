"""Bug: `raise RuntimeError(...) from None` inside the except block: the traceback hides the OOM, but __context__ still holds it."""
import torch

EXPECT_FAIL = {'rejects_bad_arguments': '__context__'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")

    def fits(b, first=False):
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            if first:
                raise RuntimeError(f"batch size {b} does not fit") from None
            ok = False
        else:
            ok = True
        if not ok and torch.cuda.is_available():
            torch.cuda.empty_cache()
        return ok

    fits(start, first=True)
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
