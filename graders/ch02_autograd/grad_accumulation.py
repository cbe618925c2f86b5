"""train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps) -> the windows' mean losses.

The model, its micro-batches, the loss function and the optimizer are built *inside the student's
process* from one pickled :class:`Spec` (a state dict, the data, the optimizer's name and options), so
the optimizer the student receives is over that very model's parameters. The judge builds the same
objects from the same spec and trains them the ordinary way (one forward and backward per concatenated
window). The scenario observes the parameters after the call, what it returned, and (through the
optimizer's step hooks) the gradient each optimizer step used and the window's losses just before and
after each step.

Every check but returns_float_list also judges generated calls (``generate_spec`` / ``generate_invalid_spec``:
any relation of the number of micro-batches to accum_steps, batch size, model, loss, dtype, optimizer, param
groups, leftover .grad and optimizer state the specification allows), and reports the smallest failing call,
shrunk with the student's own function; a slip is named there only when it alone explains every failing call.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import NoReturn

import torch
import torch.nn.functional as F
from torch import nn

from graders import domain, wire
from graders.compare import difference, dtype_name, one_torch_thread, show, show_number, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

ACCUMULATION = exercise("grad_accumulation", chapter="02_autograd", names=["train_with_accumulation"],
                        warm_compiler_stack=True)
_NAME = "train_with_accumulation"
# 5 samples per micro-batch: a batch size that no accum_steps or number of micro-batches of the checks
# equals, so "divided by the batch size" cannot be mistaken for another slip.
_MICRO_BATCH = 5
# How close two parameter sets / gradients must be. In float64 accumulation and concatenation agree to
# ~1e-15; in float32 to ~1e-7 of the values' size.
_TOLERANCE = {torch.float64: dict(rtol=1e-6, atol=1e-9), torch.float32: dict(rtol=1e-4, atol=1e-6)}


# ==================================================================================================
# What the student receives, built the same way in the judge and in the student's process
# ==================================================================================================
def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def _classifier() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))


def _frozen_first_layer() -> nn.Module:
    model = _mlp()
    model[0].requires_grad_(False)  # fine-tuning: the first layer is frozen, its .grad stays None
    return model


class _WithUnused(nn.Module):
    """A model one of whose parameters (``spare``) forward never uses: its .grad stays None after backward."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        self.spare = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def _nested() -> nn.Module:
    """One level deeper: Sequential inside Sequential, the middle block frozen."""
    model = nn.Sequential(nn.Sequential(nn.Linear(3, 4), nn.ReLU()),
                          nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 2))
    model[1].requires_grad_(False)
    return model


_ARCHITECTURES = {
    "mlp": (_mlp, "Linear(3, 5)-Tanh-Linear(5, 2)"),
    "unused": (_WithUnused, "Linear(3, 4)-Tanh-Linear(4, 2) with a parameter forward never uses (its .grad stays "
                            "None)"),
    "nested": (_nested, "Sequential(Sequential(Linear(3, 4), ReLU()), Sequential(Linear(4, 4), Tanh()) frozen, "
                        "Linear(4, 2))"),
    "classifier": (_classifier, "Linear(4, 6)-ReLU-Linear(6, 3)"),
    "frozen": (_frozen_first_layer,
               "Linear(3, 5)-Tanh-Linear(5, 2) with the first Linear frozen (requires_grad=False)"),
}
_LOSSES = {
    "mse": (lambda: nn.MSELoss(), "nn.MSELoss()"),
    "cross_entropy": (lambda: F.cross_entropy, "F.cross_entropy (a function)"),
    "smooth_l1": (lambda: nn.SmoothL1Loss(), "nn.SmoothL1Loss()"),
    "mse_function": (lambda: F.mse_loss, "F.mse_loss (a function)"),
    "l1_lambda": (lambda: _l1, "a function of your own, (outputs - targets).abs().mean()"),
}


def _l1(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return (outputs - targets).abs().mean()


def _linears(model: nn.Module) -> list[nn.Linear]:
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


@dataclasses.dataclass(frozen=True, eq=False)  # compared (and hashed) by identity: it holds tensors
class Spec:
    """Everything needed to build (model, micro_batches, loss_fn, optimizer) identically twice."""

    arch: str
    dtype: torch.dtype
    state: dict
    data: list  # [(inputs, targets)] on the cpu
    loss: str
    optimizer: str  # a torch.optim class name
    options: dict
    per_layer: bool  # one param group per Linear layer, with lr, 2*lr, ...
    accum: int
    junk: list | None  # a .grad for every parameter, set before the call
    measure: bool = False  # evaluate the window's losses just before and after each step
    prestep: bool = False  # the optimizer already made a step (on the junk gradients): it has state
    record: bool = True  # record the gradient and the parameters around every step (else only count the steps)
    scale: float = 1.0  # what the inputs (and regression targets) were multiplied by (for the description)

    def describe(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in self.options.items())
        groups = " with one param group per layer (lr, 2*lr)" if self.per_layer else ""
        batch = len(self.data[0][0]) if self.data else _MICRO_BATCH
        junk = ""
        if self.junk:
            some = any(j is None for j in self.junk)
            junk = (", and junk already in " + ("some parameters' .grad (None in the others)" if some else
                                                "every parameter's .grad") + " before the call")
        state = ", the optimizer already stepped once before the call (it has state)" if self.prestep else ""
        if self.scale != 1:
            state += f", inputs of randn * {self.scale:g} (gradient norms far above 1)"
        return (f"{len(self.data)} micro-batches" + (f" of {batch} samples" if self.data else "")
                + f", accum_steps={self.accum}, optimizer "
                f"{self.optimizer}({options}){groups}, model {_ARCHITECTURES[self.arch][1]} in "
                f"{dtype_name(self.dtype)}, loss_fn {_LOSSES[self.loss][1]}{junk}{state}")


def _make_optimizer(model: nn.Module, spec: Spec) -> torch.optim.Optimizer:
    cls = getattr(torch.optim, spec.optimizer)
    if spec.per_layer:
        layers = [m for m in _linears(model) if m.weight.requires_grad]
        base = spec.options["lr"]
        groups = [{"params": list(m.parameters()), "lr": base * (i + 1)} for i, m in enumerate(layers)]
        return cls(groups, **spec.options)
    return cls([p for p in model.parameters() if p.requires_grad], **spec.options)


def build(spec: Spec, device: torch.device | str):
    """(model, micro_batches, loss_fn, optimizer): the optimizer is over that model's parameters."""
    device = torch.device(device)
    model = _ARCHITECTURES[spec.arch][0]().to(device=device, dtype=spec.dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(spec.state[name])
    micro_batches = [(x.to(device).clone(), y.to(device).clone()) for x, y in spec.data]
    optimizer = _make_optimizer(model, spec)
    if spec.junk is not None:
        for p, junk in zip(model.parameters(), spec.junk):
            p.grad = None if junk is None else junk.to(device=device, dtype=p.dtype).clone()
        if spec.prestep:
            optimizer.step()
    return model, micro_batches, _LOSSES[spec.loss][0](), optimizer


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).clone() for p in params]).cpu()


