"""Bug: multiplies the storage offset by x's stride, as if it counted elements of x."""
EXPECT_FAIL = {"storage_offset": "multiplied by x.stride(0)"}

def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    s = x.stride(0)
    return x.as_strided((rows, size), (step * s, s), x.storage_offset() * s)
