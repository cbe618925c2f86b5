"""Bug: returns the index of the steepest point instead of the learning rate there."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'index'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    kept = np.array(losses[skip_start:len(losses) - skip_end])
    if kept.size < 2:
        raise ValueError("fewer than 2 points after trimming")
    return skip_start + int(np.gradient(kept).argmin())
