"""Does nothing: both functions raise NotImplementedError."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    raise NotImplementedError


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    raise NotImplementedError
