"""Chapter 02 (autograd): reference solutions for gelu_function, graph_ops and grad_accumulation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import torch

# ==================================================================================================
# gelu_function
# ==================================================================================================
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715


class GELUFunction(torch.autograd.Function):
    """GELU, tanh approximation: ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))``.

    Use it as ``GELUFunction.apply(x)``. ``backward`` returns the analytic derivative, so autograd
    never records the operations of ``forward``.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        # save_for_backward (not ``ctx.x = x``): autograd then checks x's version counter when backward
        # unpacks it, so an in-place change of x between forward and backward raises instead of
        # silently giving the gradient at the changed values.
        ctx.save_for_backward(x)
        inner = SQRT_2_OVER_PI * (x + KAPPA * x**3)
        return 0.5 * x * (1.0 + torch.tanh(inner))

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        tanh_inner = torch.tanh(SQRT_2_OVER_PI * (x + KAPPA * x**3))
        # Product rule on 0.5 * x * (1 + tanh(u)), with u = sqrt(2/pi) * (x + 0.044715 x^3):
        #   d/dx = 0.5 * (1 + tanh(u))  +  0.5 * x * (1 - tanh(u)^2) * du/dx
        #   du/dx = sqrt(2/pi) * (1 + 3 * 0.044715 * x^2)
        inner_derivative = SQRT_2_OVER_PI * (1.0 + 3.0 * KAPPA * x**2)
        derivative = 0.5 * (1.0 + tanh_inner) + 0.5 * x * (1.0 - tanh_inner**2) * inner_derivative
        # Chain rule: backward receives dL/d(output) and returns dL/d(input), one per input of forward.
        return grad_output * derivative


# ==================================================================================================
# graph_ops
# ==================================================================================================
def graph_ops(t: torch.Tensor) -> Counter:
    """Count the nodes of the backward graph reachable from ``t.grad_fn``, by node type name."""
    counts: Counter = Counter()
    if t.grad_fn is None:
        return counts  # a leaf, or a tensor that does not require grad: no graph behind it
    # An iterative walk (a recursive one could hit Python's recursion limit on a long graph). ``seen``
    # holds the node objects themselves, so a node reached by several paths is counted once, and
    # keeping them referenced keeps their Python identity stable while we walk.
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for next_node, _input_nr in node.next_functions:
            # None marks an input that does not require grad: it is not a node.
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    return counts


# ==================================================================================================
# grad_accumulation
# ==================================================================================================
def train_with_accumulation(
    model: torch.nn.Module,
    micro_batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    accum_steps: int,
) -> list[float]:
    """One optimizer step per ``accum_steps`` micro-batches, with the gradient of the window's mean loss.

    Returns the mean loss of each window (one float per optimizer step).
    """
    if accum_steps < 1:
        raise ValueError(f"accum_steps must be at least 1, got {accum_steps}")
    if len(micro_batches) % accum_steps != 0:
        raise ValueError(f"{len(micro_batches)} micro-batches cannot be split into windows of {accum_steps}")

    window_losses = []
    for start in range(0, len(micro_batches), accum_steps):
        # Clear gradients at the START of each window: that also discards whatever .grad was left
        # before the call, so it cannot leak into the first step.
        optimizer.zero_grad()
        total = 0.0
        for inputs, targets in micro_batches[start:start + accum_steps]:
            loss = loss_fn(model(inputs), targets)
            # backward() ADDS into .grad; dividing each micro-batch's mean loss by accum_steps makes the
            # sum of the window's gradients the gradient of the window's mean loss (equal batch sizes).
            (loss / accum_steps).backward()
            total += loss.item()  # .item(): a float, so no graph is kept alive by the list we return
        optimizer.step()
        window_losses.append(total / accum_steps)
    return window_losses


# ==================================================================================================
# "Predict, then run" prompts of the chapter (coursekit.practice): the answers, worked out by hand
# ==================================================================================================
PREDICTIONS = {
    # made by no recorded operation: the parameter, the data batch and detach()'s result
    "02.which_are_leaves": {"layer.weight", "batch", "scores.detach()"},
    # nn.Linear on a 2-D input is one fused addmm (bias + input @ weight.T)
    "02.linear_grad_fn": "AddmmBackward0",
    # b * b: two inputs, both b, so both entries are the node that made b (a * 2)
    "02.fan_out_next_functions": ("MulBackward0", "MulBackward0"),
    # 3 * m**2 = 12 at m = 2, then + 5 from 5 * m: AccumulateGrad adds
    "02.grad_after_two_backwards": 17.0,
    # frozen was made under no_grad; mixed = frozen * scale is recorded again, since scale requires grad
    "02.requires_grad_after_no_grad": (False, True),
}
