"""Bug: skips size-1 dims (mixing up the contiguity rule), so they get no stride at all."""
EXPECT_FAIL = {"scalar_and_size_one_dims": "a size-1 dim was left out"}


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        if size == 1:
            continue
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)
