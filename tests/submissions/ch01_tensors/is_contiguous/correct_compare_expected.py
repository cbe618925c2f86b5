"""Correct, written differently: compares against the C-order strides, ignoring size-1 dims."""
EXPECT_PASS = True


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    if any(size == 0 for size in shape):
        return True
    want, running = [], 1
    for size in reversed(shape):
        want.append(running)
        running *= size
    want.reverse()
    return all(size == 1 or got == w for size, got, w in zip(shape, strides, want))
