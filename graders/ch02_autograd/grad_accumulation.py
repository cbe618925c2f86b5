"""train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps) -> the windows' mean losses.

The model, its micro-batches, the loss function and the optimizer are built *inside the student's
process* from one pickled :class:`Spec` (a state dict, the data, the optimizer's name and options), so
the optimizer the student receives is over that very model's parameters. The judge builds the same
objects from the same spec and trains them the ordinary way (one forward and backward per concatenated
window). The scenario observes the parameters after the call, what it returned, and (through the
optimizer's step hooks) the gradient each optimizer step used and the window's losses just before and
after each step.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import NoReturn

import torch
import torch.nn.functional as F
from torch import nn

from graders import wire
from graders.compare import difference, dtype_name, one_torch_thread, show, show_number, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise
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


_ARCHITECTURES = {
    "mlp": (_mlp, "Linear(3, 5)-Tanh-Linear(5, 2)"),
    "classifier": (_classifier, "Linear(4, 6)-ReLU-Linear(6, 3)"),
    "frozen": (_frozen_first_layer,
               "Linear(3, 5)-Tanh-Linear(5, 2) with the first Linear frozen (requires_grad=False)"),
}
_LOSSES = {
    "mse": (lambda: nn.MSELoss(), "nn.MSELoss()"),
    "cross_entropy": (lambda: F.cross_entropy, "F.cross_entropy (a function)"),
    "smooth_l1": (lambda: nn.SmoothL1Loss(), "nn.SmoothL1Loss()"),
}


@dataclasses.dataclass(frozen=True)
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

    def describe(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in self.options.items())
        groups = " with one param group per layer (lr, 2*lr)" if self.per_layer else ""
        return (f"{len(self.data)} micro-batches of {_MICRO_BATCH} samples, accum_steps={self.accum}, optimizer "
                f"{self.optimizer}({options}){groups}, model {_ARCHITECTURES[self.arch][1]} in "
                f"{dtype_name(self.dtype)}, loss_fn {_LOSSES[self.loss][1]}"
                + (", and junk already in every parameter's .grad before the call" if self.junk else ""))


def _make_optimizer(model: nn.Module, spec: Spec) -> torch.optim.Optimizer:
    cls = getattr(torch.optim, spec.optimizer)
    if spec.per_layer:
        layers = [m for m in model if isinstance(m, nn.Linear) and m.weight.requires_grad]
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
            p.grad = junk.to(device=device, dtype=p.dtype).clone()
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
        steps.append(_flat_grads(params))
        params_before.append(_flat(params))
        before.append(window_losses(len(before)))

    def post_step(opt, args, kwargs):
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
          loss: str = "mse", dtype: torch.dtype = torch.float64, per_layer: bool = False, junk: bool = False,
          measure: bool = False) -> Spec:
    """A spec with a freshly initialised model and random data (the judge's RNG is seeded per check)."""
    with one_torch_thread():
        return _new_spec(arch, n_micro, accum, optimizer, options, loss, dtype, per_layer, junk, measure)


def _new_spec(arch, n_micro, accum, optimizer, options, loss, dtype, per_layer, junk, measure) -> Spec:
    model = _ARCHITECTURES[arch][0]().to(dtype)
    state = {name: p.detach().clone() for name, p in model.named_parameters()}
    features = model[0].in_features
    data = []
    for _ in range(n_micro):
        x = torch.randn(_MICRO_BATCH, features, dtype=dtype)
        y = (torch.randint(0, 3, (_MICRO_BATCH,)) if loss == "cross_entropy" else
             torch.randn(_MICRO_BATCH, model[-1].out_features, dtype=dtype))
        data.append((x, y))
    junk_grads = [torch.randn(p.shape, dtype=dtype) * 5 for p in model.parameters()] if junk else None
    return Spec(arch, dtype, state, data, loss, optimizer, dict(options or {"lr": 0.1}), per_layer, accum, junk_grads,
                measure)


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


def _ordinary_training(spec: Spec, device: torch.device) -> _Ordinary:
    with one_torch_thread():  # tiny tensors: a thread pool costs far more than it saves
        return _train_concatenated(spec, device)


def _train_concatenated(spec: Spec, device: torch.device) -> _Ordinary:
    model, micro_batches, loss_fn, optimizer = build(spec, device)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    initial = {name: p.detach().cpu().clone() for name, p in model.named_parameters()}
    windows = [micro_batches[i:i + spec.accum] for i in range(0, len(micro_batches), spec.accum)]
    first_grads = []
    for x, y in windows[0] if windows else []:
        grads = iter(torch.autograd.grad(loss_fn(model(x), y), trainable))
        first_grads.append(torch.cat([(next(grads) if p.requires_grad else torch.zeros_like(p)).reshape(-1)
                                      for p in params]).detach().cpu())
    with torch.no_grad():
        initial_micro = [[float(loss_fn(model(x), y)) for x, y in window] for window in windows]
    losses, step_grads, micro_losses, params_before, params_after = [], [], [], [], []
    for window in windows:
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
    """(where, likely cause) from what the optimizer saw at each step (recorded by step pre- and post-hooks)."""
    n_micro, dtype = len(spec.data), spec.dtype
    seen = observed["steps"]
    windows = len(expected.step_grads)
    if len(seen) != windows:
        return None, _steps_cause(len(seen), n_micro, windows)
    for k in range(windows):
        if not _close(observed["params_before"][k], expected.params_before[k], dtype):
            between = "before the first optimizer.step()" if k == 0 else f"between optimizer steps {k} and {k + 1}"
            return (f"{between} the parameters changed: "
                    f"{difference(observed['params_before'][k], expected.params_before[k])}"), _MANUAL_UPDATE
        got, right = seen[k], expected.step_grads[k]
        if k == 0 and not _close(got, right, dtype):
            return (f"at the first optimizer.step(), the gradient (all parameters, flattened): "
                    f"{difference(got, right)}"), _first_step_cause(spec, expected, got)
        if not _close(got, right, dtype):
            where = f"at optimizer step {k + 1}, the gradient: {difference(got, right)}"
            if _close(got, right + seen[k - 1], dtype):
                return where, (f"gradients are not cleared between windows: step {k + 1} also used window {k}'s "
                               "gradient; call zero_grad() before every window (or after every step), not once at "
                               "the start")
            return (f"the gradient at optimizer step {k + 1} is not the gradient of window {k + 1}'s mean loss "
                    f"({difference(got, right)})"), None
        if not _close(observed["params_after"][k], expected.params_after[k], dtype):
            return (f"optimizer step {k + 1} had the right gradient, yet the parameters after it differ: "
                    f"{difference(observed['params_after'][k], expected.params_after[k])}"), None
    return "after the last optimizer.step() the parameters changed", _MANUAL_UPDATE


def _first_step_cause(spec: Spec, expected: _Ordinary, got: torch.Tensor) -> str | None:
    accum, n_micro, dtype = spec.accum, len(spec.data), spec.dtype
    right = expected.step_grads[0]
    if not got.abs().any():
        return ("the gradients were all zero (or None) when optimizer.step() ran: zero_grad() was called between "
                "backward() and step(), or backward() was never called")
    first, last = expected.first_window_micro_grads[0], expected.first_window_micro_grads[-1]
    candidates = [
        (right * accum, "the loss was not divided by accum_steps: backward() ADDS the micro-batch gradients, so "
                        "their sum is accum_steps times the gradient of the window's mean loss"),
        (right / accum, "the gradient was divided by accum_steps twice (divide each micro-batch's loss once, or "
                        "the summed .grad once, not both)"),
        (right * accum / n_micro, "the loss was divided by len(micro_batches) instead of accum_steps (the number "
                                  "of micro-batches per window)"),
        (right / _MICRO_BATCH, "the loss was also divided by the batch size: loss_fn already returns the mean "
                               "over the micro-batch, so divide by accum_steps only"),
        (last / accum, "zero_grad() runs every micro-batch, so only the last micro-batch's gradient is left "
                       "when optimizer.step() runs; clear gradients once per window"),
        (first / accum, "optimizer.step() ran after the FIRST micro-batch of the window: step when "
                        "(i + 1) % accum_steps == 0, not when i % accum_steps == 0"),
    ]
    if spec.junk is not None:
        junk = torch.cat([j.reshape(-1) for j in spec.junk]).to(right.dtype)
        candidates.insert(0, (right + junk, "zero_grad missing at the start: the .grad left over from before the "
                                            "call leaked into the first step; clear gradients before the first "
                                            "window"))
    for wrong, cause in candidates:
        if not _close(wrong, right, dtype) and _close(got, wrong, dtype):
            return cause
    return None


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


@ACCUMULATION.check(points=1)
def plain_sgd_matches(student: Submission, device: torch.device) -> None:
    """With plain SGD the parameters equal those of ordinary training on the concatenated windows."""
    _expect_training(student, device, [
        (_spec(n_micro=12, accum=3, options={"lr": 0.1}), "after training with plain SGD, the parameters are wrong"),
        (_spec("classifier", n_micro=6, accum=2, options={"lr": 0.2}, loss="cross_entropy", dtype=torch.float32),
         "after training a float32 classifier with plain SGD, the parameters are wrong"),
    ])


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


@ACCUMULATION.check(points=1)
def leftover_grads_ignored(student: Submission, device: torch.device) -> None:
    """Gradients left in .grad before the call do not leak into the first step."""
    _expect_training(student, device, [
        (_spec(n_micro=6, accum=2, options={"lr": 0.1}, junk=True),
         "with .grad already set before the call, the parameters are wrong"),
        (_spec(n_micro=3, accum=1, optimizer="Adam", options={"lr": 0.01}, junk=True),
         "with .grad already set before the call, the parameters are wrong"),
    ])


@ACCUMULATION.check(points=1)
def edge_accum_steps(student: Submission, device: torch.device) -> None:
    """accum_steps=1 is plain training; accum_steps=len(micro_batches) makes a single step."""
    _expect_training(student, device, [
        (_spec(n_micro=n_micro, accum=accum, options={"lr": 0.1}), f"{what}, the parameters are wrong")
        for n_micro, accum, what in [(3, 1, "with accum_steps=1 (plain training, a step per micro-batch)"),
                                     (4, 4, "with accum_steps equal to the number of micro-batches (one step)"),
                                     (1, 1, "with a single micro-batch and accum_steps=1")]
    ])
