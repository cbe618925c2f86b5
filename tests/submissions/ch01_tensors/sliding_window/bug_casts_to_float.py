"""Bug: converts x to float32 first ("as_strided needs floats"), which copies any other dtype."""
import torch

EXPECT_FAIL = {"contiguous_input": "a view keeps x's dtype", "random_layouts_and_dtypes": "a view keeps x's dtype"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    x = x.to(torch.float32)
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
