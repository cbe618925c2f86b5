"""Bug: returns the learning rate at the lowest loss, not at the steepest fall."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'lowest loss'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    end = len(losses) - skip_end
    kept = losses[skip_start:end]
    if len(kept) < 2:
        raise ValueError("fewer than 2 points after trimming")
    return lrs[skip_start + int(np.argmin(kept))]
