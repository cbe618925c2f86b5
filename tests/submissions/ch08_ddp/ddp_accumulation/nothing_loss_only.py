"""Does nothing: computes this rank's mean loss without gradients and returns it, never running backward or stepping."""
import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    with torch.no_grad():
        losses = [loss_fn(ddp_model(x), y).item() for x, y in micro_batches]
    return sum(losses) / len(losses)
