"""Bug: names the third parameter `stride` instead of `step`, so a call with step=... by name fails."""
EXPECT_FAIL = {"contiguous_input": "the parameters must have the names the specification gives them"}


def sliding_window(x, size, stride=1):
    if x.dim() != 1 or size < 1 or stride < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // stride + 1
    return x.as_strided((rows, size), (stride * x.stride(0), x.stride(0)), x.storage_offset())
