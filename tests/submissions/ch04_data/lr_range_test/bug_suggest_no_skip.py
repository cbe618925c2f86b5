"""Bug: ignores skip_start and skip_end (takes the gradient of the whole curve)."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'not applied'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    if len(losses) - skip_start - skip_end < 2:
        raise ValueError("fewer than 2 points after trimming")
    return float(lrs[int(np.argmin(np.gradient(np.array(losses))))])
