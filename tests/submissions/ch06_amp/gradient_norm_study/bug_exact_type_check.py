"""Bug: checks type(m) is nn.Linear, so subclasses of nn.Linear are skipped."""
import torch
from torch import nn

EXPECT_FAIL = {'init_weights_only_linear': "this Linear's weight was not initialised at"}


def total_grad_norm(parameters, norm_type=2.0):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if len(grads) == 0:
        return 0.0
    with torch.no_grad():
        norms = [torch.linalg.vector_norm(g, norm_type) for g in grads]
        total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    return total.item()


def init_weights_(model, scheme, generator=None):
    if scheme not in ("xavier_uniform", "kaiming_normal", "ones"):
        raise ValueError(f"unknown scheme: {scheme!r}")
    for m in model.modules():
        if type(m) is nn.Linear:
            if scheme == "xavier_uniform":
                nn.init.xavier_uniform_(m.weight, gain=1.0, generator=generator)
            elif scheme == "kaiming_normal":
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu", generator=generator)
            else:
                nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    results = {}
    for scheme in schemes:
        model = make_model()
        init_weights_(model, scheme, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        norms = []
        for epoch in range(epochs):
            for j in range(0, len(inputs), batch_size):
                x = inputs[j:j + batch_size]
                y = targets[j:j + batch_size]
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                norms.append(total_grad_norm(model.parameters()))
                nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                optimizer.step()
        results[scheme] = norms
    return results
