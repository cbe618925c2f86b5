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

import dataclasses
import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from graders import domain
from graders.ch03_modules.glu import Live, observe, observing
from graders.compare import close_number, difference, dtype_name, one_torch_thread, show, show_number
from graders.isolation import StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
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
    if config.get("only_bias"):  # one parameter alone gets a gradient: the last layer's bias
        model.requires_grad_(False)
        model.body[4].bias.requires_grad_(True)
    model.to(device)
    held = [p for name, p in model.named_parameters() if not name.startswith("head.")]
    kind = config["optimizer"]
    if kind == "sgd":
        optimizer = torch.optim.SGD(held, lr=0.05, momentum=0.9)
    elif kind == "sgd_groups":  # the first layer in a group of its own, with its own learning rate
        first = [p for name, p in model.named_parameters() if name.startswith("body.0.")]
        optimizer = torch.optim.SGD([{"params": first, "lr": 0.2}, {"params": [p for p in held if all(
            p is not q for q in first)]}], lr=0.05, momentum=0.9)
    elif kind == "sgd_plain":
        optimizer = torch.optim.SGD(held, lr=0.05)
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


def _step_hooks(optimizer: torch.optim.Optimizer) -> int:
    """The step hooks on ``optimizer`` and on every optimizer (a step hook the student registers and leaves behind
    runs again at every later step: it leaks, and may act)."""
    from torch.optim import optimizer as module

    return (len(optimizer._optimizer_step_pre_hooks) + len(optimizer._optimizer_step_post_hooks)
            + len(getattr(module, "_global_optimizer_pre_hooks", {}))
            + len(getattr(module, "_global_optimizer_post_hooks", {})))


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
    optimizer = {"sgd": "SGD(lr=0.05, momentum=0.9)", "sgd_plain": "SGD(lr=0.05)", "adam": "Adam(lr=1e-3)",
                 "sgd_groups": "SGD with two parameter groups (the first layer at lr=0.2, the rest at lr=0.05), "
                               "momentum=0.9",
                 "adamw": "AdamW(lr=1e-3, weight_decay=0.1)"}[config["optimizer"]]
    model = "an MLP 6-16-16-3 with ReLU"
    if config.get("frozen_extras"):
        model += " plus a frozen Linear head the optimizer does not hold and a parameter forward never uses"
    if config.get("all_frozen"):
        model += " with every parameter frozen (inputs require grad)"
    if config.get("only_bias"):
        model += " with every parameter frozen but the last layer's bias"
    kwargs = ", ".join(f"{k}={dtype_name(v) if isinstance(v, torch.dtype) else v!r}"
                       for k, v in step_kwargs(config).items())
    extras = []
    if config.get("poison"):
        extras.append(("one entry of the last bias's gradient" if config.get("poison_bias") else "gradients")
                      + " poisoned with " + ", ".join(f"{'inf' if math.isinf(v) else 'NaN'} in step {int(k) + 1}"
                                                     for k, v in config["poison"].items()))
    if config.get("stale"):
        extras.append("old gradients left on every parameter before the first call")
    if config.get("batch", 8) != 8:
        extras.append(f"a batch of {config['batch']}")
    if config.get("target_scale", 1.0) != 1.0:
        extras.append(f"targets scaled by {config['target_scale']:g} (gradient norms well above 1)")
    return (f"{config['steps']} call{'s' if config['steps'] != 1 else ''} of amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets"
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
            # Not "likely cause": a scaler of one's own and no scaler at all look the same from here.
            fail(f"{given}: the scaler passed in was never used (scaler.scale(...) was not called on it), so its scale "
                 "never changes; use the `scaler` argument (not a GradScaler of your own made inside the step, and "
                 "not the step without any scaler): its scale must carry over from one step to the next")
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


# ==================================================================================================
# Generated set-ups: the specification's domain, drawn (issue 32)
# ==================================================================================================

OPTIMIZERS = ("sgd", "sgd_plain", "sgd_groups", "adam", "adamw")
CHUNK = 6  # set-ups per scenario call: each call stays well inside the runner's time limit per request


def draw_setup(rng: Any) -> dict[str, Any]:
    """One set-up the specification allows, from its sentences: any optimizer (parameter groups, momentum or
    none, Adam's state), a scaler made for the device (enabled with any init_scale, growth and backoff factor and
    growth interval, or disabled: the usual bfloat16 set-up, and bfloat16 with an enabled scaler too), dtype given
    or left at its default, max_norm absent, None, 0.0, small, or far above the norm (a no-op), targets that make
    the norm exceed 1 (so that a clip nobody asked for acts), a scale so large that float16 gradients overflow by
    themselves, inf/NaN injected on any call, models where some, all or all but one parameter get no gradient,
    stale gradients, one call or several, a batch of 1 or more."""
    config: dict[str, Any] = {"optimizer": domain.pick(rng, OPTIMIZERS), "steps": domain.small_int(rng, 1, 4),
                              "seed": rng.randrange(10 ** 6)}
    dtype = domain.pick(rng, ["default", "float16", "bfloat16"])
    if dtype != "default":
        config["dtype"] = torch.float16 if dtype == "float16" else torch.bfloat16
    half = dtype != "bfloat16"
    if rng.random() < (0.15 if half else 0.6):
        config["scaler"] = {"enabled": False}
    else:
        scaler: dict[str, Any] = {"init_scale": 2.0 ** domain.small_int(rng, 0, 34)}
        if rng.random() < 0.6:
            scaler["growth_interval"] = domain.small_int(rng, 1, 4)
        if rng.random() < 0.3:
            scaler["growth_factor"] = domain.pick(rng, [1.5, 2.0, 4.0])
        if rng.random() < 0.3:
            scaler["backoff_factor"] = domain.pick(rng, [0.5, 0.25, 0.125])
        config["scaler"] = scaler
    max_norm = domain.pick(rng, ["absent", "none", "zero", "small", "large", "huge"], [4, 1, 1, 3, 2, 1])
    if max_norm != "absent":
        config["max_norm"] = {"none": None, "zero": 0.0, "small": round(rng.uniform(0.01, 1.0), 3),
                              "large": round(rng.uniform(1.0, 20.0), 2), "huge": 1e6}[max_norm]
    if rng.random() < 0.5:
        config["target_scale"] = domain.pick(rng, [3.0, 30.0, 100.0])
    if rng.random() < 0.4:
        config["batch"] = domain.small_int(rng, 1, 12)
    model = domain.pick(rng, ["plain", "frozen_extras", "all_frozen", "only_bias"], [5, 2, 1, 2])
    if model != "plain":
        config[model] = True
    if model == "all_frozen":  # an enabled scaler's step asserts that unscale_ saw a gradient: none here
        config["scaler"] = {"enabled": False}
    # Stale gradients only where every parameter gets a new one: the specification's "zero the gradients" is
    # met by zeros and by None alike, which step differently a parameter that gets no gradient.
    if model == "plain" and rng.random() < 0.35:
        config["stale"] = True
    if model != "all_frozen" and rng.random() < 0.35:
        config["poison"] = {str(step): domain.pick(rng, [float("inf"), float("nan"), -float("inf")])
                            for step in range(config["steps"]) if rng.random() < 0.5} or {"0": float("inf")}
        if rng.random() < 0.5:
            config["poison_bias"] = True
    return config


def setup_size(config: dict[str, Any]) -> tuple[int, int, int]:
    """Smaller set-ups first: fewer calls, fewer options, a smaller batch."""
    return config["steps"], len(config) + len(config["scaler"]), config.get("batch", 8)


def compact(snap: dict[str, Any]) -> dict[str, Any]:
    """A snapshot as few tensors (decoding thousands of small tensors is slow): every parameter in one float64
    vector (exact for float32 values), the optimizer's tensors in another, with the names and keys in order."""
    parameters = list(snap["parameters"].values())
    state_keys, state_values, state_numbers = [], [], []
    for index in sorted(snap["optimizer"], key=int):
        for key in sorted(snap["optimizer"][index]):
            value = snap["optimizer"][index][key]
            state_keys.append(f"{index}.{key}")
            if isinstance(value, torch.Tensor):
                state_values.append(value.detach().reshape(-1).to(torch.float64))
            else:
                state_numbers.append(float(value))
    return {"parameters": torch.cat([p.reshape(-1).to(torch.float64) for p in parameters]) if parameters else
            torch.zeros(0, dtype=torch.float64),
            "names": list(snap["parameters"]), "state_keys": state_keys,
            "state": torch.cat(state_values) if state_values else torch.zeros(0, dtype=torch.float64),
            "state_numbers": state_numbers, "scaler": snap["scaler"], "scaler_used": snap["scaler_used"]}


def train_many(student: Any, configs: list[dict[str, Any]], device: str) -> list[dict[str, Any]]:
    """In the runner: the student's step on every set-up, ``steps`` calls each; after each call what it returned,
    how often optimizer.step ran and a compact snapshot. Stops at the first set-up whose step raises."""
    step = student.get("amp_train_step")
    observed = []
    for config in configs:
        setup = build_setup(config, device)
        kwargs = step_kwargs(config)
        steps: list[dict[str, Any]] = []
        entry: dict[str, Any] = {"steps": steps}
        observed.append(entry)
        for i in range(config["steps"]):
            hooks_before = _step_hooks(setup["optimizer"])
            counter = _StepCounter(setup["optimizer"])
            try:
                returned = student.run(step, setup["model"], setup["optimizer"], setup["scaler"], setup["loss_fn"],
                                       setup["inputs"], setup["targets"], **kwargs)
            except StudentRaised as exc:
                entry["error"] = dataclasses.asdict(exc.error)
                entry["error_at"] = i
                return observed
            finally:
                counter.handle.remove()
            steps.append({"returned": _returned_facts(returned), "optimizer_steps": counter.count,
                          "hooks_left": _step_hooks(setup["optimizer"]) - hooks_before, **compact(snapshot(setup))})
        entry["probe"] = [{k: v for k, v in call.items()} for call in setup["loss_fn"].calls]
    return observed


@judge_only
def expected_compact(config: dict[str, Any], device: torch.device, variant: str | None = None) -> list[dict[str, Any]]:
    return [{"returned": step["returned"], "optimizer_steps": None, **compact(step)}
            for step in reference_run(config, device, variant)]


def _tensor_same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())


