"""Bug: draws xavier_uniform with a hand-computed bound sqrt(6 / (fan_in + fan_out)), which rounds differently from nn.init's, so the weights are not those of the nn.init call."""
import math
import functools
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {'init_weights_matches_nn_init': 'only to rounding'}



def total_grad_norm(parameters, norm_type=2.0):
    ps = (parameters,) if isinstance(parameters, torch.Tensor) else parameters
    p = float(norm_type)
    parts = []
    for t in ps:
        if t.grad is None:
            continue
        a = t.grad.detach().double().abs().flatten().tolist()
        parts.extend(a)
    if not parts:
        return 0.0
    if any(math.isnan(v) for v in parts):
        return float("nan")
    if math.isinf(p):
        return float(max(parts)) if parts else 0.0
    if any(math.isinf(v) for v in parts):
        return float("inf")
    m = max(parts)
    if m == 0:
        return 0.0
    return m * math.fsum((v / m) ** p for v in parts) ** (1.0 / p)

def init_weights_(model, scheme, generator=None):
    if scheme not in ["xavier_uniform", "kaiming_normal", "ones"]:
        raise ValueError("bad scheme")
    for m in model.modules():
        if not isinstance(m, nn.Linear):
            continue
        w = m.weight
        fan_out, fan_in = w.shape
        with torch.no_grad():
            if scheme == "xavier_uniform":
                a = math.sqrt(6.0 / (fan_in + fan_out))
                w.uniform_(-a, a, generator=generator)
            elif scheme == "kaiming_normal":
                w.normal_(0.0, math.sqrt(2.0) / math.sqrt(fan_in), generator=generator)
            else:
                w.copy_(torch.ones_like(w))
            if m.bias is not None:
                m.bias.copy_(torch.zeros_like(m.bias))
    return model

def _run(make_model, inputs, targets, scheme, epochs, batch_size, lr, max_norm, seed):
    model = init_weights_(make_model(), scheme, torch.Generator().manual_seed(seed)).to(inputs)
    opt = torch.optim.SGD(model.parameters(), lr)
    n = len(inputs)
    nb = (n + batch_size - 1) // batch_size
    rec = []
    for _ in range(epochs):
        for b in range(nb):
            sl = slice(b * batch_size, min(n, (b + 1) * batch_size))
            opt.zero_grad(set_to_none=True)
            F.mse_loss(targets[sl], model(inputs[sl])).backward()
            rec.append(float(total_grad_norm(iter(list(model.parameters())))))
            nn.utils.clip_grad_norm_(list(model.parameters()), max_norm)
            opt.step()
    return rec

def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    return dict([(s, _run(make_model, inputs, targets, s, epochs, batch_size, lr, max_norm, seed)) for s in schemes])
