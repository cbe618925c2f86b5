"""Bug: multiplies the sizes as floats and rounds at the end; a product past 2**53 loses its last digits (every
hand-written shape's products stay below 2**53: only generated shapes with huge sizes show it)."""
EXPECT_FAIL = {"ordinary_shapes": "generated shapes failed; this is the smallest failing shape found"}


def contiguous_strides(shape):
    sizes = [max(n, 1) for n in shape]
    strides = []
    for i in range(len(sizes)):
        product = 1.0
        for n in sizes[i + 1:]:
            product *= n
        strides.append(int(product))
    return tuple(strides)
