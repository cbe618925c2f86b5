"""Does nothing: raises NotImplementedError."""
import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    raise NotImplementedError
