"""amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype, max_norm): one mixed-precision step.

A training set-up (model, optimizer, ``GradScaler``, loss function, data) is built from a description by
:func:`build_setup`, the same code in the runner and in the judge, so both start from identical numbers.
The runner calls the student's step a few times and records, after every call, what it returned, every
parameter, the optimizer's state, the scaler's state and whether ``optimizer.step`` ran (a step pre-hook).
The loss function is a probe: it notes whether autocast is on (and in which dtype) while the forward's
loss is computed, and, through a hook on the loss, whether autocast is still on during backward; on the
steps a check chooses, it injects an inf or NaN into the gradients. The judge runs the specified sequence
on its own copy and compares bit for bit; when they differ, the wrong sequences students write are run
too, and one of them is named when it, and only it, matches.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from graders.ch03_modules.glu import Live, observe, observing
from graders.compare import close_number, difference, dtype_name, one_torch_thread, show, show_number
from graders.outcomes import fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

AMP_TRAIN_STEP = exercise("amp_train_step", chapter="06_amp", names=["amp_train_step"], warm_compiler_stack=True)

NORM_RTOL = 1e-5
LOSS_RTOL = 1e-6


# ==================================================================================================
# The set-up, built the same way in the runner and in the judge
# ==================================================================================================
class AmpNet(nn.Module):
    """A small MLP; optionally with a frozen head the optimizer does not hold and a parameter forward never uses."""

    def __init__(self, frozen_extras: bool) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
        self.frozen_extras = frozen_extras
        if frozen_extras:
            self.head = nn.Linear(3, 3)
            self.head.requires_grad_(False)
            self.unused = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return self.head(y) if self.frozen_extras else y


class ProbedLoss:
    """mse_loss that records the autocast state around it and, on chosen calls, poisons the gradients."""

    def __init__(self, device_type: str, poison: dict[int, float], poisoned: torch.Tensor | None = None) -> None:
        self.device_type = device_type
        self.poison = poison
        self.calls: list[dict[str, Any]] = []
        self.poisons_a_parameter = poisoned is not None
        if poisoned is not None:  # only this parameter's gradient is poisoned, on the chosen calls
            poisoned.register_hook(self._poison_parameter)

    def _poison_parameter(self, grad: torch.Tensor) -> torch.Tensor:
        value = self.poison.get(len(self.calls) - 1)
        if value is None:
            return grad
        grad = grad.clone()
        grad.view(-1)[0] = value
        return grad

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        call = {"autocast": torch.is_autocast_enabled(self.device_type),
                "autocast_dtype": dtype_name(torch.get_autocast_dtype(self.device_type)),
                "outputs_dtype": dtype_name(outputs.dtype), "backward_autocast": None}
        self.calls.append(call)
        value = self.poison.get(len(self.calls) - 1)
        if value is not None and outputs.requires_grad and not self.poisons_a_parameter:
            outputs.register_hook(lambda grad: grad * value)
        loss = F.mse_loss(outputs, targets)
        if loss.requires_grad:
            def note(grad: torch.Tensor) -> None:
                call["backward_autocast"] = torch.is_autocast_enabled(self.device_type)

            loss.register_hook(note)
        return loss


def build_setup(config: dict[str, Any], device: str) -> dict[str, Any]:
    torch.manual_seed(config.get("seed", 0))
    model = AmpNet(config.get("frozen_extras", False))
    if config.get("all_frozen"):
        model.requires_grad_(False)
    model.to(device)
    held = [p for name, p in model.named_parameters() if not name.startswith("head.")]
    kind = config["optimizer"]
    if kind == "sgd":
        optimizer = torch.optim.SGD(held, lr=0.05, momentum=0.9)
    elif kind == "sgd_groups":  # the first layer in a group of its own, with its own learning rate
        first = [p for name, p in model.named_parameters() if name.startswith("body.0.")]
        optimizer = torch.optim.SGD([{"params": first, "lr": 0.2}, {"params": [p for p in held if all(
            p is not q for q in first)]}], lr=0.05, momentum=0.9)
    elif kind == "adam":
        optimizer = torch.optim.Adam(held, lr=1e-3)
    else:
        optimizer = torch.optim.AdamW(held, lr=1e-3, weight_decay=0.1)
    scaler = torch.amp.GradScaler(torch.device(device).type, **config["scaler"])
    inputs = torch.randn(config.get("batch", 8), 6)
    targets = torch.randn(config.get("batch", 8), 3) * config.get("target_scale", 1.0)
    if config.get("all_frozen"):
        inputs.requires_grad_(True)  # the loss still has a graph, but no parameter gets a gradient
    stale = None
    if config.get("stale"):
        stale = [torch.randn(p.shape) * 3 for p in model.parameters()]
        for p, g in zip(model.parameters(), stale):
            p.grad = g.to(device)
    # "poison_bias": one entry of the last layer's bias gradient, so that the other gradients stay finite
    loss_fn = ProbedLoss(torch.device(device).type, {int(k): v for k, v in config.get("poison", {}).items()},
                         model.body[4].bias if config.get("poison_bias") else None)
    return {"model": model, "optimizer": optimizer, "scaler": scaler, "loss_fn": loss_fn,
            "inputs": inputs.to(device), "targets": targets.to(device)}


def step_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    kwargs = {}
    if "dtype" in config:
        kwargs["dtype"] = config["dtype"]
    if "max_norm" in config:
        kwargs["max_norm"] = config["max_norm"]
    return kwargs


def snapshot(setup: dict[str, Any]) -> dict[str, Any]:
    """Parameters, optimizer state and scaler state, copied."""
    optimizer_state = {}
    for index, state in setup["optimizer"].state_dict()["state"].items():
        optimizer_state[str(index)] = {key: value.detach().to("cpu").clone() if isinstance(value, torch.Tensor)
                                       else value for key, value in state.items()}
    scaler = setup["scaler"]
    return {"parameters": {name: p.detach().to("cpu").clone() for name, p in setup["model"].named_parameters()},
            "optimizer": optimizer_state,
            "scaler": dict(scaler.state_dict()),
            # An enabled scaler makes its scale tensor on its first scaler.scale(...): None means never used.
            "scaler_used": not scaler.is_enabled() or getattr(scaler, "_scale", None) is not None}


class _StepCounter:
    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.count = 0
        self.handle = optimizer.register_step_pre_hook(self)

    def __call__(self, *_: Any) -> None:
        self.count += 1


# ==================================================================================================
# The specified step and the wrong ones students write (in the judge)
# ==================================================================================================
@judge_only
def _norm(model: nn.Module) -> float:
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    return float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0


@judge_only
def _wrong_norms(model: nn.Module) -> dict[str, float]:
    """Norms students take instead of the total 2-norm of the gradients, with what each one is."""
    grads = [p.grad.double() for p in model.parameters() if p.grad is not None]
    if not grads:
        return {}
    flat = torch.cat([g.reshape(-1) for g in grads])
    values = torch.cat([p.detach().double().reshape(-1) for p in model.parameters()])
    return {"the largest |gradient| (norm_type=inf); the spec's norm is the 2-norm": float(flat.abs().max()),
            "the 1-norm (sum of |gradient|); the spec's norm is the 2-norm": float(flat.abs().sum()),
            "the per-parameter 2-norms were added; take the 2-norm of all gradients together (the 2-norm of the "
            "per-parameter norms)": float(sum(torch.linalg.vector_norm(g) for g in grads)),
            "this is the norm of the parameters themselves; take the norm of their .grad": float(
                torch.linalg.vector_norm(values)),
            "the square root is missing: this is the sum of squared gradients": float(flat.pow(2).sum())}


@judge_only
def reference_step(setup: dict[str, Any], dtype: torch.dtype = torch.float16, max_norm: float | None = None,
                   variant: str | None = None) -> tuple[float, float, bool]:
    model, optimizer, scaler = setup["model"], setup["optimizer"], setup["scaler"]
    inputs, targets = setup["inputs"], setup["targets"]
    if variant != "no_zero_grad":
        optimizer.zero_grad()
    with torch.autocast(inputs.device.type, dtype=dtype, enabled=variant != "no_autocast"):
        loss = setup["loss_fn"](model(inputs), targets)
    scaler.scale(loss).backward() if variant != "unscaled_backward" else loss.backward()
    if variant == "clip_before_unscale" and max_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if variant != "no_unscale":
        scaler.unscale_(optimizer)
    norm = _norm(model)
    setup["wrong_norms"] = _wrong_norms(model) if variant is None else {}
    if max_norm is not None and variant != "clip_before_unscale":
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    counter = _StepCounter(optimizer)
    try:
        if variant == "optimizer_step":
            optimizer.step()
        else:
            scaler.step(optimizer)
    finally:
        counter.handle.remove()
    if variant != "no_update":
        scaler.update()
    return loss.item(), norm, counter.count == 0


@judge_only
def reference_run(config: dict[str, Any], device: torch.device, variant: str | None = None) -> list[dict[str, Any]]:
    with one_torch_thread():
        setup = build_setup(config, str(device))
        steps = []
        for _ in range(config["steps"]):
            try:
                loss, norm, skipped = reference_step(setup, variant=variant, **step_kwargs(config))
            except Exception:  # noqa: BLE001 - a wrong sequence may fail outright; it then matches nothing
                if variant is None:
                    raise
                return []
            steps.append({"returned": [loss, norm, skipped], "wrong_norms": setup.get("wrong_norms", {}),
                          **snapshot(setup)})
        return steps


CLIP_BEFORE_UNSCALE = ("the gradients were clipped before scaler.unscale_(optimizer): they were still multiplied by "
                       "the scale, so clipping cut them far too much; unscale first, then clip")
VARIANT_CAUSES = {
    "clip_before_unscale": CLIP_BEFORE_UNSCALE,
    "optimizer_step": "optimizer.step() was called instead of scaler.step(optimizer): a step with inf/NaN gradients "
                      "is taken instead of skipped",
    "no_update": "scaler.update() is missing: the scale never grows or backs off",
    "no_autocast": "the forward did not run under torch.autocast(inputs.device.type, dtype=dtype)",
    "no_zero_grad": "the gradients were not zeroed at the start of the step: old gradients were added to the new ones",
    # Without unscale_, clip_grad_norm_ clips the scaled gradients and scaler.step unscales them afterwards: the
    # same parameters as clipping before unscale_, so the same words.
    "no_unscale": CLIP_BEFORE_UNSCALE,
    "unscaled_backward": "loss.backward() was called on the unscaled loss; call scaler.scale(loss).backward()",
}


# ==================================================================================================
# Inside the runner
# ==================================================================================================
def _returned_facts(value: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"type": type(value).__name__, "is_tuple": isinstance(value, tuple)}
    items = list(value) if isinstance(value, (tuple, list)) else None
    facts["length"] = len(items) if items is not None else None
    if items is not None:
        facts["items"] = [{"type": f"{type(v).__module__}.{type(v).__name__}".removeprefix("builtins.")
                           .removeprefix("torch."),
                           # float subclasses (NumPy's float64 is one) count as floats; only a real bool is a bool
                           "kind": "bool" if isinstance(v, bool) else "float" if isinstance(v, float) else
                           "int" if isinstance(v, int) else "other",
                           "value": float(v) if isinstance(v, (int, float)) else
                           float(v.detach().float().reshape(-1)[0]) if isinstance(v, torch.Tensor) and v.numel() == 1
                           else None} for v in items]
    return facts


@observing
def _train(live: Live, config: dict[str, Any], device: str) -> None:
    setup = build_setup(config, device)
    step = live.student.get("amp_train_step")
    kwargs = step_kwargs(config)
    live.seen["steps"] = []
    for i in range(config["steps"]):
        counter = _StepCounter(setup["optimizer"])
        try:
            returned = live.run(f"step {i + 1}", step, setup["model"], setup["optimizer"], setup["scaler"],
                                setup["loss_fn"], setup["inputs"], setup["targets"], **kwargs)
        finally:
            counter.handle.remove()
            live.seen["probe"] = setup["loss_fn"].calls
        live.seen["steps"].append({"returned": _returned_facts(returned), "optimizer_steps": counter.count,
                                   **snapshot(setup)})


# ==================================================================================================
# Judging
# ==================================================================================================
def config_label(config: dict[str, Any]) -> str:
    scaler = ", ".join(f"{k}={v!r}" for k, v in config["scaler"].items())
    optimizer = {"sgd": "SGD(lr=0.05, momentum=0.9)", "adam": "Adam(lr=1e-3)",
                 "sgd_groups": "SGD with two parameter groups (the first layer at lr=0.2, the rest at lr=0.05), "
                               "momentum=0.9",
                 "adamw": "AdamW(lr=1e-3, weight_decay=0.1)"}[config["optimizer"]]
    model = "an MLP 6-16-16-3 with ReLU"
    if config.get("frozen_extras"):
        model += " plus a frozen Linear head the optimizer does not hold and a parameter forward never uses"
    if config.get("all_frozen"):
        model += " with every parameter frozen (inputs require grad)"
    kwargs = ", ".join(f"{k}={dtype_name(v) if isinstance(v, torch.dtype) else v!r}"
                       for k, v in step_kwargs(config).items())
    extras = []
    if config.get("poison"):
        extras.append(("one entry of the last bias's gradient" if config.get("poison_bias") else "gradients")
                      + " poisoned with " + ", ".join(f"{'inf' if math.isinf(v) else 'NaN'} in step {int(k) + 1}"
                                                     for k, v in config["poison"].items()))
    if config.get("stale"):
        extras.append("old gradients left on every parameter before the first call")
    return (f"{config['steps']} calls of amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets"
            f"{', ' + kwargs if kwargs else ''}) with {model}, {optimizer}, GradScaler(device, {scaler}), "
            f"loss_fn = mse_loss" + (f"; {'; '.join(extras)}" if extras else ""))


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())


def _same_state(got: dict[str, Any], right: dict[str, Any]) -> bool:
    if got.keys() != right.keys():
        return False
    for key in right:
        a, b = got[key], right[key]
        if isinstance(b, dict):
            if not isinstance(a, dict) or not _same_state(a, b):
                return False
        elif isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor) or not _same(a, b):
                return False
        elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            return False
    return True


def _same_number(got: float, expected: float, rtol: float) -> bool:
    # "inf or NaN when a gradient overflowed": either one is right whenever the expected value is not finite.
    return close_number(got, expected, rtol=rtol, atol=1e-30, any_nonfinite=True)


class _Judgement:
    """One run of the student's step against the specified sequence."""

    def __init__(self, config: dict[str, Any], seen: Any, device: torch.device) -> None:
        self.config, self.seen, self.device = config, seen, device
        self.label = config_label(config)
        self.expected = reference_run(config, device)
        with one_torch_thread():
            self.initial = snapshot(build_setup(config, str(device)))
        self.steps = seen["steps"]
        if len(self.steps) < config["steps"]:
            seen.raise_error()
            seen["missing step"]

    def variant_cause(self, matches: Any) -> str | None:
        """The wrong sequence whose outcome ``matches`` (a predicate on its steps) and the right one's does not."""
        if matches(self.expected):
            return None
        found = {cause for variant, cause in VARIANT_CAUSES.items() if (run := reference_run(self.config, self.device,
                                                                                              variant)) and matches(run)}
        return found.pop() if len(found) == 1 else None

    def returned(self, i: int) -> tuple[float, float, bool]:
        facts = self.steps[i]["returned"]
        given = f"{self.label}: call {i + 1}"
        if not facts["is_tuple"] or facts["length"] != 3:
            fail_mismatch("amp_train_step must return a tuple (loss, grad_norm, skipped)", given=given,
                          expected="a tuple of 3: (float, float, bool)",
                          got=f"a {facts['type']}" + (f" of {facts['length']} items" if facts["length"] is not None
                                                      else ""),
                          cause="a list was returned; return the tuple (loss, grad_norm, skipped)"
                          if facts["type"] == "list" and facts["length"] == 3 else None)
        names = ["loss", "grad_norm", "skipped"]
        wanted = ["float", "float", "bool"]
        for name, want, item in zip(names, wanted, facts["items"]):
            if item["kind"] != want:
                cause = None
                if item["type"] == "Tensor":
                    cause = f"{name} is a tensor: return a Python {want} (" + (".item())" if want == "float" else
                                                                                 "bool(...))")
                elif want == "float" and item["kind"] == "int":
                    cause = f"{name} is an int; return a float (0.0, not 0)"
                elif item["type"].startswith("numpy."):
                    cause = f"{name} is a NumPy {item['type'][6:]}: return a Python {want} ({want}(...))"
                fail_mismatch(f"{name} must be a Python {want}", given=given, expected=f"a {want}",
                              got=f"a {item['type']}", cause=cause)
        return facts["items"][0]["value"], facts["items"][1]["value"], bool(facts["items"][2]["value"])

    def judge_returned(self, i: int) -> None:
        loss, norm, skipped = self.returned(i)
        right_loss, right_norm, right_skipped = self.expected[i]["returned"]
        given = f"{self.label}: call {i + 1}"
        if skipped != right_skipped:
            stepped = self.steps[i]["optimizer_steps"]
            cause = None
            if not right_skipped and not self.config["scaler"].get("enabled", True):
                cause = ("a disabled scaler (enabled=False) never skips: scaler.step calls optimizer.step() whatever "
                         "the gradients; skipped must say whether optimizer.step() ran")
            elif right_skipped and stepped == 0:
                cause = ("the step was skipped but reported as taken: skipped must be True exactly when scaler.step "
                         "did not call optimizer.step()")
            elif not right_skipped and stepped:
                cause = "the step was taken but reported as skipped"
            fail_mismatch("skipped is wrong", given=given, expected=right_skipped, got=skipped, cause=cause)
        if not _same_number(loss, right_loss, LOSS_RTOL):
            scale = self.scale_before(i)
            cause = ("this is the scaled loss (loss * scale); return the loss itself" if scale and scale != 1
                     and _same_number(loss, right_loss * scale, LOSS_RTOL) else None)
            fail_mismatch("the returned loss is wrong", given=given, expected=show_number(right_loss),
                          got=show_number(loss), cause=cause)
        if not _same_number(norm, right_norm, NORM_RTOL):
            scale = self.scale_before(i)
            max_norm = self.config.get("max_norm")
            cause = None
            if scale and scale != 1 and _same_number(norm, right_norm * scale, NORM_RTOL):
                cause = (f"the norm was taken before scaler.unscale_(optimizer): it is {show_number(scale)} (the "
                         "scale) times too large")
            elif max_norm is not None and right_norm > max_norm and _same_number(norm, max_norm, 1e-3):
                cause = "the norm was taken after clipping: take it after unscale_ and before clip_grad_norm_"
            elif right_norm == 0.0:
                cause = "no parameter has a gradient here: the norm is 0.0"
            else:
                named = [text for text, wrong in self.expected[i]["wrong_norms"].items()
                         if _same_number(norm, wrong, NORM_RTOL) and not _same_number(right_norm, wrong, NORM_RTOL)]
                cause = named[0] if len(named) == 1 else None
            fail_mismatch("grad_norm is wrong", given=given,
                          expected=f"{show_number(right_norm)} (the total 2-norm of the gradients after unscale_, "
                                   f"within a relative {NORM_RTOL:g})" if math.isfinite(right_norm) else
                          "inf or NaN (a gradient overflowed)", got=show_number(norm), cause=cause)

    def scale_before(self, i: int) -> float | None:
        if not self.config["scaler"].get("enabled", True):
            return 1.0
        if i == 0:
            return float(self.config["scaler"].get("init_scale", 2.0 ** 16))
        return self.expected[i - 1]["scaler"].get("scale")

    def judge_state(self, i: int) -> None:
        got, right = self.steps[i], self.expected[i]
        given = f"{self.label}: after call {i + 1}"
        if not got["scaler_used"]:
            fail(f"{given}: the scaler passed in was never used (scaler.scale(...) was not called on it), so its scale "
                 "never changes\n  likely cause: a GradScaler of your own was made inside the step; use the `scaler` "
                 "argument: its scale must carry over from one step to the next")
        for name, value in right["parameters"].items():
            mine = got["parameters"].get(name)
            if mine is None or not _same(mine, value):
                cause = self.variant_cause(lambda run: len(run) > i and _same(got["parameters"][name],
                                                                               run[i]["parameters"][name]))
                if cause is None and got["optimizer_steps"] > 1:
                    cause = (f"optimizer.step() ran {got['optimizer_steps']} times in one call (scaler.step twice, or "
                             "optimizer.step() as well as scaler.step): step once, through scaler.step(optimizer)")
                if cause is None and right["returned"][2] and got["optimizer_steps"]:
                    cause = ("optimizer.step() ran although a gradient was inf/NaN: call scaler.step(optimizer), "
                             "which skips such steps")
                before = self.steps[i - 1]["parameters"][name] if i else self.initial["parameters"][name]
                if cause is None and mine is not None and _same(mine, before) and not right["returned"][2]:
                    cause = "the parameters did not change: no optimizer step was taken"
                fail_mismatch(f"parameter {name} differs from the specified step", given=given, expected=show(value),
                              got=show(mine) if mine is not None else "missing",
                              where=difference(mine, value) if mine is not None and mine.shape == value.shape else None,
                              cause=cause)
        if not _same_state(got["optimizer"], right["optimizer"]):
            cause = self.variant_cause(lambda run: len(run) > i and _same_state(got["optimizer"], run[i]["optimizer"]))
            fail_mismatch("the optimizer's state differs from the specified step", given=given,
                          expected=_state_text(right["optimizer"]), got=_state_text(got["optimizer"]), cause=cause)
        if got["scaler"] != right["scaler"]:
            cause = self.variant_cause(lambda run: len(run) > i and run[i]["scaler"] == got["scaler"])
            if cause is None and got["scaler"].get("scale") == self.scale_before(i):
                cause = "the scale did not change: scaler.update() must be called once per step"
            fail_mismatch("the scaler's state differs from the specified step", given=given,
                          expected=_scaler_text(right["scaler"]), got=_scaler_text(got["scaler"]), cause=cause)

    def judge_all(self, first: str = "state") -> None:
        for i in range(self.config["steps"]):
            if first == "state":
                self.judge_state(i)
                self.judge_returned(i)
            else:
                self.judge_returned(i)
                self.judge_state(i)


