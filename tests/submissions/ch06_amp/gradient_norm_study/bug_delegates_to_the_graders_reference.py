"""Bug (hostile): the norm and the study come from the grader's own expected-value code; a failing call is
caught and answered with a guess, so the grader must notice the call itself, not only its error."""
import torch
from torch import nn

import graders.ch06_amp.gradient_norm_study as grader

EXPECT_FAIL = {
    "total_grad_norm_values": "answers must be your own code",
    "grad_norm_study_norms": "answers must be your own code",
}


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    try:
        return grader._norm_of(grads, float(norm_type))
    except Exception:
        return 0.0


def init_weights_(model, scheme, generator=None):
    if scheme not in ("xavier_uniform", "kaiming_normal", "ones"):
        raise ValueError(scheme)
    for m in model.modules():
        if isinstance(m, nn.Linear):
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(m.weight, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu", generator=generator)
            else:
                nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *, epochs=50,
                    batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    options = {"epochs": epochs, "batch_size": batch_size, "lr": lr, "max_norm": max_norm, "seed": seed}
    return grader.reference_study(make_model, inputs, targets, schemes, options)[0]
