"""Correct, written differently: one torch.linalg.vector_norm over all gradients flattened and concatenated in float64; dict of init functions; torch.split batches."""
import torch
import torch.nn.functional as F
from torch import nn

EXPECT_PASS = True


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = (parameters,)
    flat = [p.grad.detach().reshape(-1).to(torch.float64) for p in parameters if p.grad is not None]
    if not flat:
        return 0.0
    return torch.linalg.vector_norm(torch.cat(flat), ord=norm_type).item()


def init_weights_(model, scheme, generator=None):
    inits = {
        "xavier_uniform": lambda w: nn.init.xavier_uniform_(w, generator=generator),
        "kaiming_normal": lambda w: nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu",
                                                            generator=generator),
        "ones": nn.init.ones_,
    }
    if scheme not in inits:
        raise ValueError(f"unknown init scheme {scheme}")
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    for layer in linears:
        inits[scheme](layer.weight)
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return model


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    x_batches = torch.split(inputs, batch_size)
    y_batches = torch.split(targets, batch_size)
    study = {}
    for name in schemes:
        model = init_weights_(make_model(), name, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        study[name] = []
        for _ in range(epochs):
            for xb, yb in zip(x_batches, y_batches):
                opt.zero_grad(set_to_none=True)
                loss = F.mse_loss(model(xb), yb)
                loss.backward()
                study[name].append(total_grad_norm(model.parameters()))
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                opt.step()
    return study
