"""Correct, written differently: catches torch.cuda.OutOfMemoryError (the same class as torch.OutOfMemoryError), sizes from a generator that is sent each outcome."""
import torch

EXPECT_PASS = True


def _sizes(start, limit):
    lo = None
    b = start
    while True:
        fit = yield b
        if fit:
            lo = b
            if b == limit:
                return
            b = min(2 * b, limit)
        else:
            break
    hi = b
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (yield mid):
            lo = mid
        else:
            hi = mid


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    best = None
    gen = _sizes(start, limit)
    b = next(gen)
    while True:
        fit = True
        try:
            try_batch(b)
        except torch.cuda.OutOfMemoryError:
            fit = False
        if fit:
            best = b
        else:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if best is None:
                break
        try:
            b = gen.send(fit)
        except StopIteration:
            return best
    raise RuntimeError(f"batch size {start} does not fit")