def _flat_grads(params: list[torch.Tensor]) -> torch.Tensor:
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    return torch.cat([g.detach().reshape(-1).clone() for g in grads]).cpu()


# ==================================================================================================
# In the student's process
# ==================================================================================================
def run_cases(student: RunnerStudent, specs: list[Spec], device: str) -> list[dict]:
    """Scenario: :func:`run_training` for each spec; what the student raises is observed per spec."""
    observed = []
    for spec in specs:
        try:
            observed.append(run_training(student, spec, device))
        except StudentRaised as exc:
            if exc.error.kind != "raised":
                raise
            observed.append({"raised": dataclasses.asdict(exc.error)})
    return observed


def run_training(student: RunnerStudent, spec: Spec, device: str) -> dict:
    """Call the student's function on freshly built objects and observe the training.

    ``steps``: the flattened gradient (over every parameter of the model, zeros for None) at each
    optimizer.step(); ``before``/``after``: each micro-batch's loss of window k, evaluated just before
    and just after the k-th step (only with ``measure``); ``params``: the parameters after the call.
    """
    model, micro_batches, loss_fn, optimizer = build(spec, device)
    params = list(model.parameters())
    windows = ([micro_batches[i:i + spec.accum] for i in range(0, len(micro_batches), spec.accum)]
               if spec.accum >= 1 else [])
    steps: list[torch.Tensor] = []
    params_before: list[torch.Tensor] = []
    params_after: list[torch.Tensor] = []
    before: list = []
    after: list = []

    def window_losses(k: int) -> list[float] | None:
        if not spec.measure or k >= len(windows):
            return None
        with torch.no_grad():
            return [float(loss_fn(model(x), y)) for x, y in windows[k]]

    def pre_step(opt, args, kwargs):
        if not spec.record:  # only count the steps
            steps.append(None)
            return
        steps.append(_flat_grads(params))
        params_before.append(_flat(params))
        before.append(window_losses(len(before)))

    def post_step(opt, args, kwargs):
        if spec.record:
            params_after.append(_flat(params))
            after.append(window_losses(len(after)))

    optimizer.register_step_pre_hook(pre_step)
    optimizer.register_step_post_hook(post_step)
    result = student.call(_NAME, model, micro_batches, loss_fn, optimizer, spec.accum)
    try:
        wire.encode(result)
    except Exception:  # noqa: BLE001 - a container of the student's own that cannot be walked
        cls = type(result)  # sent as an object of the same type name, shown by a fixed text
        text = f"<a {cls.__qualname__} that cannot be read>"
        result = type(cls.__qualname__, (), {"__module__": cls.__module__, "__repr__": lambda self: text})()
    return {"result": result, "steps": steps, "before": before, "after": after, "params_before": params_before,
            "params_after": params_after,
            "params": {name: p.detach().cpu().clone() for name, p in model.named_parameters()}}


# ==================================================================================================
# In the judge
# ==================================================================================================
def _spec(arch: str = "mlp", *, n_micro: int, accum: int, optimizer: str = "SGD", options: dict | None = None,
          loss: str = "mse", dtype: torch.dtype = torch.float64, per_layer: bool = False, junk: bool | str = False,
          measure: bool = False, prestep: bool = False, batch: int = _MICRO_BATCH, scale: float = 1.0) -> Spec:
    """A spec with a freshly initialised model and random data (the judge's RNG is seeded per check).

    ``junk``: True or "every" sets a .grad on every parameter before the call, "some" on about half of them (the
    others None); ``prestep``: the optimizer then steps once on it (so it has state); ``scale`` multiplies the
    inputs (and regression targets), so gradient norms grow far above 1."""
    with one_torch_thread():
        return _new_spec(arch, n_micro, accum, optimizer, options, loss, dtype, per_layer, junk, measure, prestep,
                         batch, scale)


def _new_spec(arch, n_micro, accum, optimizer, options, loss, dtype, per_layer, junk, measure, prestep=False,
              batch=_MICRO_BATCH, scale=1.0) -> Spec:
    model = _ARCHITECTURES[arch][0]().to(dtype)
    state = {name: p.detach().clone() for name, p in model.named_parameters()}
    features, outputs = _linears(model)[0].in_features, _linears(model)[-2 if arch == "unused" else -1].out_features
    data = []
    for _ in range(n_micro):
        x = torch.randn(batch, features, dtype=dtype) * scale
        y = (torch.randint(0, outputs, (batch,)) if loss == "cross_entropy" else
             torch.randn(batch, outputs, dtype=dtype) * scale)
        data.append((x, y))
    junk_grads = None
    if junk:
        # Frozen parameters get none (no optimizer step or zero_grad of the optimizer reaches them), nor does a
        # parameter forward never uses: zero_grad(set_to_none=False) would leave it a zero .grad that a weight
        # decay or Adam then steps, and zero_grad() None, which the optimizer skips; both are ordinary training.
        unused = {id(p) for p in model.spare.parameters()} if arch == "unused" else set()
        junk_grads = [torch.randn(p.shape, dtype=dtype) * 5 if p.requires_grad and id(p) not in unused else None
                      for p in model.parameters()]
        if junk == "some":
            junk_grads = [j if k % 2 == 0 else None for k, j in enumerate(junk_grads)]
    return Spec(arch, dtype, state, data, loss, optimizer, dict(options or {"lr": 0.1}), per_layer, accum, junk_grads,
                measure, prestep and junk_grads is not None, scale=scale)


