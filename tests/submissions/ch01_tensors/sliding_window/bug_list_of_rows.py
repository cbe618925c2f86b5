"""Bug: returns a Python list of row views instead of one tensor."""
EXPECT_FAIL = {"contiguous_input": "must return a tensor"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    return [x[i: i + size] for i in range(0, len(x) - size + 1, step)]
