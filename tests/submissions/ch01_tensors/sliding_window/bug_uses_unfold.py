"""Bug: calls unfold, which the exercise asks to rebuild by hand."""
EXPECT_FAIL = {"does_not_call_unfold": "called Tensor.unfold"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    return x.unfold(0, size, step)