# ==================================================================================================
# The generated domain (from the specification's sentences): any number of windows (none at all too) of any
# accum_steps (1, the whole list, and between), micro-batches of any equal batch size (1 too), models flat,
# nested one level deeper, with a frozen block or a parameter forward never uses (its .grad stays None), in
# float32 or float64, losses given as modules, functions or a function of the student's own, every optimizer
# of torch.optim that keeps state or not (SGD plain, with momentum, dampening, Nesterov, weight decay; Adam,
# AMSGrad, AdamW, RMSprop, Adagrad), in one or several param groups, data scaled so that gradient norms lie
# far above 1 (a clip that should not be there acts), .grad left over in every parameter or only some (None
# in the others), an optimizer that already has state; and invalid accum_steps (0, negative) or a number of
# micro-batches that is no multiple of it (fewer, between one and two windows, one more), with any data.
# ==================================================================================================
_GENERATED_OPTIMIZERS = {
    "plain": [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.3}), ("SGD", {"lr": 0.02})],
    "momentum": [("SGD", {"lr": 0.05, "momentum": 0.9}), ("SGD", {"lr": 0.1, "momentum": 0.5, "dampening": 0.3}),
                 ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01})],
    "adaptive": [("Adam", {"lr": 0.01}), ("Adam", {"lr": 0.01, "amsgrad": True}),
                 ("AdamW", {"lr": 0.01, "weight_decay": 0.1}), ("RMSprop", {"lr": 0.01}), ("Adagrad", {"lr": 0.1})],
}
_GENERATED_OPTIMIZERS["any"] = [o for group in _GENERATED_OPTIMIZERS.values() for o in group]
_BATCH_SIZES = (1, 2, 5, 7, 16)


def _relation_sizes(generator, relation: str) -> tuple[int, int]:
    """(number of micro-batches, accum_steps) of a valid call."""
    accum = domain.small_int(generator, 1, 4)
    windows = domain.pick(generator, [1, 2, 3])
    if relation == "one_step":
        return accum, accum
    if relation == "plain":
        return windows, 1
    if relation == "empty":
        return 0, accum
    return windows * accum, accum


def generate_spec(generator, optimizers: str = "any", *, leftovers: float = 0.3,
                  relations: tuple[str, ...] = ("windows", "windows", "windows", "one_step", "plain")) -> Spec:
    """A valid call, drawn from the whole domain (``optimizers`` names the family of optimizers)."""
    n_micro, accum = _relation_sizes(generator, domain.pick(generator, relations))
    arch = domain.pick(generator, list(_ARCHITECTURES), [3, 2, 2, 2, 2])
    name, options = domain.pick(generator, _GENERATED_OPTIMIZERS[optimizers])
    junk = None
    if generator.random() < leftovers:
        junk = domain.pick(generator, ["every", "some"])
    # Inputs scaled up make gradient norms far above 1, in float64 only: in float32 the large steps they cause
    # amplify the rounding by which accumulation and concatenation differ beyond float32's tolerance.
    dtype = domain.pick(generator, [torch.float64, torch.float32])
    scale = domain.pick(generator, [1.0, 1.0, 3.0, 10.0]) if dtype == torch.float64 else 1.0
    spec = _spec(arch, n_micro=n_micro, accum=accum, optimizer=name, options=dict(options),
                 loss=domain.pick(generator, list(_LOSSES)), dtype=dtype, per_layer=generator.random() < 0.3,
                 junk=junk, prestep=junk is not None and generator.random() < 0.5,
                 batch=domain.pick(generator, _BATCH_SIZES), scale=scale)
    return dataclasses.replace(spec, record=False)  # recorded again when it fails


def generate_invalid_spec(generator) -> Spec:
    """accum_steps < 1 (with any number of micro-batches, 0 too, a multiple of it or not), or a number of
    micro-batches that is no multiple of accum_steps >= 2."""
    if generator.random() < 0.4:
        accum = domain.pick(generator, [0, -1, -domain.small_int(generator, 1, 6)])
        n_micro = domain.pick(generator, [0, domain.small_int(generator, 1, 8), 2 * abs(accum)])
    else:
        accum = domain.small_int(generator, 2, 6)
        n_micro = domain.pick(generator, [
            generator.randint(1, accum - 1),  # fewer than one window
            generator.randint(accum + 1, 2 * accum - 1) if accum > 2 else accum + 1,  # between one and two
            accum * domain.small_int(generator, 1, 3) + 1,  # one more than a multiple
            accum * domain.small_int(generator, 2, 3) - 1])  # one less
    return dataclasses.replace(_spec(n_micro=n_micro, accum=accum, batch=domain.pick(generator, [1, 5])), record=False)


def spec_size(spec: Spec) -> tuple:
    return (len(spec.data), abs(spec.accum), spec.prestep, spec.junk is not None, spec.per_layer,
            len(spec.data[0][0]) if spec.data else 0, sum(t.numel() for t in spec.state.values()),
            _GENERATED_OPTIMIZERS["any"].index((spec.optimizer, spec.options))
            if (spec.optimizer, spec.options) in _GENERATED_OPTIMIZERS["any"] else 0, spec.dtype == torch.float32)


