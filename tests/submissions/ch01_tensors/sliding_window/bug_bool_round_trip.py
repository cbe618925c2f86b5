"""Bug: believes as_strided cannot handle bool, so it goes through uint8 and back: a copy for bool inputs."""
import torch

EXPECT_FAIL = {"random_layouts_and_dtypes": "it is a copy, not a view of x"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    if x.dtype == torch.bool:
        return sliding_window(x.to(torch.uint8), size, step).to(torch.bool)
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
