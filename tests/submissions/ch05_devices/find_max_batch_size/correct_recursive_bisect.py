"""Correct, written differently: a helper returning the error status, recursion for the bisection, bit shifts for doubling."""
import torch

EXPECT_PASS = True


def _ok(try_batch, b):
    try:
        try_batch(b)
    except torch.OutOfMemoryError:
        failed = True
    else:
        failed = False
    if failed and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return not failed


def _bisect(try_batch, lo, hi):
    if hi - lo == 1:
        return lo
    mid = lo + (hi - lo) // 2
    if _ok(try_batch, mid):
        return _bisect(try_batch, mid, hi)
    return _bisect(try_batch, lo, mid)


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("expected 1 <= start <= limit")
    if not _ok(try_batch, start):
        raise RuntimeError("batch size start does not fit")
    lo = start
    while lo != limit:
        nxt = min(lo << 1, limit)
        if not _ok(try_batch, nxt):
            return _bisect(try_batch, lo, nxt)
        lo = nxt
    return lo