def smaller_specs(spec: Spec) -> list[Spec]:
    """Smaller variants of a failing valid call, for shrinking (each still valid)."""
    n, accum = len(spec.data), spec.accum
    out = []
    if n > accum:
        out.append(dataclasses.replace(spec, data=spec.data[:n - accum]))
    out.extend(dataclasses.replace(spec, accum=a) for a in range(1, accum) if n % a == 0)
    if spec.prestep:
        out.append(dataclasses.replace(spec, prestep=False))
    if spec.junk is not None:
        out.append(dataclasses.replace(spec, junk=None, prestep=False))
    if spec.per_layer:
        out.append(dataclasses.replace(spec, per_layer=False))
    if (spec.optimizer, spec.options) != ("SGD", {"lr": 0.1}):
        out.append(dataclasses.replace(spec, optimizer="SGD", options={"lr": 0.1}))
    batch = len(spec.data[0][0]) if spec.data else 1
    for smaller in sorted({1, batch // 2} - {0, batch}):
        out.append(dataclasses.replace(spec, data=[(x[:smaller], y[:smaller]) for x, y in spec.data]))
    if spec.dtype == torch.float32:
        wide = {name: t.double() for name, t in spec.state.items()}
        data = [(x.double(), y if y.dtype == torch.int64 else y.double()) for x, y in spec.data]
        junk = None if spec.junk is None else [None if j is None else j.double() for j in spec.junk]
        out.append(dataclasses.replace(spec, dtype=torch.float64, state=wide, data=data, junk=junk))
    return out


@dataclasses.dataclass
class _Ordinary:
    """What ordinary training (one forward/backward per concatenated window) does, step by step."""

    losses: list[float]  # the window's mean loss, per step
    step_grads: list[torch.Tensor]  # the flattened gradient at each optimizer step
    micro_losses: list[list[float]]  # each micro-batch's loss, at the window's starting parameters
    initial_micro_losses: list[list[float]]  # each micro-batch's loss at the initial parameters
    first_window_micro_grads: list[torch.Tensor]  # each micro-batch's gradient in window 1 (diagnosis only)
    params_before: list[torch.Tensor]  # the flattened parameters when each step starts
    params_after: list[torch.Tensor]  # the flattened parameters after each step
    params: dict[str, torch.Tensor]  # the parameters after training
    initial: dict[str, torch.Tensor]


def _ordinary_training(spec: Spec, device: torch.device, *, diagnose: bool = True) -> _Ordinary:
    """Ordinary training on ``spec``; without ``diagnose`` only the losses, step gradients and parameters (the
    micro-batch losses and gradients that name a slip are left empty)."""
    with one_torch_thread():  # tiny tensors: a thread pool costs far more than it saves
        return _train_concatenated(spec, device, diagnose)


def _train_concatenated(spec: Spec, device: torch.device, diagnose: bool = True) -> _Ordinary:
    model, micro_batches, loss_fn, optimizer = build(spec, device)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    initial = {name: p.detach().cpu().clone() for name, p in model.named_parameters()}
    windows = [micro_batches[i:i + spec.accum] for i in range(0, len(micro_batches), spec.accum)]
    first_grads = []
    for x, y in windows[0] if windows and diagnose else []:
        grads = dict(zip(map(id, trainable), torch.autograd.grad(loss_fn(model(x), y), trainable, allow_unused=True)))
        first_grads.append(torch.cat([(torch.zeros_like(p) if grads.get(id(p)) is None else grads[id(p)]).reshape(-1)
                                      for p in params]).detach().cpu())
    with torch.no_grad():
        initial_micro = [[float(loss_fn(model(x), y)) for x, y in window] for window in windows] if diagnose else []
    losses, step_grads, micro_losses, params_before, params_after = [], [], [], [], []
    for window in windows:
        if diagnose:
            with torch.no_grad():
                micro_losses.append([float(loss_fn(model(x), y)) for x, y in window])
        inputs, targets = torch.cat([x for x, _ in window]), torch.cat([y for _, y in window])
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        step_grads.append(_flat_grads(params))
        params_before.append(_flat(params))
        optimizer.step()
        params_after.append(_flat(params))
        losses.append(loss.item())
    return _Ordinary(losses, step_grads, micro_losses, initial_micro, first_grads, params_before, params_after,
                     {name: p.detach().cpu().clone() for name, p in model.named_parameters()}, initial)


def _call(spec: Spec) -> str:
    return f"{_NAME}(model, {len(spec.data)} micro-batches, loss_fn, optimizer, accum_steps={spec.accum})"


def _observe(student: Submission, specs: list[Spec], device: torch.device) -> list[dict | StudentCodeError]:
    """One call of the student's function per spec, all in one request: each call's observations, or the
    StudentCodeError it raised."""
    try:
        observed = student.scenario(run_cases, specs, str(device))
    except StudentCodeError as exc:
        calls = "; ".join(_call(spec) for spec in specs)
        raise exc.within(f"one of the calls of this check ({calls})") from None
    return [StudentCodeError(StudentError(**o["raised"])) if "raised" in o else o for o in observed]


def _trained(observed: dict | StudentCodeError, spec: Spec) -> dict:
    """The observations of a call on valid arguments; what it raised is reported."""
    if isinstance(observed, StudentCodeError):
        _student_failed(observed, spec)
    return observed


def _student_failed(exc: StudentCodeError, spec: Spec) -> NoReturn:
    """Report what the student's code raised on valid arguments, with the slip where the error singles it out."""
    error, message = exc.error, exc.error.exception_message
    cause = None
    if ((error.exception_type == "AttributeError" and "'NoneType' object has no attribute" in message)
            or (error.exception_type == "TypeError" and "'NoneType'" in message)):
        cause = ("a parameter's .grad is None until its first backward (and again after zero_grad(), which sets "
                 "it to None by default), and always for a frozen parameter (requires_grad=False); clear "
                 "gradients with optimizer.zero_grad(), and skip parameters whose .grad is None")
    elif error.exception_type == "AttributeError" and "'float' object has no attribute 'backward'" in message:
        cause = ("backward() was called on a Python float: loss.item() (or float(loss)) leaves the graph behind; "
                 "call backward() on the loss tensor and keep .item() for the number you return")
    elif error.exception_type == "RuntimeError" and "does not require grad" in message:
        cause = ("the loss has no graph: the forward pass ran under torch.no_grad() (or the loss was detached) "
                 "before backward(); compute the loss with gradients enabled")
    if cause and error.kind == "raised":
        fail(f"{_call(spec)} failed on {spec.describe()}: {error.describe()}\n  likely cause: {cause}")
    raise exc.within(f"{_call(spec)} on {spec.describe()}") from None


def _close(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), **_TOLERANCE[dtype]))


def _steps_cause(count: int, n_micro: int, windows: int) -> str:
    times = "once" if windows == 1 else f"{windows} times"
    if count == 0:
        return ("optimizer.step() was never called; update the parameters with the optimizer you were given "
                "(optimizer.step(), once per window)")
    if count == n_micro and n_micro != windows:
        return (f"optimizer.step() was called every micro-batch ({n_micro} times); call it once per window of "
                f"accum_steps micro-batches ({times} here)")
    return (f"optimizer.step() was called {count} times; it must be called once per window of accum_steps "
            f"micro-batches ({times} here)")


_MANUAL_UPDATE = ("something other than optimizer.step() changed the parameters (a manual update such as "
                  "p -= lr * p.grad, or another optimizer); let the optimizer you were given make every update")


def _training_cause(spec: Spec, expected: _Ordinary, observed: dict) -> tuple[str | None, str | None]:
    """(where, likely cause) from what the optimizer saw at each step: the cause only when one catalogued slip
    alone gives what was seen."""
    where, causes = _training_causes(spec, expected, observed)
    return where, causes[0] if len(causes) == 1 else None


