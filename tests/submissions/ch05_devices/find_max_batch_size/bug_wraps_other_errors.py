"""Bug: catches Exception and re-raises anything that is not an OOM wrapped in a new RuntimeError."""
import torch

EXPECT_FAIL = {'propagates_other_errors': 'the very same exception'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")

    def fits(b):
        try:
            try_batch(b)
        except Exception as e:
            if not isinstance(e, torch.OutOfMemoryError):
                raise RuntimeError(f"training step failed at batch size {b}") from e
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
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
