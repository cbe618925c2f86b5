"""Bug: step has no default, so sliding_window(x, size) fails (the signature is sliding_window(x, size, step=1))."""
EXPECT_FAIL = {"contiguous_input": "step has no default value"}

def sliding_window(x, size, step):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
