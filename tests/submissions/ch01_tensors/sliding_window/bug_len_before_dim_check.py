"""Bug: uses len(x) before checking that x is 1-D, so a 0-d x raises TypeError instead of ValueError."""
EXPECT_FAIL = {"validation": "check the number of dims first"}

def sliding_window(x, size, step=1):
    if size > len(x) or size < 1 or step < 1:
        raise ValueError("bad size/step")
    if x.dim() != 1:
        raise ValueError("x must be 1-D")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
