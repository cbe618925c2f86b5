"""Does nothing: save_checkpoint writes nothing at all and load_checkpoint restores nothing and returns 0."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    pass


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    return 0