def _state_text(state: dict[str, Any]) -> str:
    if not state:
        return "no state"
    first = next(iter(state.values()))
    return f"state for {len(state)} parameters with entries {sorted(first)}"


def _scaler_text(state: dict[str, Any]) -> str:
    if not state:
        return "a disabled scaler (no state)"
    return f"scale {show_number(state.get('scale'))}, growth tracker {state.get('_growth_tracker')}"


def _judge(student: Submission, config: dict[str, Any], device: torch.device, first: str = "state") -> _Judgement:
    seen = observe(student, _train, config, str(device))
    judgement = _Judgement(config, seen, device)
    judgement.judge_all(first)
    return judgement


GROWING = {"init_scale": 2.0 ** 10, "growth_interval": 1}


@AMP_TRAIN_STEP.check(points=2)
def matches_reference_step(student: Submission, device: torch.device) -> None:
    """After each call, parameters, optimizer state and the scaler's state equal the specified sequence's bit for bit."""
    # Targets far from the outputs give gradient norms well above 1, so clipping that was not asked for shows.
    for config in [{"optimizer": "sgd", "scaler": GROWING, "steps": 3, "target_scale": 30.0},
                   {"optimizer": "adam", "scaler": {"init_scale": 2.0 ** 12, "growth_interval": 2}, "steps": 3,
                    "max_norm": None, "frozen_extras": True, "seed": 1},
                   {"optimizer": "adamw", "scaler": {"init_scale": 2.0 ** 8, "growth_interval": 1}, "steps": 2,
                    "dtype": torch.bfloat16, "seed": 2}]:
        _judge(student, config, device)


