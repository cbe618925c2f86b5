"""Bug: builds the windows with numpy's as_strided and torch.from_numpy: on the cpu the result aliases x's
memory through a storage of its own instead of being a view of x's storage (on a GPU, a copy)."""
EXPECT_FAIL = {"storage_offset": "points into x's memory, but through its own storage"}
EXPECT_FAIL_ON_CUDA = {"storage_offset": "the result has its own storage: it is a copy"}  # as an H100 run said

import numpy as np
import torch


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    a = x.cpu().numpy()
    rows = (len(x) - size) // step + 1
    v = np.lib.stride_tricks.as_strided(a, (rows, size), (a.strides[0] * step, a.strides[0]))
    return torch.from_numpy(v).to(x.device)