def _numbers_same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def step_difference(config: dict[str, Any], got: dict[str, Any], right: dict[str, Any], i: int) -> str | None:
    """What differs after call ``i + 1`` (in the student's terms), or None."""
    facts = got["returned"]
    if not facts["is_tuple"] or facts["length"] != 3:
        return f"call {i + 1} returned a {facts['type']}, not a tuple (loss, grad_norm, skipped)"
    kinds = [item["kind"] for item in facts["items"]]
    if kinds != ["float", "float", "bool"]:
        return (f"call {i + 1} returned items of types {', '.join(item['type'] for item in facts['items'])}; "
                "expected (float, float, bool)")
    loss, norm, skipped = (item["value"] for item in facts["items"])
    right_loss, right_norm, right_skipped = right["returned"]
    if bool(skipped) != right_skipped:
        return f"call {i + 1} returned skipped={bool(skipped)}; expected skipped={right_skipped}"
    if not _same_number(loss, right_loss, LOSS_RTOL):
        return f"call {i + 1} returned loss {show_number(loss)}; expected {show_number(right_loss)}"
    if not _same_number(norm, right_norm, NORM_RTOL):
        return (f"call {i + 1} returned grad_norm {show_number(norm)}; expected {show_number(right_norm)} (the total "
                f"2-norm after unscale_, before clipping, within a relative {NORM_RTOL:g})" if math.isfinite(
                    right_norm) else f"call {i + 1} returned grad_norm {show_number(norm)}; expected inf or NaN")
    if not got["scaler_used"]:
        return f"after call {i + 1} the scaler passed in was never used (scaler.scale(...) was not called on it)"
    if got["names"] != right["names"] or not _tensor_same(got["parameters"], right["parameters"]):
        if got["names"] != right["names"] or got["parameters"].shape != right["parameters"].shape:
            return f"after call {i + 1} the model's parameters are not the ones it had"
        bad = int((~torch.isclose(got["parameters"], right["parameters"], rtol=0, atol=0, equal_nan=True)
                   ).nonzero()[0])
        shapes = [p.shape for p in build_setup(config, "cpu")["model"].parameters()]
        ends = list(itertools.accumulate(shape.numel() for shape in shapes))
        index = next(k for k, end in enumerate(ends) if bad < end)
        start = ends[index] - shapes[index].numel()
        mine = got["parameters"][start:ends[index]].reshape(shapes[index])
        value = right["parameters"][start:ends[index]].reshape(shapes[index])
        return (f"after call {i + 1} parameter {right['names'][index]} differs from the specified step ("
                + difference(mine, value) + ")")
    if got["state_keys"] != right["state_keys"]:
        return (f"after call {i + 1} the optimizer holds state {got['state_keys'][:6]}; the specified step gives "
                f"{right['state_keys'][:6]}")
    if not _tensor_same(got["state"], right["state"]) or not _numbers_same(got["state_numbers"],
                                                                         right["state_numbers"]):
        return f"after call {i + 1} the optimizer's state differs from the specified step's"
    if got["scaler"] != right["scaler"]:
        return (f"after call {i + 1} the scaler holds {_scaler_text(got['scaler'])}; expected "
                f"{_scaler_text(right['scaler'])}")
    if right["returned"][2] is False and got["optimizer_steps"] != 1:
        return f"call {i + 1} ran optimizer.step() {got['optimizer_steps']} times; expected once"
    if got.get("hooks_left", 0) > 0:
        return (f"after call {i + 1} the optimizer has {got['hooks_left']} more step hook(s) than before the call "
                "(a hook registered in the step and never removed runs at every later step: keep its handle and "
                "call handle.remove(), in a finally)")
    return None


