"""Bug: restarts the running product at 1 after a size-0 dim instead of counting the 0 as a 1."""
EXPECT_FAIL = {"size_zero_dims": "starts again from 1 after a size-0 dim"}


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step = 1 if size == 0 else step * size
    return tuple(strides)
