"""Bug: seeds the list with the last stride 1, so a 0-d shape () gets (1,) instead of ()."""
EXPECT_FAIL = {"scalar_and_size_one_dims": "one stride per dim"}


def contiguous_strides(shape):
    shape = list(shape)
    strides = [1]
    for size in reversed(shape[1:]):
        strides.insert(0, strides[0] * max(size, 1))
    return tuple(strides)
