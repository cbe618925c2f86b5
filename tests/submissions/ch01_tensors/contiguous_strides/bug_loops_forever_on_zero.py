"""Bug: a while loop whose index only moves on non-zero sizes, so a size-0 dim spins forever."""
EXPECT_FAIL = {"size_zero_dims": "did not finish"}


def contiguous_strides(shape):
    shape = list(shape)
    strides = [0] * len(shape)
    i, step = len(shape) - 1, 1
    while i >= 0:
        if shape[i] == 0:
            continue
        strides[i] = step
        step *= shape[i]
        i -= 1
    return tuple(strides)
