"""Correct, written differently: norms returned as NumPy float64 (a subclass of float); weights set through .data."""
import math
import functools
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_PASS = True



def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    arrs = [p.grad.detach().cpu().double().numpy().ravel() for p in parameters if p.grad is not None]
    if not arrs:
        return np.float64(0.0)
    with np.errstate(all="ignore"):
        return np.linalg.norm(np.concatenate(arrs), ord=float(norm_type))

def init_weights_(model, scheme, generator=None):
    if scheme == "xavier_uniform":
        f = lambda w: nn.init.xavier_uniform_(w, generator=generator)
    elif scheme == "kaiming_normal":
        f = lambda w: nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu", generator=generator)
    elif scheme == "ones":
        f = nn.init.ones_
    else:
        raise ValueError("unknown scheme " + repr(scheme))
    seen = []
    for m in model.modules():
        if isinstance(m, nn.Linear) and not any(m is s for s in seen):
            seen.append(m)
            f(m.weight)
            if m.bias is not None:
                m.bias.data.zero_()
    return model

def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    out = {}
    for scheme in schemes:
        model = make_model()
        init_weights_(model, scheme, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        norms = []
        for _ in range(epochs):
            for j in range(0, len(inputs), batch_size):
                x = inputs[j:j + batch_size]
                y = targets[j:j + batch_size]
                opt.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                norms.append(total_grad_norm(model.parameters()))
                nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                opt.step()
        out[scheme] = norms
    return out
