"""Bug: raises the RuntimeError for a start that does not fit inside the except block, chaining the OOM as __context__."""
import torch

EXPECT_FAIL = {'rejects_bad_arguments': '__context__'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    lo, hi = None, None
    b = start
    while True:
        failed = False
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            if lo is None:
                raise RuntimeError(f"batch size {start} does not fit")
            failed = True
        if failed:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
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