@AMP_TRAIN_STEP.check(points=1)
def returns_unscaled_loss_and_norm(student: Submission, device: torch.device) -> None:
    """(loss, grad_norm, skipped): the unscaled loss, the norm after unscale_ and before clipping, 0.0 without grads."""
    for config in [{"optimizer": "sgd", "scaler": {"init_scale": 2.0 ** 14, "growth_interval": 1000}, "steps": 2,
                    "max_norm": 0.05, "seed": 3},
                   {"optimizer": "adam", "scaler": {"init_scale": 2.0 ** 9, "growth_interval": 1}, "steps": 2,
                    "frozen_extras": True, "seed": 4},
                   {"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 1, "dtype": torch.bfloat16,
                    "all_frozen": True, "seed": 5}]:
        _judge(student, config, device, first="returned")


@AMP_TRAIN_STEP.check(points=1)
def clips_after_unscaling(student: Submission, device: torch.device) -> None:
    """With max_norm, the unscaled gradients are clipped (after unscale_, before the step)."""
    for config in [{"optimizer": "sgd", "scaler": GROWING, "steps": 2, "max_norm": 0.1, "seed": 6},
                   {"optimizer": "adamw", "scaler": {"init_scale": 2.0 ** 15}, "steps": 2, "max_norm": 1e-3,
                    "frozen_extras": True, "seed": 7},
                   # max_norm=0.0 is given (not None): every gradient is clipped to zero
                   {"optimizer": "adamw", "scaler": GROWING, "steps": 2, "max_norm": 0.0, "seed": 16}]:
        _judge(student, config, device)


