"""Bug: grad_norm_study's epochs defaults to 10, not 50 (a default shortened while trying the study out and
left so); every call that leaves epochs out trains for a fifth of the specified steps."""
import math

import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {'grad_norm_study_generated': 'the list for'}

SCHEMES = ("xavier_uniform", "kaiming_normal", "ones")


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norms = torch.stack([torch.linalg.vector_norm(g.detach(), float(norm_type)) for g in grads])
    return torch.linalg.vector_norm(norms, float(norm_type)).item()


def init_weights_(model, scheme, generator=None):
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}")
    for module in model.modules():
        if isinstance(module, nn.Linear):
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(module.weight, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu", generator=generator)
            else:
                nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


def grad_norm_study(make_model, inputs, targets, schemes=SCHEMES, *, epochs=10, batch_size=32, lr=0.01,
                    max_norm=1.0, seed=0):
    study = {}
    for scheme in schemes:
        model = make_model()
        init_weights_(model, scheme, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        norms = []
        for _ in range(epochs):
            for j in range(0, len(inputs), batch_size):
                optimizer.zero_grad()
                F.mse_loss(model(inputs[j:j + batch_size]), targets[j:j + batch_size]).backward()
                norms.append(total_grad_norm(model.parameters()))
                nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                optimizer.step()
        study[scheme] = norms
    return study
