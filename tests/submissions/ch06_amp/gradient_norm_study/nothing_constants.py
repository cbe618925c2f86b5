"""Does nothing: returns 0.0, the model untouched, and an empty dict."""
import torch
from torch import nn

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def total_grad_norm(parameters, norm_type=2.0):
    return 0.0


def init_weights_(model, scheme, generator=None):
    return model


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    return {}
