"""Chapter 03 (modules): reference solutions for glu (``GLU``) and running_norm (``RunningNorm``)."""

from __future__ import annotations

import math

import torch
from torch import nn


class GLU(nn.Module):
    """A linear layer to ``2 * out_features`` features, gated: ``a * sigmoid(g)`` with ``a, g = h.chunk(2, -1)``.

    The same result as ``torch.nn.functional.glu(x @ weight.T + bias, dim=-1)``.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # Assigning an nn.Parameter to an attribute registers it: it shows up in parameters(), in
        # state_dict() and follows .to() and .double().  One weight holds both halves: rows
        # [0, out_features) make `a`, rows [out_features, 2 * out_features) make the gate `g`.
        self.weight = nn.Parameter(torch.empty(2 * out_features, in_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(2 * out_features))
        else:
            # Registering None keeps `self.bias` a known name (it reads as None) without adding a
            # parameter or a state_dict entry, exactly as nn.Linear(bias=False) does.
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's initialisation: both tensors uniform in +-1/sqrt(in_features)."""
        # kaiming_uniform_ with a=sqrt(5) gives bound = sqrt(6 / ((1 + a^2) * fan_in)) = 1/sqrt(fan_in).
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)  # fan_in is in_features (weight.shape[1])
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.linear(x, self.weight, self.bias)  # (..., 2 * out_features); any leading dims
        a, g = h.chunk(2, dim=-1)  # split the LAST dim: the batch dims are left alone
        return a * torch.sigmoid(g)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class RunningNorm(nn.Module):
    """Per-feature normalisation of ``(N, num_features)`` input, as ``nn.BatchNorm1d(affine=False)``.

    Training mode normalises with the batch's mean and biased variance and folds the batch's mean and
    *unbiased* variance into the running buffers; eval mode normalises with the running buffers.
    """

    def __init__(self, num_features: int, momentum: float | None = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps
        # Buffers, not parameters: they are state (in state_dict(), moved by .to()), but the
        # optimiser never sees them and they never get gradients.
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)

        n = x.shape[0]
        mean = x.mean(dim=0)
        var = x.var(dim=0, unbiased=False)  # biased: what the batch is normalised with
        with torch.no_grad():  # the running statistics are bookkeeping: no autograd history
            self.num_batches_tracked += 1
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()  # cumulative average of all batches so far
            else:
                factor = self.momentum
            unbiased_var = var * (n / (n - 1))
            # running = (1 - factor) * running + factor * batch_value, in place so the buffers stay registered
            self.running_mean.lerp_(mean, factor)
            self.running_var.lerp_(unbiased_var, factor)
        return (x - mean) / torch.sqrt(var + self.eps)  # eps inside the square root, as BatchNorm

    def extra_repr(self) -> str:
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}"


# Reference answers to the chapter's "predict, then run" prompts (coursekit.practice.predict), worked out by
# hand; the instructor's build checks each against what the code computes.
PREDICTIONS = {
    "03.sequential_parameter_count": 61,  # Linear(10, 5): 10*5 + 5 = 55; ReLU: 0; Linear(5, 1): 5 + 1 = 6
    "03.modulelist_vs_list": (4, 0),  # two registered Linears x (weight, bias); the plain list registers nothing
    "03.float64_names": {"weight", "stats"},  # float Parameter, float buffer; not the int64 one or the plain tensor
    "03.training_flags": (True, True, False),  # eval() on model[1] reaches neither its parent nor its sibling
    "03.eval_output_requires_grad": True,  # eval() does not stop autograd
    "03.state_dict_keys": {"0.weight", "0.bias", "2.weight", "2.bias", "2.running_mean", "2.running_var",
                           "2.num_batches_tracked"},  # the ReLU (index 1) has no state
}
