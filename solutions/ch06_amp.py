"""Chapter 06 (mixed precision): reference solutions for the gradient norm study (``total_grad_norm``,
``init_weights_``, ``grad_norm_study``) and ``amp_train_step``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

SCHEMES = ("xavier_uniform", "kaiming_normal", "ones")


def total_grad_norm(parameters: torch.Tensor | Iterable[torch.Tensor], norm_type: float = 2.0) -> float:
    """The ``norm_type``-norm of every gradient of ``parameters`` taken together, as a Python float.

    Read-only: the gradients are never written to (``clip_grad_norm_`` would scale them).
    """
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    # One pass over the iterable: a generator can be consumed only once.
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norm_type = float(norm_type)
    # The norm of the per-tensor norms is the norm of everything together, for every p >= 1 and for inf.
    # Each norm is moved to one device so that gradients spread over devices can be stacked.
    per_tensor = [torch.linalg.vector_norm(g.detach(), norm_type).to(grads[0].device) for g in grads]
    return torch.linalg.vector_norm(torch.stack(per_tensor), norm_type).item()


def init_weights_(model: nn.Module, scheme: str, generator: torch.Generator | None = None) -> nn.Module:
    """Initialise every ``nn.Linear`` of ``model`` in place: weights by ``scheme``, biases to zero."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    # modules() yields each distinct module once, so a Linear shared by two parents is drawn once.
    for module in model.modules():
        if not isinstance(module, nn.Linear):
            continue
        if scheme == "xavier_uniform":
            nn.init.xavier_uniform_(module.weight, gain=1.0, generator=generator)
        elif scheme == "kaiming_normal":
            nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu", generator=generator)
        else:
            nn.init.ones_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    return model


def grad_norm_study(make_model: Callable[[], nn.Module], inputs: torch.Tensor, targets: torch.Tensor,
                    schemes: Sequence[str] = SCHEMES, *, epochs: int = 50, batch_size: int = 32,
                    lr: float = 0.01, max_norm: float = 1.0, seed: int = 0) -> dict[str, list[float]]:
    """Train a fresh model per scheme with SGD and clipping; record the total gradient norm of every step
    **before** clipping (after clipping it would never exceed ``max_norm``: the explosion would be hidden)."""
    study = {}
    for scheme in schemes:
        model = make_model()
        # Initialised on the CPU in the model's own dtype from a generator seeded afresh for each scheme,
        # then moved: the same numbers on every device.
        init_weights_(model, scheme, torch.Generator().manual_seed(seed))
        model.to(inputs.device, inputs.dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        norms = []
        for _ in range(epochs):
            for start in range(0, len(inputs), batch_size):
                optimizer.zero_grad()
                loss = F.mse_loss(model(inputs[start:start + batch_size]), targets[start:start + batch_size])
                loss.backward()
                norms.append(total_grad_norm(model.parameters()))
                nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                optimizer.step()
        study[scheme] = norms
    return study


def steps_per_epoch(n_samples: int, batch_size: int) -> int:
    """How many steps one epoch of ``grad_norm_study`` takes (the last batch may be smaller)."""
    return math.ceil(n_samples / batch_size)


def amp_train_step(model: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
                   loss_fn: Callable, inputs: torch.Tensor, targets: torch.Tensor, *,
                   dtype: torch.dtype = torch.float16, max_norm: float | None = None) -> tuple[float, float, bool]:
    """One mixed-precision step; returns ``(loss, grad_norm, skipped)``.

    ``grad_norm`` is taken after ``unscale_`` (before it, every gradient is multiplied by the scale) and
    before clipping; ``skipped`` says whether ``scaler.step`` held the optimizer back because a gradient
    was inf or NaN.
    """
    optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype=dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    # Backward outside autocast: each op's backward already runs in the dtype its forward used.
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grad_norm = total_grad_norm(model.parameters())
    if max_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    # scaler.step returns None whether or not it stepped; a step pre-hook sees whether optimizer.step ran.
    stepped = []
    hook = optimizer.register_step_pre_hook(lambda *_: stepped.append(True))
    try:
        scaler.step(optimizer)
    finally:
        hook.remove()
    scaler.update()
    return loss.item(), grad_norm, not stepped
