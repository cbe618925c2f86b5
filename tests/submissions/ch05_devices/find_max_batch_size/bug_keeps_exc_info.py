"""Bug: saves sys.exc_info() in the except block and tests it afterwards, keeping the traceback (and the failing frame) alive."""
import sys

import torch

EXPECT_FAIL = {'releases_the_error': 'still held their tensors'}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    lo = hi = None
    b = start
    while True:
        info = (None, None, None)
        try:
            try_batch(b)
        except torch.OutOfMemoryError:
            info = sys.exc_info()
        if info[0] is not None:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if lo is None:
                raise RuntimeError("batch size start does not fit")
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
