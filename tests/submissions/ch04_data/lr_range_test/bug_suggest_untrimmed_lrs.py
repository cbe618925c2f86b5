"""Bug: uses the index found in the trimmed losses on the untrimmed lrs."""
import numpy as np

EXPECT_FAIL = {'suggest_lr_steepest_descent': 'untrimmed lrs'}


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    raise NotImplementedError("not done yet")


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    kept = np.array(losses[skip_start:len(losses) - skip_end])
    if len(kept) < 2:
        raise ValueError("fewer than 2 points after trimming")
    return float(lrs[np.argmin(np.gradient(kept))])
