"""Does nothing: computes the loss once in plain float32 and returns it, never running backward or stepping."""
import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    with torch.no_grad():
        loss = loss_fn(model(inputs), targets)
    return loss.item(), 0.0, False
