"""Bug: takes len(x) through x.numpy(), which refuses a tensor that requires grad (and a bfloat16 one, which numpy
has no type for); every hand-written x is a plain float32 or int64 tensor, generated ones are not."""
EXPECT_FAIL = {"random_layouts_and_dtypes": "numpy"}


def sliding_window(x, size, step=1):
    if x.dim() != 1:
        raise ValueError("x must be 1-D")
    if size < 1 or step < 1:
        raise ValueError("size and step must be at least 1")
    n = len(x.numpy())
    if size > n:
        raise ValueError("size is larger than len(x)")
    rows = (n - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
