"""Nothing written yet: both functions are empty."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    pass


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    pass
