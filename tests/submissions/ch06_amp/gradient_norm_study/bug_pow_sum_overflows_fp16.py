"""BUG: total_grad_norm sums |g|**p in the gradient dtype: float16 gradients overflow to inf where get_total_norm is finite."""
EXPECT_FAIL = {"total_grad_norm_generated": "not the norm of all gradients together"}
import math

import torch
import torch.nn.functional as F
from torch import nn

SCHEMES = ("xavier_uniform", "kaiming_normal", "ones")


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        return torch.stack([g.detach().abs().max() for g in grads]).max().item()
    total = sum(g.detach().abs().pow(norm_type).sum() for g in grads)
    return (total ** (1.0 / norm_type)).item()


def init_weights_(model, scheme, generator=None):
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}")
    for m in model.modules():
        if isinstance(m, nn.Linear):
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(m.weight, gain=1.0, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu", generator=generator)
            else:
                nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def grad_norm_study(make_model, inputs, targets, schemes=SCHEMES, *, epochs=50, batch_size=32, lr=0.01,
                    max_norm=1.0, seed=0):
    out = {}
    for scheme in schemes:
        model = make_model()
        init_weights_(model, scheme, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        norms = []
        for _ in range(epochs):
            for j in range(0, len(inputs), batch_size):
                opt.zero_grad()
                loss = F.mse_loss(model(inputs[j:j + batch_size]), targets[j:j + batch_size])
                loss.backward()
                norms.append(total_grad_norm(model.parameters()))
                nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                opt.step()
        out[scheme] = norms
    return out