def _training_causes(spec: Spec, expected: _Ordinary, observed: dict) -> tuple[str | None, list[str]]:
    """(where, the catalogued slips that give what the optimizer saw) from the step pre- and post-hooks."""
    n_micro, dtype = len(spec.data), spec.dtype
    seen = observed["steps"]
    windows = len(expected.step_grads)
    if len(seen) != windows:
        return None, [_steps_cause(len(seen), n_micro, windows)]
    for k in range(windows):
        if not _close(observed["params_before"][k], expected.params_before[k], dtype):
            between = "before the first optimizer.step()" if k == 0 else f"between optimizer steps {k} and {k + 1}"
            return (f"{between} the parameters changed: "
                    f"{difference(observed['params_before'][k], expected.params_before[k])}"), [_MANUAL_UPDATE]
        got, right = seen[k], expected.step_grads[k]
        if k == 0 and not _close(got, right, dtype):
            return (f"at the first optimizer.step(), the gradient (all parameters, flattened): "
                    f"{difference(got, right)}"), _first_step_causes(spec, expected, got)
        if not _close(got, right, dtype):
            where = f"at optimizer step {k + 1}, the gradient: {difference(got, right)}"
            if _close(got, right + seen[k - 1], dtype):
                return where, [(f"gradients are not cleared between windows: a step also used the previous window's "
                                "gradient; call zero_grad() before every window (or after every step), not once at "
                                "the start")]
            return (f"the gradient at optimizer step {k + 1} is not the gradient of window {k + 1}'s mean loss "
                    f"({difference(got, right)})"), []
        if not _close(observed["params_after"][k], expected.params_after[k], dtype):
            return (f"optimizer step {k + 1} had the right gradient, yet the parameters after it differ: "
                    f"{difference(observed['params_after'][k], expected.params_after[k])}"), []
    return "after the last optimizer.step() the parameters changed", [_MANUAL_UPDATE]


def _first_step_cause(spec: Spec, expected: _Ordinary, got: torch.Tensor) -> str | None:
    causes = _first_step_causes(spec, expected, got)
    return causes[0] if len(causes) == 1 else None


def _first_step_causes(spec: Spec, expected: _Ordinary, got: torch.Tensor) -> list[str]:
    """The catalogued slips whose first-step gradient is the student's (and not the right one)."""
    accum, n_micro, dtype = spec.accum, len(spec.data), spec.dtype
    right = expected.step_grads[0]
    if not got.abs().any():
        return ["the gradients were all zero (or None) when optimizer.step() ran: zero_grad() was called between "
                "backward() and step(), or backward() was never called"]
    first, last = expected.first_window_micro_grads[0], expected.first_window_micro_grads[-1]
    candidates = [
        (right * accum, "the loss was not divided by accum_steps: backward() ADDS the micro-batch gradients, so "
                        "their sum is accum_steps times the gradient of the window's mean loss"),
        (right / accum, "the gradient was divided by accum_steps twice (divide each micro-batch's loss once, or "
                        "the summed .grad once, not both)"),
        (right * accum / n_micro, "the loss was divided by len(micro_batches) instead of accum_steps (the number "
                                  "of micro-batches per window)"),
        (right / len(spec.data[0][0]), "the loss was also divided by the batch size: loss_fn already returns the mean "
                                       "over the micro-batch, so divide by accum_steps only"),
        (last / accum, "zero_grad() runs every micro-batch, so only the last micro-batch's gradient is left "
                       "when optimizer.step() runs; clear gradients once per window"),
        (first / accum, "optimizer.step() ran after the FIRST micro-batch of the window: step when "
                        "(i + 1) % accum_steps == 0, not when i % accum_steps == 0"),
    ]
    if spec.junk is not None:
        junk = torch.cat([(torch.zeros_like(p) if j is None else j).reshape(-1)
                          for p, j in zip(spec.state.values(), spec.junk)]).to(right.dtype)
        candidates.insert(0, (right + junk, "zero_grad missing at the start: the .grad left over from before the "
                                            "call leaked into the first step; clear gradients before the first "
                                            "window"))
    return [cause for wrong, cause in candidates if not _close(wrong, right, dtype) and _close(got, wrong, dtype)]


def _expect_training(student: Submission, device: torch.device, cases: list[tuple[Spec, str]]) -> None:
    """Each (spec, what): the parameters after the student's call equal those of ordinary training."""
    everything = _observe(student, [spec for spec, _ in cases], device)
    for (spec, what), observed in zip(cases, everything):
        observed = _trained(observed, spec)
        expected = _ordinary_training(spec, device)
        params = observed["params"]
        for name, want in expected.params.items():
            got = params[name]
            if _close(got, want, spec.dtype):
                continue
            where, cause = _training_cause(spec, expected, observed)
            unchanged = torch.equal(got, expected.initial[name])
            where = where or (f"parameter {name!r}: {difference(got, want, **_TOLERANCE[spec.dtype])}"
                              + (" (it was never changed)" if unchanged else ""))
            fail_mismatch(what, given=spec.describe(),
                          expected="the parameters of ordinary training: one step per window on the concatenated "
                                   "window", got=f"different parameters (first: {name!r})", where=where, cause=cause)


def _floats(result, spec: Spec) -> list[float]:
    """The student's list of losses as floats (0-d tensors too); fails when it is not a list of numbers."""
    if not isinstance(result, (list, tuple)):
        fail(f"{_call(spec)} returned {show(result)} (a {type_name(result)}); it must return a list with the mean "
             "loss of each window (one float per optimizer step)")
    values = []
    for value in result:
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            fail(f"{_call(spec)} returned a list holding {show(value)} (a {type_name(value)}); each entry must be a "
                 "float, the window's mean loss")
        values.append(float(value))
    return values


def _same_floats(got: list[float], expected: list[float]) -> bool:
    return len(got) == len(expected) and all(math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-12)
                                             for g, e in zip(got, expected))


def _show_floats(values: list[float]) -> str:
    return "[" + ", ".join(show_number(v) for v in values) + "]"


def _float_where(got: list[float], expected: list[float]) -> str | None:
    if len(got) != len(expected):
        return f"{len(got)} values instead of {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        if not math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-12):
            return f"window {k + 1}: expected {show_number(e)}, returned {show_number(g)} (off by {show_number(g - e)})"
    return None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


# ==================================================================================================
# Generated calls, judged together
# ==================================================================================================
_LOSS_TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-4}


@judge_only
def _generated_failure(spec: Spec, observed: dict | StudentCodeError, expected: _Ordinary) -> str | None:
    """What is wrong with one generated valid call (None: nothing): it raised, made another number of steps,
    returned other losses, or left other parameters."""
    if isinstance(observed, StudentCodeError):
        return "raised"
    windows = len(expected.losses)
    if len(observed["steps"]) != windows:
        return "steps"
    if not all(_close(observed["params"][name], want, spec.dtype) for name, want in expected.params.items()):
        return "params"
    result = observed["result"]
    if not isinstance(result, (list, tuple)) or len(result) != windows:
        return "losses"
    values = [v.item() if isinstance(v, torch.Tensor) and v.numel() == 1 else v for v in result]
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        return "losses"
    rel = _LOSS_TOLERANCE[spec.dtype]
    if not all(math.isclose(float(v), e, rel_tol=rel, abs_tol=rel * 1e-3) for v, e in zip(values, expected.losses)):
        return "losses"
    return None