def setup_difference(config: dict[str, Any], got: dict[str, Any], right: list[dict[str, Any]]) -> str | None:
    for i, expected in enumerate(right):
        if i >= len(got["steps"]):
            return f"call {i + 1} raised"
        found = step_difference(config, got["steps"][i], expected, i)
        if found:
            return found
    return None


@judge_only
def _generated_cause(failing: list[tuple[dict[str, Any], dict[str, Any]]], device: torch.device) -> str | None:
    """The one wrong sequence (of VARIANT_CAUSES) that gives the student's observations on every failing set-up
    tried (at most six), and none other; otherwise None."""
    causes = None
    for config, got in failing[:6]:
        fitting = set()
        for variant, cause in VARIANT_CAUSES.items():
            run = expected_compact(config, device, variant)
            if len(run) == config["steps"] and setup_difference(config, got, run) is None:
                fitting.add(cause)
        causes = fitting if causes is None else causes & fitting
        if not causes:
            return None
    return causes.pop() if causes and len(causes) == 1 else None


def _observe_setups(student: Submission, configs: list[dict[str, Any]], device: torch.device) -> list[dict[str, Any]]:
    observed: list[dict[str, Any]] = []
    for start in range(0, len(configs), CHUNK):
        chunk = student.scenario(train_many, configs[start:start + CHUNK], str(device))
        observed.extend(chunk)
        if chunk and "error" in chunk[-1]:
            break
    return observed


