"""Correct, written differently: a flag set inside `except` and handled after it, doubling and bisection in one loop."""
import torch

EXPECT_PASS = True


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError(f"need 1 <= start <= limit, got start={start}, limit={limit}")
    lo, hi = None, None
    b = start
    while True:
        oom = False
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            oom = True
        if oom:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if lo is None:
                raise RuntimeError(f"batch size {start} does not fit")
            hi = b
        else:
            lo = b
            if b == limit:
                return limit
        if hi is None:
            b = min(2 * b, limit)
        elif hi - lo > 1:
            b = (lo + hi) // 2
        else:
            return lo
