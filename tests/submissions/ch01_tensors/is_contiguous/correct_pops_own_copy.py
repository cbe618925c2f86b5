"""Correct, written differently: pops dims off the end of its own copies, with a while loop."""
EXPECT_PASS = True


def is_contiguous(shape, strides):
    sizes, steps = list(shape), list(strides)
    if len(sizes) != len(steps):
        raise ValueError("one stride per dim, please")
    if 0 in sizes:
        return True
    want = 1
    while sizes:
        size, step = sizes.pop(), steps.pop()
        if size == 1:
            continue
        if step != want:
            return False
        want = want * size
    return True
