"""Bug: bisects the closed interval [lo, hi] textbook-style, so it tries lo or hi (already known) a second time."""
import torch

EXPECT_FAIL = {
    'call_budget': 'more than once',
    'probes_in_order': 'the spec tries',
}


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
    best = lo
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best = mid
            lo = mid + 1
        else:
            hi = mid - 1
    return best