@judge_only
def _loss_causes(spec: Spec, expected: _Ordinary, values: list[float]) -> list[str]:
    """The catalogued slips whose losses are the student's (the parameters being right, the window's micro-batch
    losses at its start are the judge's)."""
    micro, accum, rel = expected.micro_losses, spec.accum, _LOSS_TOLERANCE[spec.dtype]

    def same(a: list[float], b: list[float]) -> bool:
        return len(a) == len(b) and all(math.isclose(x, y, rel_tol=rel, abs_tol=rel * 1e-3) for x, y in zip(a, b))

    running = [sum(sum(m) for m in micro[:k + 1]) / accum for k in range(len(micro))]
    candidates = [
        ([sum(m) for m in micro], "the window's losses were summed; return their mean (divide by accum_steps)"),
        ([e / accum for e in expected.losses], "the losses already divided by accum_steps were averaged again: keep "
                                               "loss.item() from before the division"),
        ([m[-1] for m in micro], "only the last micro-batch's loss of each window was kept; average all of them"),
        ([x for m in micro for x in m], "one loss per micro-batch was returned; return one per window (their mean)"),
        (running, "the running total of the losses is not reset between windows: start each window's total at 0"),
    ]
    return [why for wrong, why in candidates if not same(wrong, expected.losses) and same(values, wrong)]


@judge_only
def _generated_causes(spec: Spec, observed: dict | StudentCodeError, expected: _Ordinary, failure: str) -> list[str]:
    if failure == "params":
        return _training_causes(spec, expected, observed)[1]
    if failure == "losses" and isinstance(observed["result"], (list, tuple)):
        values = [v.item() if isinstance(v, torch.Tensor) and v.numel() == 1 else v for v in observed["result"]]
        if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            return _loss_causes(spec, expected, [float(v) for v in values])
    return []


@judge_only
def _expect_generated(student: Submission, device: torch.device, count: int, what: str, **options) -> None:
    """``count`` generated valid calls (one scenario call); on a failure, the smallest failing call (shrunk with
    the student's own function), and a likely cause only when one catalogued slip explains every failing call."""
    specs = domain.draw(lambda g: generate_spec(g, **options), count, size=spec_size)
    seen_of = dict(zip(specs, _observe(student, specs, device)))
    expected_of = {spec: _ordinary_training(spec, device, diagnose=False) for spec in specs}
    failures = {spec: _generated_failure(spec, seen_of[spec], expected_of[spec]) for spec in specs}
    failing = [failures[spec] is not None for spec in specs]
    if not any(failing):
        return
    tried, wrong = len(specs), sum(failing)
    spec = domain.smallest(specs, failing, size=spec_size)

    def fails(candidates: list[Spec]) -> list[bool]:
        for candidate, observed in zip(candidates, _observe(student, candidates, device)):
            seen_of[candidate] = observed
            expected_of[candidate] = _ordinary_training(candidate, device, diagnose=False)
            failures[candidate] = _generated_failure(candidate, observed, expected_of[candidate])
        return [failures[c] is not None for c in candidates]

    spec = domain.shrink(spec, smaller_specs, fails)
    if failures[spec] == "raised":
        error = seen_of[spec].error
        if error.is_instance(ValueError):
            fail(f"{_call(spec)} on {spec.describe()} {error.describe()}, but these arguments are valid: "
                 f"accum_steps={spec.accum} >= 1 and {len(spec.data)} micro-batches is a multiple of it (0 is a "
                 "multiple of every accum_steps: no window, no step, an empty list)")
        _student_failed(seen_of[spec], spec)
    # The slips' evidence on every failing call (the 30 smallest), run again with every step recorded, with the
    # diagnostic parts of ordinary training.
    bad = [spec] + [s for s in sorted(failures, key=spec_size) if failures[s] is not None and s is not spec][:29]
    recorded = [dataclasses.replace(s, record=True) for s in bad]
    again = _observe(student, recorded, device)
    explained = []
    for s, observed in zip(recorded, again):
        failure = _generated_failure(s, observed, _ordinary_training(s, device, diagnose=False))
        if failure is not None:
            explained.append(_generated_causes(s, observed, _ordinary_training(s, device), failure))
    spec, observed = recorded[0], again[0]
    expected = _ordinary_training(spec, device)
    failure = _generated_failure(spec, observed, expected)
    if failure is None or failure == "raised" or not explained:  # it passed (or raised) when run again
        fail(f"{what}: {_call(spec)} on {spec.describe()} gave another result when run again (a grader error "
             "unless your function depends on something besides its arguments; please report it)")
    common = [c for c in explained[0] if all(c in other for other in explained)]
    cause = common[0] if len(common) == 1 else None
    headline = f"{what} ({wrong} of the {tried} generated calls tried failed; the smallest one)"
    windows = len(expected.losses)
    if failure == "steps":
        steps = len(observed["steps"])
        fail(f"{headline}\n  call: {_call(spec)} on {spec.describe()}\n  made {steps} optimizer steps; expected "
             f"{windows}\n  {_steps_cause(steps, len(spec.data), windows)}")
    if failure == "params":
        where, _ = _training_causes(spec, expected, observed)
        name = next(n for n, want in expected.params.items() if not _close(observed["params"][n], want, spec.dtype))
        fail_mismatch(headline, given=f"{_call(spec)} on {spec.describe()}",
                      expected="the parameters of ordinary training: one step per window on the concatenated window",
                      got=f"different parameters (first: {name!r})",
                      where=where or (f"parameter {name!r}: "
                                      f"{difference(observed['params'][name], expected.params[name])}"),
                      cause=cause)
    result = observed["result"]
    if not isinstance(result, (list, tuple)):
        fail(f"{headline}\n  call: {_call(spec)} on {spec.describe()}\n  returned {show(result)} (a "
             f"{type_name(result)}); expected a list with the mean loss of each window")
    values = _floats(result, spec)
    fail_mismatch(f"{headline}: the returned losses are not the windows' mean losses",
                  given=f"{_call(spec)} on {spec.describe()}", expected=_show_floats(expected.losses),
                  got=_show_floats(values), where=_float_where(values, expected.losses), cause=cause)


