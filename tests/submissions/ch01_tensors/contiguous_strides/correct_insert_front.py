"""Correct, written differently: indexes from the end and inserts at the front."""
EXPECT_PASS = True


def contiguous_strides(shape):
    shape = list(shape)
    strides = []
    running = 1
    for i in range(len(shape) - 1, -1, -1):
        strides.insert(0, running)
        running = running * shape[i] if shape[i] != 0 else running
    return tuple(strides)
