"""Does nothing: save_checkpoint writes an empty dict straight to path and load_checkpoint ignores the file and returns step 0."""
import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    torch.save({}, path)


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    return 0
