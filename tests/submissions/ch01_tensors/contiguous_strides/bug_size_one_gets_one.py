"""Bug: believes a size-1 dim has stride 1."""
EXPECT_FAIL = {"scalar_and_size_one_dims": "size-1 dim"}


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, 1 if size == 1 else step)
        step *= max(size, 1)
    return tuple(strides)
