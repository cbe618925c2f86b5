"""Bug: a helper returns the OOM (or None), and the caller holds it while calling empty_cache and the next step."""
import torch

EXPECT_FAIL = {'releases_the_error': 'still alive'}


def _attempt(try_batch, b):
    try:
        try_batch(b)
    except torch.OutOfMemoryError as e:
        return e
    return None


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    lo = hi = None
    b = start
    while True:
        err = _attempt(try_batch, b)
        if err is not None:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if lo is None:
                raise RuntimeError(f"batch size {start} does not fit")
            hi = b
        else:
            lo = b
            if b == limit:
                return b
        if hi is None:
            b = min(2 * b, limit)
        elif hi - lo > 1:
            b = (lo + hi) // 2
        else:
            return lo
