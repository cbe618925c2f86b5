"""Returns its inputs unchanged."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def lr_range_test(model, optimizer, loss_fn, loader, **kwargs):
    return model, optimizer


def suggest_lr(lrs, losses, **kwargs):
    return lrs