@judge_only
def _expect_generated_invalid(student: Submission, device: torch.device, count: int) -> None:
    """``count`` generated invalid calls: each raises ValueError (the smallest one that does not is reported)."""
    specs = domain.draw(generate_invalid_spec, count, size=spec_size)
    observed = _observe(student, specs, device)
    failing = [not (isinstance(o, StudentCodeError) and o.error.is_instance(ValueError)) for o in observed]
    spec = domain.smallest(specs, failing, size=spec_size)
    if spec is None:
        return
    seen = observed[specs.index(spec)]
    n_micro, accum = len(spec.data), spec.accum
    why = (f"accum_steps is {accum} (below 1)" if accum < 1 else
           f"{n_micro} micro-batches do not split into windows of {accum}")
    headline = (f"{sum(failing)} of the {len(specs)} generated invalid calls tried did not raise ValueError; the "
                "smallest:")
    if isinstance(seen, StudentCodeError):
        if seen.error.kind != "raised":
            raise seen.within(_call(spec)) from None
        cause = ("\n  likely cause: assert raises AssertionError; raise ValueError(...) instead"
                 if seen.error.exception_type == "AssertionError" else "")
        fail(f"{headline} {_call(spec)} must raise ValueError because {why}, but it {seen.error.describe()}{cause}")
    fail(f"{headline} {_call(spec)} returned {show(seen['result'])} after {len(seen['steps'])} optimizer step(s); it "
         f"must raise ValueError because {why}")


# ==================================================================================================
# Checks
# ==================================================================================================
@ACCUMULATION.check(points=1)
def validates_arguments(student: Submission, device: torch.device) -> None:
    """ValueError when accum_steps < 1 or the number of micro-batches is not a multiple of it; valid ones train."""
    invalid = [(4, 0, "accum_steps is 0"), (4, -2, "accum_steps is negative"),
               (5, 2, "5 micro-batches do not split into windows of 2"),
               (4, 3, "4 micro-batches do not split into windows of 3"),
               (2, 4, "2 micro-batches do not fill one window of 4")]
    # Valid arguments next to the invalid ones must train: raising (or doing nothing) every time is not validation.
    valid = [(6, 3), (4, 1), (3, 3)]
    specs = [_spec(n_micro=n, accum=accum) for n, accum, _ in invalid] + [_spec(n_micro=n, accum=a) for n, a in valid]
    everything = _observe(student, specs, device)
    for (n_micro, accum, why), spec, observed in zip(invalid, specs, everything):
        if not isinstance(observed, StudentCodeError):
            fail(f"{_call(spec)} returned {show(observed['result'])} after {len(observed['steps'])} optimizer step(s); "
                 f"it must raise ValueError because {why} (likely cause: the check at the top of the function, before "
                 "any training, is missing or tests something else)")
        error = observed.error
        if error.is_instance(ValueError):
            continue
        if error.exception_type == "ZeroDivisionError":
            cause = ("len(micro_batches) % accum_steps divides by zero when accum_steps is 0: check accum_steps < 1 "
                     "first")
        elif error.exception_type == "AssertionError":
            cause = "assert raises AssertionError; raise ValueError(...) instead"
        else:
            cause = "the specification asks for ValueError; raise ValueError(...) there"
        fail(f"{_call(spec)} must raise ValueError because {why}, but it {error.describe()}\n  likely cause: {cause}")
    for (n_micro, accum), spec, observed in zip(valid, specs[len(invalid):], everything[len(invalid):]):
        if isinstance(observed, StudentCodeError) and observed.error.is_instance(ValueError):
            fail(f"{_call(spec)} {observed.error.describe()}, but these arguments are valid (accum_steps >= 1 and "
                 f"{n_micro} is a multiple of {accum}); raise ValueError only when accum_steps < 1 or "
                 "len(micro_batches) % accum_steps != 0")
        steps = len(_trained(observed, spec)["steps"])
        if steps != n_micro // accum:
            fail(f"{_call(spec)} (valid arguments) made {steps} optimizer steps; expected {n_micro // accum}\n"
                 f"  likely cause: {_steps_cause(steps, n_micro, n_micro // accum)}")
    _expect_generated_invalid(student, device, 30)


@ACCUMULATION.check(points=1)
def returns_float_list(student: Submission, device: torch.device) -> None:
    """Returns a list of Python floats, one per optimizer step (window)."""
    specs = [_spec(n_micro=n, accum=accum, options={"lr": 0.0}) for n, accum in [(6, 3), (4, 1), (5, 5)]]
    for spec, observed in zip(specs, _observe(student, specs, device)):
        observed = _trained(observed, spec)
        got, n_micro, call = observed["result"], len(spec.data), _call(spec)
        windows = n_micro // spec.accum
        if not isinstance(got, list):
            fail(f"{call} returned {show(got)} (a {type_name(got)}); it must return a list with the mean loss of "
                 "each window (one float per optimizer step)")
        if len(got) == n_micro and n_micro != windows:
            fail(f"{call} returned {len(got)} losses, one per micro-batch; return one per optimizer step (window), "
                 f"{windows} here: the mean of the window's micro-batch losses")
        if len(got) != windows:
            fail(f"{call} returned {len(got)} losses; expected one per optimizer step (window): {windows}")
        for value in got:
            if isinstance(value, torch.Tensor):
                fail(f"{call} returned a list of tensors; return Python floats (loss.item()): a tensor that requires "
                     "grad also keeps the whole graph of its micro-batch alive")
            if not isinstance(value, float):
                fail(f"{call} returned a list holding {show(value)} (a {type_name(value)}); each entry must be a float")
        steps = len(observed["steps"])
        if steps != windows:
            fail(f"{call} returned {windows} floats but made {steps} optimizer steps: the list holds one loss per "
                 f"optimizer step\n  likely cause: {_steps_cause(steps, n_micro, windows)}")


