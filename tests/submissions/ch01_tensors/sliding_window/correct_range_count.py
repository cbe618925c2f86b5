"""Correct, written differently: counts the windows with range(), raises a ValueError subclass, and passes
lists of numpy ints to torch.as_strided."""
import numpy as np
import torch

EXPECT_PASS = True


class WindowError(ValueError):
    pass


def sliding_window(x: torch.Tensor, size: int, step: int = 1) -> torch.Tensor:
    if x.ndim != 1:
        raise WindowError(f"expected a 1-D tensor, got {x.ndim}-D")
    if min(size, step) < 1 or size > x.shape[0]:
        raise WindowError("need size >= 1, step >= 1 and size <= len(x)")
    n = len(range(0, x.shape[0] - size + 1, step))
    (s,) = x.stride()
    return torch.as_strided(x, [np.int64(n), size], [np.int64(step * s), s], x.storage_offset())
