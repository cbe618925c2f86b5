"""Bug: checks the scheme only inside the loop over Linear modules, so a model without any Linear accepts an unknown scheme."""
import math
import functools
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_FAIL = {'init_weights_rejects_unknown_scheme': 'checked only when a Linear is found'}



def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norms = [torch.linalg.vector_norm(g.detach(), norm_type) for g in grads]
    return torch.linalg.vector_norm(torch.stack(norms), norm_type).item()

def init_weights_(model, scheme, generator=None):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(m.weight, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu", generator=generator)
            elif scheme == "ones":
                nn.init.ones_(m.weight)
            else:
                raise ValueError(scheme)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
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