@AMP_TRAIN_STEP.check(points=2)
def skips_overflowing_step(student: Submission, device: torch.device) -> None:
    """An inf/NaN gradient: skipped is True, parameters and optimizer state unchanged, the scale backed off."""
    for config in [{"optimizer": "sgd", "scaler": GROWING, "steps": 3, "poison": {"1": float("inf")}, "seed": 8},
                   {"optimizer": "sgd", "scaler": GROWING, "steps": 2, "poison": {"0": float("inf")},
                    "poison_bias": True, "seed": 18},
                   {"optimizer": "adam", "scaler": {"init_scale": 2.0 ** 12, "growth_interval": 3}, "steps": 3,
                    "poison": {"0": float("nan"), "2": float("inf")}, "max_norm": 0.5, "seed": 9}]:
        judgement = _judge(student, config, device, first="returned")
        for i, step in enumerate(judgement.expected):
            if step["returned"][2] and i and not _same_state(judgement.steps[i]["parameters"],
                                                             judgement.steps[i - 1]["parameters"]):
                fail(f"{judgement.label}: call {i + 1} was skipped, but the parameters changed")


@AMP_TRAIN_STEP.check(points=1)
def disabled_scaler_never_skips(student: Submission, device: torch.device) -> None:
    """With GradScaler(enabled=False) in bfloat16 every call steps (even on NaN gradients) and reports skipped False."""
    for config in [{"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 3, "dtype": torch.bfloat16,
                    "poison": {"1": float("nan")}, "seed": 10},
                   # One NaN entry in one gradient: the step spreads it to that parameter only.
                   {"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 2, "dtype": torch.bfloat16,
                    "poison": {"0": float("nan")}, "poison_bias": True, "seed": 17},
                   {"optimizer": "adam", "scaler": {"enabled": False}, "steps": 2, "dtype": torch.bfloat16,
                    "max_norm": 0.2, "seed": 11}]:
        _judge(student, config, device, first="returned")