def judge_setups(student: Submission, configs: list[dict[str, Any]], device: torch.device) -> None:
    """Every set-up against the specified sequence; the smallest failing one (shrunk) is reported."""
    observed = _observe_setups(student, configs, device)

    def failing(cases: list[dict[str, Any]], seen: list[dict[str, Any]]) -> list[tuple[dict, dict, str]]:
        found = []
        for config, got in zip(cases, seen):
            if "error" in got:
                found.append((config, got, "error"))
                continue
            text = setup_difference(config, got, expected_compact(config, device))
            if text:
                found.append((config, got, text))
        return found

    bad = failing(configs, observed)
    if not bad:
        return
    errors = [entry for entry in bad if entry[2] == "error"]
    if errors:  # the run stopped at the first set-up that raised
        config, got, _ = errors[0]
        raise StudentCodeError(StudentError(**got["error"])).within(
            f"{config_label(config)}: call {got['error_at'] + 1}") from None
    config, got, text = min(bad, key=lambda entry: setup_size(entry[0]))

    def candidates(case: dict[str, Any]) -> list[dict[str, Any]]:
        smaller = []
        if case["steps"] > 1:
            smaller.append({**case, "steps": case["steps"] - 1,
                            **({"poison": {k: v for k, v in case["poison"].items() if int(k) < case["steps"] - 1}
                                or {"0": float("inf")}} if "poison" in case else {})})
        for key in ("stale", "target_scale", "batch", "poison_bias", "frozen_extras"):
            if key in case:
                smaller.append({k: v for k, v in case.items() if k != key})
        for key in ("growth_factor", "backoff_factor", "growth_interval"):
            if key in case["scaler"]:
                smaller.append({**case, "scaler": {k: v for k, v in case["scaler"].items() if k != key}})
        return smaller

    def fails(options: list[dict[str, Any]]) -> list[bool]:
        seen = _observe_setups(student, options, device)
        wrong = {id(entry[0]) for entry in failing(options[:len(seen)], seen)}
        return [id(option) in wrong for option in options]

    shrunk = domain.shrink(config, candidates, fails, rounds=6)
    if shrunk is not config:
        got = _observe_setups(student, [shrunk], device)[0]
        if "error" in got:
            raise StudentCodeError(StudentError(**got["error"])).within(
                f"{config_label(shrunk)}: call {got['error_at'] + 1}") from None
        text = setup_difference(shrunk, got, expected_compact(shrunk, device)) or text
        config = shrunk
    cause = _generated_cause([(config, got)] + [(c, g) for c, g, _ in bad if c is not config][:5], device)
    fail(f"amp_train_step differs from the specified sequence on a generated set-up ({len(bad)} of {len(configs)} "
         f"drawn set-ups fail; the smallest):\n  given: {config_label(config)}\n  {text}"
         + (f"\n  likely cause: {cause}" if cause else ""))


@AMP_TRAIN_STEP.check(points=2)
def generated_setups(student: Submission, device: torch.device) -> None:
    """Drawn set-ups over the whole domain (optimizers, scalers, dtypes, max_norm, frozen parameters, overflow,
    stale gradients): after every call, what it returned and every parameter, optimizer state and scale."""
    configs = domain.draw(draw_setup, 30, size=setup_size)
    judge_setups(student, configs, device)
