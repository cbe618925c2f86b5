"""Bug: counts bytes of a float32 element (4) instead of elements."""
EXPECT_FAIL = {"ordinary_shapes": "every stride is 4 times too large: strides count elements, not bytes"}

def contiguous_strides(shape):
    out, step = [], 4   # float32 = 4 bytes
    for s in reversed(shape):
        out.insert(0, step)
        step *= max(s, 1)
    return tuple(out)
