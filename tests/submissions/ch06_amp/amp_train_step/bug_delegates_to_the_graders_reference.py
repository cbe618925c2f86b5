"""Bug (hostile): returns what the grader's own reference step computes, imported from the installed graders."""
import torch

from graders.ch06_amp.amp_train_step import reference_step

EXPECT_FAIL = {"*": "answers must be your own code"}
EXPECT_SCORE = 0


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    setup = {"model": model, "optimizer": optimizer, "scaler": scaler, "loss_fn": loss_fn, "inputs": inputs,
             "targets": targets}
    return reference_step(setup, dtype, max_norm)
