"""Validates the arguments, then returns an empty sweep without touching anything; suggest_lr returns the first lr."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
        raise ValueError("bad arguments")
    return [], []


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    return lrs[0] if lrs else 0.0