@AMP_TRAIN_STEP.check(points=1)
def autocast_forward_only(student: Submission, device: torch.device) -> None:
    """The forward and the loss run under autocast on inputs.device.type in the given dtype; backward outside it."""
    for config in [{"optimizer": "sgd", "scaler": GROWING, "steps": 1, "seed": 12},
                   {"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 1, "dtype": torch.bfloat16, "seed": 13}]:
        seen = observe(student, _train, config, str(device))
        probe = seen.get("probe") or []
        label = config_label(config)
        dtype = dtype_name(config.get("dtype", torch.float16))
        if not probe:
            seen.raise_error()
            fail(f"{label}: loss_fn was never called; the step computes loss_fn(model(inputs), targets)")
        call = probe[0]
        if not call["autocast"]:
            fail(f"{label}: loss_fn ran with autocast off on {device.type} (the model's output was "
                 f"{call['outputs_dtype']})\n  likely cause: the forward and the loss must run inside "
                 f"torch.autocast(inputs.device.type, dtype=dtype); a hard-coded device type ('cuda' / 'cpu') is off "
                 f"on other devices")
        if call["autocast_dtype"] != dtype or call["outputs_dtype"] != dtype:
            fail(f"{label}: autocast ran in {call['autocast_dtype']} (the model's output was {call['outputs_dtype']}), "
                 f"not {dtype}\n  likely cause: pass dtype=dtype to torch.autocast (its default on the CPU is bfloat16, "
                 "on CUDA float16)")
        if call["backward_autocast"] is None:
            seen.raise_error()
            fail(f"{label}: no backward went through the loss loss_fn returned; call scaler.scale(loss).backward()")
        if call["backward_autocast"]:
            fail(f"{label}: backward ran inside the autocast block\n  likely cause: scaler.scale(loss).backward() is "
                 "indented under `with torch.autocast(...)`; only the forward and the loss belong there")
        _Judgement(config, seen, device).judge_all()


@AMP_TRAIN_STEP.check(points=1)
def zeroes_stale_gradients(student: Submission, device: torch.device) -> None:
    """Gradients left over from before the call are cleared first; they never reach the step."""
    for config in [{"optimizer": "sgd", "scaler": GROWING, "steps": 2, "stale": True, "seed": 14},
                   {"optimizer": "sgd_groups", "scaler": GROWING, "steps": 2, "stale": True, "seed": 19},
                   {"optimizer": "adam", "scaler": {"enabled": False}, "steps": 1, "dtype": torch.bfloat16,
                    "stale": True, "seed": 15}]:
        _judge(student, config, device)