@ACCUMULATION.check(points=1)
def losses_are_window_means(student: Submission, device: torch.device) -> None:
    """Each returned loss is the mean of its window's micro-batch losses, measured before the window's step."""
    # lr=0: the parameters stay put, so the judge knows every micro-batch's loss. lr > 0: the losses must be
    # measured before each window's step, on the student's own trajectory: a step pre-hook evaluates the
    # window's micro-batches just before the step and a post-hook just after, so a gradient slip does not show
    # here as well: only when the losses are measured counts.
    still = _spec(n_micro=6, accum=3, options={"lr": 0.0})
    moving = _spec(n_micro=6, accum=3, options={"lr": 0.1}, measure=True)
    observed_still, observed_moving = (_trained(o, spec) for o, spec in
                                       zip(_observe(student, [still, moving], device), [still, moving]))
    expected = _ordinary_training(still, device)
    values = _floats(observed_still["result"], still)
    windows = len(expected.losses)
    if not _same_floats(values, expected.losses):
        micro, accum = expected.micro_losses, still.accum
        running = [sum(sum(m) for m in micro[:k + 1]) / accum for k in range(len(micro))]
        candidates = [
            ([sum(m) for m in micro], "the window's losses were summed; return their mean (divide by accum_steps)"),
            ([e / accum for e in expected.losses], "the losses already divided by accum_steps were averaged again: "
                                                   "keep loss.item() from before the division"),
            ([m[-1] for m in micro], "only the last micro-batch's loss of each window was kept; average all of them"),
            ([x for m in micro for x in m], "one loss per micro-batch was returned; return one per window (their "
                                            "mean)"),
            (running, "the running total of the losses is not reset between windows: start each window's total at 0"),
        ]
        cause = next((why for wrong, why in candidates if _same_floats(values, wrong)), None)
        fail_mismatch("the returned losses are not the windows' mean losses",
                      given=still.describe() + " (lr=0: the parameters stay put)",
                      expected=_show_floats(expected.losses), got=_show_floats(values),
                      where=_float_where(values, expected.losses), cause=cause)
    if len(observed_still["steps"]) != windows:
        fail(f"{_call(still)} returned the right losses but made {len(observed_still['steps'])} optimizer steps\n"
             f"  likely cause: {_steps_cause(len(observed_still['steps']), len(still.data), windows)}")
    values = _floats(observed_moving["result"], moving)
    if len(observed_moving["before"]) != windows:
        steps = len(observed_moving["before"])
        fail(f"{_call(moving)} made {steps} optimizer steps, so its losses cannot be one per window\n"
             f"  likely cause: {_steps_cause(steps, len(moving.data), windows)}")
    before = [_mean(m) for m in observed_moving["before"]]
    if _same_floats(values, before):
        return
    after = [_mean(m) for m in observed_moving["after"]]
    initial = [_mean(m) for m in _ordinary_training(moving, device).initial_micro_losses]
    cause = None
    if not _same_floats(after, before) and _same_floats(values, after):
        cause = ("the losses were computed after optimizer.step(), with the updated parameters; return the mean of the "
                 "losses of the forward passes that produced the window's gradient (loss.item() before the step)")
    elif not _same_floats(initial, before) and _same_floats(values, initial):
        cause = ("every window's loss was computed with the initial parameters (before any training); measure each "
                 "window's losses in the forward passes that produce its gradient")
    fail_mismatch("with a learning rate > 0, the returned losses are not the windows' mean losses before each step",
                  given=moving.describe() + " (lr=0.1: the parameters move at every step)",
                  expected=_show_floats(before), got=_show_floats(values), where=_float_where(values, before),
                  cause=cause)
    _expect_generated(student, device, 5, "the losses or parameters of a generated call are wrong")


@ACCUMULATION.check(points=1)
def plain_sgd_matches(student: Submission, device: torch.device) -> None:
    """With plain SGD the parameters equal those of ordinary training on the concatenated windows."""
    _expect_training(student, device, [
        (_spec(n_micro=12, accum=3, options={"lr": 0.1}), "after training with plain SGD, the parameters are wrong"),
        (_spec("classifier", n_micro=6, accum=2, options={"lr": 0.2}, loss="cross_entropy", dtype=torch.float32),
         "after training a float32 classifier with plain SGD, the parameters are wrong"),
    ])
    _expect_generated(student, device, 6, "after training with plain SGD, a generated call is wrong",
                      optimizers="plain", leftovers=0.0)


@ACCUMULATION.check(points=1)
def momentum_sgd_matches(student: Submission, device: torch.device) -> None:
    """With SGD with momentum (optimizer state) the parameters equal those of ordinary training."""
    _expect_training(student, device, [
        (_spec(n_micro=8, accum=2, options={"lr": 0.05, "momentum": 0.9}),
         "after training with SGD with momentum, the parameters are wrong"),
        (_spec(n_micro=6, accum=3, loss="smooth_l1",
               options={"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
         "after training with SGD with Nesterov momentum and weight decay, the parameters are wrong"),
    ])
    _expect_generated(student, device, 5, "after training with SGD with momentum, a generated call is wrong",
                      optimizers="momentum", leftovers=0.0)


@ACCUMULATION.check(points=1)
def adam_matches(student: Submission, device: torch.device) -> None:
    """With Adam (optimizer state), and AdamW with param groups and a frozen layer, the parameters are right."""
    _expect_training(student, device, [
        (_spec(n_micro=8, accum=4, optimizer="Adam", options={"lr": 0.01}),
         "after training with Adam, the parameters are wrong"),
        (_spec("frozen", n_micro=6, accum=2, optimizer="AdamW", options={"lr": 0.01, "weight_decay": 0.1},
               per_layer=True),
         "after training with AdamW (param groups, a frozen layer), the parameters are wrong"),
    ])
    _expect_generated(student, device, 5, "after training with an adaptive optimizer, a generated call is wrong",
                      optimizers="adaptive", leftovers=0.0)


@ACCUMULATION.check(points=1)
def leftover_grads_ignored(student: Submission, device: torch.device) -> None:
    """Gradients left in .grad before the call do not leak into the first step."""
    _expect_training(student, device, [
        (_spec(n_micro=6, accum=2, options={"lr": 0.1}, junk=True),
         "with .grad already set before the call, the parameters are wrong"),
        (_spec(n_micro=3, accum=1, optimizer="Adam", options={"lr": 0.01}, junk=True),
         "with .grad already set before the call, the parameters are wrong"),
    ])
    _expect_generated(student, device, 6, "with .grad (and optimizer state) left from before the call, a generated "
                      "call is wrong", leftovers=1.0)


@ACCUMULATION.check(points=1)
def edge_accum_steps(student: Submission, device: torch.device) -> None:
    """accum_steps=1 is plain training; accum_steps=len(micro_batches) makes a single step."""
    _expect_training(student, device, [
        (_spec(n_micro=n_micro, accum=accum, options={"lr": 0.1}), f"{what}, the parameters are wrong")
        for n_micro, accum, what in [(3, 1, "with accum_steps=1 (plain training, a step per micro-batch)"),
                                     (4, 4, "with accum_steps equal to the number of micro-batches (one step)"),
                                     (1, 1, "with a single micro-batch and accum_steps=1")]
    ])
    _expect_generated(student, device, 5, "at the edges of accum_steps (1, all micro-batches, no micro-batch at all), "
                      "a generated call is wrong", relations=("one_step", "plain", "empty"))
