"""Bug: trims with losses[skip_start:-skip_end], which is empty when skip_end == 0."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'skip_end == 0', 'suggest_lr_too_few_points': 'skip_end == 0'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    kept_lrs, kept = lrs[skip_start:-skip_end], np.array(losses[skip_start:-skip_end])
    if len(kept) < 2:
        raise ValueError("fewer than 2 points after trimming")
    return float(kept_lrs[np.argmin(np.gradient(kept))])
