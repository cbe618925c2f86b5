"""Bug: copies only tuples, then deletes the size-1 dims from the caller's lists in place."""
EXPECT_FAIL = {"contiguous_layouts": "changed a list it was given"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    shape = shape if isinstance(shape, list) else list(shape)
    strides = strides if isinstance(strides, list) else list(strides)
    if 0 in shape:
        return True
    for i in reversed(range(len(shape))):
        if shape[i] == 1:
            del shape[i], strides[i]
    shape.reverse()
    strides.reverse()
    expected = 1
    for size, stride in zip(shape, strides):
        if stride != expected:
            return False
        expected *= size
    return True
