"""Correct, written differently: manual |g|^p sums (torch.maximum for inf) in float64; fill_ under no_grad; zero_grad(set_to_none=False) and a ceil batch count."""
import math
import torch
from torch import nn

EXPECT_PASS = True


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    p = float(norm_type)
    total = None
    with torch.no_grad():
        for param in parameters:
            if param.grad is None:
                continue
            g = param.grad.detach().double().abs().reshape(-1)
            if math.isinf(p):
                part = g.max()
                total = part if total is None else torch.maximum(total, part)
            else:
                part = g.pow(p).sum()
                total = part if total is None else total + part
    if total is None:
        return 0.0
    if not math.isinf(p):
        total = total.pow(1.0 / p)
    return float(total)


def init_weights_(model, scheme, generator=None):
    if scheme != "xavier_uniform" and scheme != "kaiming_normal" and scheme != "ones":
        raise ValueError("scheme must be xavier_uniform, kaiming_normal or ones, got " + repr(scheme))
    for m in model.modules():
        if not isinstance(m, nn.Linear):
            continue
        if scheme == "xavier_uniform":
            nn.init.xavier_uniform_(m.weight, generator=generator)
        elif scheme == "kaiming_normal":
            nn.init.kaiming_normal_(m.weight, a=0, mode="fan_in", nonlinearity="relu", generator=generator)
        else:
            with torch.no_grad():
                m.weight.fill_(1.0)
        if m.bias is not None:
            with torch.no_grad():
                m.bias.zero_()
    return model


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    n = len(inputs)
    num_batches = math.ceil(n / batch_size)
    out = {}
    for scheme in schemes:
        gen = torch.Generator()
        gen.manual_seed(seed)
        model = make_model()
        init_weights_(model, scheme, generator=gen)
        model = model.to(device=inputs.device, dtype=inputs.dtype)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        history = []
        for _ in range(epochs):
            for b in range(num_batches):
                start = b * batch_size
                xb = inputs[start:start + batch_size]
                yb = targets[start:start + batch_size]
                opt.zero_grad(set_to_none=False)
                pred = model(xb)
                loss = torch.nn.functional.mse_loss(pred, yb)
                loss.backward()
                history.append(total_grad_norm(model.parameters()))
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
                opt.step()
        out[scheme] = history
    return out
