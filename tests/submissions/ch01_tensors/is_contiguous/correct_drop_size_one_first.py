"""Correct, written differently: drops the size-1 dims first, then checks the rest recursively."""
import math

EXPECT_PASS = True


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError(f"{len(shape)} sizes but {len(strides)} strides")
    if math.prod(shape) == 0:
        return True
    kept = [(size, stride) for size, stride in zip(shape, strides) if size != 1]

    def ok(pairs):
        if not pairs:
            return True
        size, stride = pairs[0]
        return stride == math.prod(s for s, _ in pairs[1:]) and ok(pairs[1:])

    return ok(kept)
