"""Correct, written differently: a while loop over negative indices, a tuple grown by concatenation."""
EXPECT_PASS = True


def contiguous_strides(shape):
    result = ()
    running = 1
    i = -1
    while i >= -len(shape):
        result = (running,) + result
        running *= shape[i] if shape[i] else 1
        i -= 1
    return result
