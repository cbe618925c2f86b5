"""Bug: after doubling, walks up one size at a time from lo instead of bisecting."""
import torch

EXPECT_FAIL = {
    'probes_in_order': '500 calls',
    'call_budget': 'far more than any search needs',
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
    for b in range(lo + 1, hi):
        if not fits(b):
            return b - 1
    return hi - 1
