"""Bug: takes forward differences (np.diff) instead of numpy.gradient."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'np.diff'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    stop = len(losses) - skip_end
    kept = np.array(losses[skip_start:stop])
    if len(kept) < 2:
        raise ValueError("fewer than 2 points after trimming")
    return float(lrs[skip_start:stop][int(np.argmin(np.diff(kept)))])
