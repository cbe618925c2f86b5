"""save_checkpoint / load_checkpoint: a resume that continues bit for bit, written atomically.

A training set-up (a model with dropout, a shuffling DataLoader with its own generator, Adam or SGD with
momentum, a MultiStepLR stepped every batch, optionally a GradScaler) is built from a :class:`Setup` by
the same code in the runner and in the judge. Every step also draws from Python's ``random``, NumPy's
global generator and torch's generator, so that each state matters.

In the runner, a scenario trains ``save_after`` epochs, calls the student's ``save_checkpoint``, scrambles
every RNG, rebuilds every object from other seeds, calls ``load_checkpoint`` and trains to the end. Right
after loading it records the state of every part (parameters, optimizer, scheduler, scaler, and one draw
from each RNG and from the generator, each put back afterwards); at the end, the losses and parameters.
The judge trains the same set-up without stopping and records the same facts at the same points: a part
that differs right after loading is named as the one not saved or not restored. That is an observation,
not a guess, so the failure says which state is missing.

Files are written to temporary folders the judge makes and removes (also when the check fails). The judge
reads what the student wrote only with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import pathlib
import random
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any, NoReturn

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graders import domain
from graders.compare import one_torch_thread, show
from graders.isolation import RunnerStudent, StudentRaised, exchange_folder
from graders.outcomes import StudentCodeError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission
from graders.watch import file_events

CHECKPOINT = exercise("checkpoint", chapter="07_checkpointing", names=["save_checkpoint", "load_checkpoint"],
                      warm_compiler_stack=True, writes_files=True)


# ==================================================================================================
# The training set-up, built the same way in the runner and in the judge
# ==================================================================================================
@dataclasses.dataclass(frozen=True)
class Setup:
    optimizer: str = "adam"  # "adam" or "sgd_momentum"
    samples: int = 22
    batch_size: int = 5  # 22 samples: 5 batches per epoch, the last one of 2
    epochs: int = 4
    save_after: int = 2  # epochs trained before the checkpoint is written
    milestones: tuple[int, ...] = (13,)  # scheduler milestones, in steps (a step is one batch)
    scaler: bool = False
    seed: int = 11  # seeds the uninterrupted run (and the run up to the checkpoint)
    rebuild_seed: int = 907  # the objects rebuilt before loading start from these
    scramble_seed: int = 4242  # every RNG is reseeded with this between saving and loading
    path_as_text: bool = False
    subfolder: str = ""

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.samples / self.batch_size)

    @property
    def saved_step(self) -> int:
        return self.save_after * self.steps_per_epoch

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


class ResumeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Dropout(0.3), nn.Linear(12, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@dataclasses.dataclass
class Parts:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None
    generator: torch.Generator
    loader: torch.utils.data.DataLoader


def build_parts(setup: Setup, seed: int, device: torch.device) -> Parts:
    """Every object of the set-up, its weights and data order from ``seed`` (the global RNGs are not used)."""
    init = torch.Generator().manual_seed(seed)
    model = ResumeNet()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=init) * 0.4)
    model.to(device)
    if setup.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=list(setup.milestones), gamma=0.1)
    # The first scale overflows float16 gradients: steps are skipped and the scale backs off; it grows
    # every 3 steps and overflows again, so its state changes all along the run.
    scaler = (torch.amp.GradScaler(device.type, init_scale=2.0**17, growth_interval=3) if setup.scaler else None)
    data = torch.Generator().manual_seed(1234)  # the same data every time: only the order depends on seeds
    inputs = torch.randn(setup.samples, 5, generator=data)
    targets = torch.randn(setup.samples, 3, generator=data)
    generator = torch.Generator().manual_seed(seed + 1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets), batch_size=setup.batch_size,
                                         shuffle=True, generator=generator)
    return Parts(model, optimizer, scheduler, scaler, generator, loader)


def seed_every_rng(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # every CUDA device too


def _train_step(parts: Parts, x: torch.Tensor, y: torch.Tensor, device: torch.device) -> float:
    # One draw from each global RNG per step: leaving any of them out of the checkpoint changes the run.
    noise = torch.randn(x.shape) * 0.05
    weight = 1.0 + 0.1 * random.random() + 0.1 * random.gauss(0.0, 1.0) + 0.1 * float(np.random.randn())
    x, y = (x + noise).to(device), y.to(device)
    parts.optimizer.zero_grad()
    if parts.scaler is not None:
        with torch.autocast(device.type, dtype=torch.float16):
            loss = F.mse_loss(parts.model(x), y) * weight
        parts.scaler.scale(loss).backward()
        parts.scaler.step(parts.optimizer)
        parts.scaler.update()
    else:
        loss = F.mse_loss(parts.model(x), y) * weight
        loss.backward()
        parts.optimizer.step()
    with warnings.catch_warnings():  # "scheduler.step() before optimizer.step()" after a step the scaler skipped
        warnings.simplefilter("ignore")
        parts.scheduler.step()
    return float(loss.item())


def train(parts: Parts, setup: Setup, start_step: int, end_step: int, device: torch.device) -> list[float]:
    """Train from ``start_step`` (an epoch boundary) to ``end_step``, epoch by epoch; the loss of each step."""
    parts.model.train()
    losses: list[float] = []
    step = start_step
    if start_step == 0:
        # One Gaussian drawn now makes the count odd at every later step: Python and NumPy then hold a
        # cached second Gaussian (random's gauss_next, NumPy's has_gauss), part of the state to save.
        random.gauss(0.0, 1.0)
        np.random.randn()
    while step < end_step:
        for x, y in parts.loader:
            losses.append(_train_step(parts, x, y, device))
            step += 1
            if step >= end_step:
                break
    return losses


def _tensor_facts(prefix: str, value: Any, facts: dict[str, Any]) -> None:
    """Flatten a state_dict-like value into ``{dotted name: tensor or number}``."""
    if isinstance(value, torch.Tensor):
        facts[prefix] = value.detach().cpu().clone()
    elif isinstance(value, dict):
        for key, item in value.items():
            _tensor_facts(f"{prefix}.{key}", item, facts)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _tensor_facts(f"{prefix}[{index}]", item, facts)
    elif isinstance(value, (bool, int, float, str)) or value is None:
        facts[prefix] = value


def rng_draws(parts: Parts) -> dict[str, Any]:
    """One draw from every RNG the run uses, each put back as it was: what the next steps will see."""
    draws: dict[str, Any] = {}
    state = random.getstate()
    draws["Python's random"] = (random.gauss(0.0, 1.0), random.random())  # gauss first: the cached one
    random.setstate(state)
    state = np.random.get_state()
    draws["NumPy's global generator"] = (float(np.random.randn()), float(np.random.rand()))
    np.random.set_state(state)
    state = torch.get_rng_state()
    draws["torch's CPU generator"] = torch.rand(3)
    torch.set_rng_state(state)
    for index in range(torch.cuda.device_count()):
        state = torch.cuda.get_rng_state(index)
        draws[f"the CUDA generator of cuda:{index}"] = torch.rand(3, device=f"cuda:{index}").cpu()
        torch.cuda.set_rng_state(state, index)
    state = parts.generator.get_state()
    draws["the DataLoader's generator (data order)"] = torch.randperm(8, generator=parts.generator)
    parts.generator.set_state(state)
    return draws


def state_facts(parts: Parts) -> dict[str, dict[str, Any]]:
    """What each part holds right now, by part."""
    facts: dict[str, dict[str, Any]] = {"model": {}, "optimizer": {}, "scheduler": {}, "scaler": {}}
    _tensor_facts("model", parts.model.state_dict(), facts["model"])
    _tensor_facts("optimizer", parts.optimizer.state_dict(), facts["optimizer"])
    _tensor_facts("scheduler", parts.scheduler.state_dict(), facts["scheduler"])
    if parts.scaler is not None:
        scaler = parts.scaler.state_dict()
        facts["scaler"] = {"scale": scaler.get("scale"), "growth_tracker": scaler.get("_growth_tracker")}
    facts["rng"] = rng_draws(parts)
    return facts


def _parts_kwargs(parts: Parts, include: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(parts, name) for name in include}


ALL_PARTS = ("scheduler", "scaler", "generator")


def _optional_parts(setup: Setup) -> tuple[str, ...]:
    return ("scheduler", "generator") + (("scaler",) if setup.scaler else ())


# ==================================================================================================
# In the runner
# ==================================================================================================
def _target(setup: Setup, folder: str) -> Any:
    path = pathlib.Path(folder) / setup.subfolder / "run.pt"
    return os.fspath(path) if setup.path_as_text else path


def train_and_save_scenario(student: RunnerStudent, setup: Setup, folder: str, device_name: str) -> list[float]:
    """Train ``save_after`` epochs and save; the losses so far."""
    device = torch.device(device_name)
    seed_every_rng(setup.seed)
    parts = build_parts(setup, setup.seed, device)
    losses_before = train(parts, setup, 0, setup.saved_step, device)
    student.call("save_checkpoint", _target(setup, folder), model=parts.model, optimizer=parts.optimizer,
                 step=setup.saved_step, **_parts_kwargs(parts, _optional_parts(setup)))
    return losses_before


def load_and_resume_scenario(student: RunnerStudent, setup: Setup, folder: str, device_name: str) -> dict[str, Any]:
    """In a process that never saw the run: scramble, rebuild, load, train on; what each stage left behind."""
    device = torch.device(device_name)
    target = _target(setup, folder)
    seed_every_rng(setup.scramble_seed)
    resumed = build_parts(setup, setup.rebuild_seed, device)
    step = student.call("load_checkpoint", target, model=resumed.model, optimizer=resumed.optimizer,
                        **_parts_kwargs(resumed, _optional_parts(setup)), map_location=device_name)
    report: dict[str, Any] = {"step": _describe_step(step)}
    report["after_load"] = state_facts(resumed)
    if report["step"]["int"] is None:
        return report
    start = report["step"]["int"]
    if not 0 <= start <= setup.total_steps:
        return report
    report["losses_after"] = train(resumed, setup, start, setup.total_steps, device)
    report["final"] = state_facts(resumed)
    return report


def _describe_step(step: Any) -> dict[str, Any]:
    is_int = isinstance(step, int) and not isinstance(step, bool)
    return {"int": int(step) if is_int else None, "type": type(step).__name__, "repr": repr(step)[:200]}


# ==================================================================================================
# In the judge: the uninterrupted run
# ==================================================================================================
@judge_only
def uninterrupted_run(setup: Setup, device: torch.device) -> dict[str, Any]:
    """The run the resumed one must equal: the same facts at the checkpoint and at the end."""
    with one_torch_thread():
        seed_every_rng(setup.seed)
        parts = build_parts(setup, setup.seed, device)
        losses_before = train(parts, setup, 0, setup.saved_step, device)
        at_save = state_facts(parts)
        losses_after = train(parts, setup, setup.saved_step, setup.total_steps, device)
        return {"losses_before": losses_before, "at_save": at_save, "losses_after": losses_after,
                "final": state_facts(parts)}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _differences(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    names = [n for n in expected if n not in got or not _same(got[n], expected[n])]
    return names + [n for n in got if n not in expected]


PART_CAUSES = {
    "model": "the model's state_dict was not saved, or not loaded into the model passed to load_checkpoint",
    "optimizer": "the optimizer's state_dict (Adam's moments, SGD's momentum buffers, the step counts) was not "
                 "saved or not restored with optimizer.load_state_dict",
    "scheduler": "the scheduler's state_dict was not saved or not restored: a fresh scheduler counts its "
                 "milestones from 0 again, so the learning rate drops too late",
    "scaler": "the GradScaler's state_dict (its scale and growth tracker) was not saved or not restored",
}
RNG_CAUSES = {
    "Python's random": "random.getstate() / random.setstate()",
    "NumPy's global generator": "np.random.get_state() / np.random.set_state() (stored as plain values or a tensor)",
    "torch's CPU generator": "torch.get_rng_state() / torch.set_rng_state()",
    "the DataLoader's generator (data order)": "generator.get_state() / generator.set_state() (manual_seed "
                                                "starts the order over, it does not restore it)",
}


def _rng_cause(name: str) -> str:
    if name.startswith("the CUDA generator"):
        return "torch.cuda.get_rng_state_all() / torch.cuda.set_rng_state(state.cpu(), index)"
    return RNG_CAUSES[name]


def _expect_resume(student: Submission, setup: Setup, device: torch.device, what: str) -> None:
    expected = uninterrupted_run(setup, device)
    with _temporary_folder() as folder:
        try:
            losses_before = student.scenario(train_and_save_scenario, setup, os.fspath(folder), str(device))
        except StudentCodeError as exc:
            raise exc.within(f"save_checkpoint ({what})") from None
        try:
            # Loaded by a process that never saw the save, as after a real crash: only the file carries state.
            with student.fresh_process() as restarted:
                got = restarted.scenario(load_and_resume_scenario, setup, os.fspath(folder), str(device))
        except StudentCodeError as exc:
            raise exc.within(f"load_checkpoint in a new process ({what})") from None
    given = (f"{what}: saved after {setup.save_after} of {setup.epochs} epochs (step={setup.saved_step}), every RNG "
             f"reseeded and every object rebuilt from other seeds, then loaded")
    if losses_before != expected["losses_before"]:  # the grader's own run: must agree before any answer runs
        raise AssertionError("the runner's training before the checkpoint differs from the judge's")
    step = got["step"]
    if step["int"] != setup.saved_step:
        _step_mismatch(step, setup.saved_step, given)
    after = got["after_load"]
    for part in ("model", "optimizer", "scheduler", "scaler"):
        differing = _differences(after[part], expected["at_save"][part])
        if differing:
            fail_mismatch(f"right after load_checkpoint, the {part}'s state is not the saved one", given=given,
                          expected=f"{part} state as it was at step {setup.saved_step}",
                          got=f"{len(differing)} entr{'y differs' if len(differing) == 1 else 'ies differ'}: "
                              f"{', '.join(differing[:4])}", cause=PART_CAUSES[part])
    differing = _differences(after["rng"], expected["at_save"]["rng"])
    if differing:
        fail_mismatch("right after load_checkpoint, the next random numbers are not the ones the run would have drawn",
                      given=given, expected="every RNG exactly where it was when the checkpoint was saved",
                      got="not restored: " + "; ".join(differing),
                      cause="save and restore " + "; ".join(_rng_cause(n) for n in differing))
    _expect_same_continuation(got, expected, given)


def _step_mismatch(step: dict[str, Any], saved: int, given: str) -> NoReturn:
    if step["int"] is None:
        cause = ("return the step as a Python int (int(...)), not a tensor or a float"
                 if step["type"] in ("Tensor", "float") else None)
        fail_mismatch("load_checkpoint must return the saved step as an int", given=given, expected=str(saved),
                      got=f"{step['repr']} (a {step['type']})", cause=cause)
    off_by = step["int"] - saved
    cause = (f"off by {off_by:+d}: return exactly the step that was saved (the caller decides where to go on from it)"
             if abs(off_by) == 1 else None)
    fail_mismatch("load_checkpoint returned the wrong step", given=given, expected=str(saved), got=str(step["int"]),
                  cause=cause)


def _expect_same_continuation(got: dict[str, Any], expected: dict[str, Any], given: str) -> None:
    losses, wanted = got.get("losses_after", []), expected["losses_after"]
    first = next((i for i, (a, b) in enumerate(zip(losses, wanted)) if a != b), None)
    if first is not None or len(losses) != len(wanted):
        where = f"first difference at resumed step {first}" if first is not None else f"{len(losses)} losses"
        fail_mismatch("the resumed run does not continue bit for bit", given=given,
                      expected=f"{len(wanted)} losses equal to the uninterrupted run's",
                      got=f"{where}: {show(losses[first]) if first is not None else ''} instead of "
                          f"{show(wanted[first]) if first is not None else ''}".strip())
    for part in ("model", "optimizer", "scheduler", "scaler", "rng"):
        differing = _differences(got["final"][part], expected["final"][part])
        if differing:
            fail_mismatch(f"after the resumed run, the {part} differs from the uninterrupted run's", given=given,
                          expected="identical bit for bit", got=f"differs in {', '.join(differing[:4])}")


@contextlib.contextmanager
def _temporary_folder() -> Iterator[pathlib.Path]:
    folder = pathlib.Path(tempfile.mkdtemp(prefix="course-checkpoint-", dir=exchange_folder()))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ==================================================================================================
# The resume checks
# ==================================================================================================
@CHECKPOINT.check(points=3)
def resumes_bit_for_bit(student: Submission, device: torch.device) -> None:
    """After save, a scrambled restart and load, training continues exactly as if never stopped (model, Adam/SGD, scheduler, every RNG, data order)."""
    _expect_resume(student, Setup(), device, "Adam, a milestone at step 13, a Path")
    _expect_resume(student, Setup(optimizer="sgd_momentum", samples=17, batch_size=4, epochs=3, save_after=1,
                                  milestones=(7, 11), seed=5, rebuild_seed=77, scramble_seed=9, path_as_text=True),
                   device, "SGD with momentum, milestones at steps 7 and 11, a str path")


@CHECKPOINT.check(points=1)
def resumes_with_a_grad_scaler(student: Submission, device: torch.device) -> None:
    """With a GradScaler in the run (float16 autocast), its scale and growth tracker are restored too."""
    _expect_resume(student, Setup(scaler=True, epochs=4, save_after=2, seed=3), device,
                   "float16 autocast with a GradScaler whose scale changes during the run")


def step_scenario(student: RunnerStudent, folder: str, steps: list[int]) -> list[dict[str, Any]]:
    setup = Setup()
    device = torch.device("cpu")
    parts = build_parts(setup, setup.seed, device)
    returned = []
    for index, step in enumerate(steps):
        path = pathlib.Path(folder) / f"saved_{index}.pt"
        student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=step)
        fresh = build_parts(setup, setup.rebuild_seed, device)
        returned.append(_describe_step(student.call("load_checkpoint", path, model=fresh.model,
                                                    optimizer=fresh.optimizer)))
    return returned


@CHECKPOINT.check(points=1)
def returns_the_saved_step(student: Submission, device: torch.device) -> None:
    """load_checkpoint returns the step that was saved, as a Python int (0, small, and past 2**53)."""
    steps = [7, 0, 120, 2**53 + 1]
    with _temporary_folder() as folder:
        try:
            got = student.scenario(step_scenario, os.fspath(folder), steps)
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, model=..., optimizer=..., step=...) then load_checkpoint(path, ...)") from None
    for step, returned in zip(steps, got):
        if returned["int"] != step:
            _step_mismatch(returned, step, f"save_checkpoint(..., step={step}) (no scheduler, scaler or generator), "
                                           f"then load_checkpoint")


# ==================================================================================================
# What the file holds
# ==================================================================================================
def save_everything_scenario(student: RunnerStudent, path: str, device_name: str) -> None:
    setup = Setup(scaler=True)
    device = torch.device(device_name)
    seed_every_rng(setup.seed)
    parts = build_parts(setup, setup.seed, device)
    train(parts, setup, 0, setup.steps_per_epoch, device)
    student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=setup.steps_per_epoch,
                 scheduler=parts.scheduler, scaler=parts.scaler, generator=parts.generator)


UNSAFE_CAUSES = {
    "numpy": "NumPy values are pickled objects: np.random.get_state() holds a NumPy array; store it as a tensor "
             "(torch.from_numpy(...)) or a list, and numbers as int(...)/float(...)",
}


@CHECKPOINT.check(points=1)
def loads_with_weights_only(student: Submission, device: torch.device) -> None:
    """The file loads with torch.load(path, weights_only=True): only tensors, numbers, strings and plain containers."""
    with _temporary_folder() as folder:
        path = folder / "everything.pt"
        try:
            student.scenario(save_everything_scenario, os.fspath(path), str(device))
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, model=..., optimizer=..., step=..., scheduler=..., scaler=..., "
                             "generator=...)") from None
        if not path.is_file():
            fail(f"save_checkpoint(path, ...) returned without writing a file at path ({path.name} does not exist)")
        saved = _expect_weights_only_loadable(path)
    held = _tensors_in(saved)
    for what, tensors in state_after_one_epoch(str(device)).items():
        missing = [name for name, tensor in tensors.items() if not any(_same(tensor, t) for t in held)]
        if missing:
            fail_mismatch(f"the checkpoint does not hold the {what}", given=
                          "save_checkpoint(path, model=..., optimizer=..., step=..., scheduler=..., scaler=..., "
                          "generator=...) after one epoch of training", expected=f"the {what}, as tensors",
                          got=f"no tensor equal to {', '.join(missing[:3])} in the file")


def _tensors_in(value: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 20:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return [t for item in items for t in _tensors_in(item, depth + 1)]


@judge_only
def state_after_one_epoch(device_name: str) -> dict[str, dict[str, torch.Tensor]]:
    """What save_everything_scenario's checkpoint must hold: its model, optimizer moments and generator state."""
    setup, device = Setup(scaler=True), torch.device(device_name)
    with one_torch_thread():
        seed_every_rng(setup.seed)
        parts = build_parts(setup, setup.seed, device)
        train(parts, setup, 0, setup.steps_per_epoch, device)
    optimizer = parts.optimizer.state_dict()["state"]
    return {"model's weights": {name: t.cpu() for name, t in parts.model.state_dict().items()},
            "optimizer's state": {f"state[{i}]['{key}']": state[key].cpu() for i, state in optimizer.items()
                                  for key in ("exp_avg", "exp_avg_sq")},
            "DataLoader generator's state": {"generator.get_state()": parts.generator.get_state()}}


def _expect_weights_only_loadable(path: pathlib.Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure to load is the answer's
        try:
            unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        except Exception:  # noqa: BLE001 - not even a torch.save file
            unsafe = []
        cause = next((UNSAFE_CAUSES[key] for key in UNSAFE_CAUSES if any(g.startswith(key) for g in unsafe)), None)
        refused = f"it holds objects weights_only refuses: {', '.join(unsafe[:5])}" if unsafe else \
            f"torch.load raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        fail_mismatch("the checkpoint does not load with torch.load(path, weights_only=True)",
                      given="a checkpoint with model, optimizer, step, scheduler, scaler and generator",
                      expected="a file of tensors, numbers, strings and plain containers", got=refused,
                      cause=cause or ("store only tensors, numbers, strings, lists, tuples and dicts" if unsafe else None))


# ==================================================================================================
# A state passed to load_checkpoint that the checkpoint does not hold
# ==================================================================================================
def missing_state_scenario(student: RunnerStudent, folder: str) -> dict[str, Any]:
    setup = Setup(scaler=True)
    device = torch.device("cpu")
    parts = build_parts(setup, setup.seed, device)
    path = pathlib.Path(folder) / "bare.pt"
    student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=3)
    outcomes: dict[str, Any] = {}
    fresh = build_parts(setup, setup.rebuild_seed, device)
    outcomes["nothing extra"] = _load_outcome(student, path, fresh, ())
    for part in ALL_PARTS:
        outcomes[part] = _load_outcome(student, path, build_parts(setup, setup.rebuild_seed, device), (part,))
    return outcomes


def _load_outcome(student: RunnerStudent, path: pathlib.Path, parts: Parts, include: tuple[str, ...]) -> dict[str, Any]:
    try:
        step = student.call("load_checkpoint", path, model=parts.model, optimizer=parts.optimizer,
                            **_parts_kwargs(parts, include))
    except StudentRaised as exc:
        return {"raised": exc.error.exception_type, "key_error": exc.error.is_instance(KeyError),
                "describe": exc.error.describe()}
    return {"raised": None, "step": _describe_step(step)}


@CHECKPOINT.check(points=1)
def missing_state_raises_key_error(student: Submission, device: torch.device) -> None:
    """Passing a scheduler, scaler or generator whose state the checkpoint does not hold raises KeyError."""
    with _temporary_folder() as folder:
        try:
            outcomes = student.scenario(missing_state_scenario, os.fspath(folder))
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, model=..., optimizer=..., step=3)") from None
    plain = outcomes["nothing extra"]
    if plain["raised"] is not None or plain["step"]["int"] != 3:
        got = f"it {plain['describe']}" if plain["raised"] else f"it returned {plain['step']['repr']}"
        fail_mismatch("loading a checkpoint with only model and optimizer state must work", given=
                      "save_checkpoint(path, model=..., optimizer=..., step=3), then load_checkpoint(path, model=..., "
                      "optimizer=...)", expected="3", got=got)
    for part in ALL_PARTS:
        outcome = outcomes[part]
        call = (f"load_checkpoint(path, model=..., optimizer=..., {part}=...) on a checkpoint saved without a "
                f"{part}")
        if outcome["raised"] is None:
            fail_mismatch(f"load_checkpoint must raise KeyError when a {part} is passed but the checkpoint holds no "
                          f"{part} state", given=call, expected="KeyError", got=f"returned {outcome['step']['repr']}",
                          cause=f"a missing {part} entry was skipped silently (state.get(...) or an 'in' test); "
                                f"index the checkpoint (state['{part}']) or raise KeyError yourself")
        if not outcome["key_error"]:
            fail_mismatch(f"load_checkpoint must raise KeyError when a {part} is passed but the checkpoint holds no "
                          f"{part} state", given=call, expected="KeyError", got=f"it {outcome['describe']}")


# ==================================================================================================
# map_location
# ==================================================================================================
_map_location_calls: list[str] = []


def recording_map_location(storage: Any, location: str) -> Any:
    """A map_location callable: notes each storage's saved location and keeps the storage where it is."""
    _map_location_calls.append(location)
    return storage


def map_location_scenario(student: RunnerStudent, folder: str, gpu_path: str) -> dict[str, Any]:
    setup = Setup()
    device = torch.device("cpu")
    report: dict[str, Any] = {}
    _map_location_calls.clear()
    parts = build_parts(setup, setup.rebuild_seed, device)
    student.call("load_checkpoint", pathlib.Path(folder) / "cpu.pt", model=parts.model, optimizer=parts.optimizer,
                 map_location=recording_map_location)
    report["recorded"] = list(_map_location_calls)
    parts = build_parts(setup, setup.rebuild_seed, device)
    try:
        student.call("load_checkpoint", gpu_path, model=parts.model, optimizer=parts.optimizer, map_location="cpu")
        report["gpu_file"] = {"raised": None, "model": parts.model.state_dict()}
    except StudentRaised as exc:
        report["gpu_file"] = {"raised": exc.error.exception_type, "describe": exc.error.describe()}
    return report


def save_plain_scenario(student: RunnerStudent, path: str) -> None:
    setup = Setup()
    parts = build_parts(setup, setup.seed, torch.device("cpu"))
    student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=4)


@contextlib.contextmanager
def _locations_written_as(location: str) -> Iterator[None]:
    """While saving, record every storage as living on ``location`` (what a file written on a GPU records)."""
    original = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: location
    try:
        yield
    finally:
        torch.serialization.location_tag = original


@CHECKPOINT.check(points=1)
def honours_map_location(student: Submission, device: torch.device) -> None:
    """load_checkpoint passes map_location to torch.load: a checkpoint written on a GPU loads on a CPU-only machine."""
    with _temporary_folder() as folder:
        cpu_path, gpu_path = folder / "cpu.pt", folder / "gpu.pt"
        try:
            student.scenario(save_plain_scenario, os.fspath(cpu_path))
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, model=..., optimizer=..., step=4)") from None
        saved = _expect_weights_only_loadable(cpu_path)
        with _locations_written_as("cuda:0"):
            torch.save(saved, gpu_path)
        try:
            got = student.scenario(map_location_scenario, os.fspath(folder), os.fspath(gpu_path))
        except StudentCodeError as exc:
            raise exc.within("load_checkpoint(path, ..., map_location=...)") from None
    if not got["recorded"]:
        fail_mismatch("load_checkpoint did not use the map_location it was given", given=
                      "load_checkpoint(path, ..., map_location=f) with a function f(storage, location)",
                      expected="torch.load(path, map_location=f, ...) calls f for every storage", got="f was never called",
                      cause="pass map_location=map_location to torch.load instead of a fixed value or none")
    expected_model = build_parts(Setup(), Setup().seed, torch.device("cpu")).model.state_dict()
    gpu = got["gpu_file"]
    given = "a checkpoint whose tensors were saved on cuda:0, loaded with map_location='cpu'"
    if gpu["raised"] is not None:
        fail_mismatch("load_checkpoint could not load a checkpoint written on a GPU", given=given,
                      expected="the model's weights restored on the CPU", got=f"it {gpu['describe']}")
    if any(not _same(gpu["model"][k], v) for k, v in expected_model.items()):
        fail_mismatch("load_checkpoint did not restore the model from a checkpoint written on a GPU", given=given,
                      expected="the saved weights", got="other weights")


# ==================================================================================================
# Atomic writes
# ==================================================================================================
class InjectedSaveFailure(RuntimeError):
    """Raised from inside torch.save's pickling by :class:`ExplodingTensor`: a save that fails half-way."""


class ExplodingTensor(torch.Tensor):
    """A tensor that cannot be pickled: torch.save raises after the file was opened and partly written."""

    raises: type[BaseException] = InjectedSaveFailure

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise type(self).raises("the grader made this save fail half-way (as a full disk or Ctrl-C would)")

    def __deepcopy__(self, memo: dict) -> "ExplodingTensor":
        return self.clone()


class ExplodesWithInterrupt(ExplodingTensor):
    raises = KeyboardInterrupt


class FusedNet(ResumeNet):
    """ResumeNet with an extra state entry that, once armed, makes torch.save fail while writing."""

    def __init__(self) -> None:
        super().__init__()
        self.fuse: type[ExplodingTensor] | None = None

    def get_extra_state(self) -> torch.Tensor:
        value = torch.arange(4.0)
        return value.as_subclass(self.fuse) if self.fuse is not None else value

    def set_extra_state(self, state: Any) -> None:
        pass


@contextlib.contextmanager
def _file_size_limit(limit: int | None) -> Iterator[None]:
    """RLIMIT_FSIZE for this process: writes past ``limit`` bytes fail with EFBIG (a full disk, in effect)."""
    if limit is None:
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)


def _failures() -> list[str]:
    kinds = ["exception", "interrupt"]
    if hasattr(signal, "SIGXFSZ"):  # POSIX: a real write error from the operating system
        kinds.append("file size")
    return kinds


FAILURE_WORDS = {
    "exception": "an exception raised while torch.save was writing",
    "interrupt": "a KeyboardInterrupt (Ctrl-C) while torch.save was writing",
    "file size": "a write refused by the operating system (file too large, as on a full disk)",
}


def _digest(path: pathlib.Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@CHECKPOINT.check(points=2)
def failed_save_keeps_the_previous_file(student: Submission, device: torch.device) -> None:
    """A save that fails half-way (an exception, Ctrl-C, a full disk) leaves the previous file intact, removes its temporary file and lets the error through."""
    for failure in _failures():
        with _temporary_folder() as folder:
            path = folder / "model.pt"
            given = f"path holds a checkpoint; save_checkpoint(path, ...) again, interrupted by {FAILURE_WORDS[failure]}"
            try:
                report = _run_atomic(student, path, failure)
            except StudentCodeError as exc:
                raise exc.within("save_checkpoint(path, ...) (the first, uninterrupted save)") from None
            if report["first_size"] is None:
                fail(f"save_checkpoint(path, ...) returned without writing a file at path ({path.name} does not exist)")
            raised = report["raised"]
            after = _digest(path)
            leftovers = sorted(p.name for p in folder.iterdir() if p.name != path.name)
            if raised is None:
                cause = ("the exception was caught and not re-raised (clean up, then raise)" if after == report["digest_before"]
                         else "the save never reached the failure: it did not write model.state_dict() (the failure "
                              "is injected while the model's state_dict is written)")
                fail_mismatch("a failed save must raise", given=given, expected="the error to propagate to the caller",
                              got="save_checkpoint returned normally", cause=cause)
            if after != report["digest_before"]:
                gone = after is None
                fail_mismatch("the previous checkpoint was destroyed by a failed save", given=given,
                              expected="path still holds the previous checkpoint, byte for byte",
                              got="path is gone" if gone else "path was overwritten with a partial file",
                              cause=("the old file was removed before the new one was in place" if gone else
                                     "the new checkpoint was written straight to path") +
                                    "; write a temporary file in the same directory and os.replace it onto path at the end")
            if failure == "interrupt" and not raised["interrupt"]:
                fail_mismatch("a KeyboardInterrupt during the save must propagate", given=given,
                              expected="KeyboardInterrupt", got=f"it {raised['describe']}")
            if failure == "exception" and not raised["injected"]:
                fail_mismatch("the error of a failed save must propagate unchanged", given=given,
                              expected="the RuntimeError torch.save raised", got=f"it {raised['describe']}")
            if leftovers:
                cause = ("the clean-up runs under `except Exception`, which KeyboardInterrupt (a BaseException) "
                         "skips; use `except BaseException` or try/finally"
                         if failure == "interrupt" else "remove the temporary file when the save fails, then re-raise")
                fail_mismatch("a failed save left a temporary file behind", given=given,
                              expected="only the previous checkpoint in the directory",
                              got=f"also {', '.join(leftovers)}", cause=cause)


def _run_atomic(student: Submission, path: pathlib.Path, failure: str) -> dict[str, Any]:
    """The previous checkpoint's digest is taken by the judge between the two saves (a scenario hook)."""
    report = student.scenario(atomic_scenario_first, os.fspath(path))
    report["digest_before"] = _digest(path)
    report.update(student.scenario(atomic_scenario_second, os.fspath(path), failure))
    return report


_atomic_state: dict[str, Any] = {}


def atomic_scenario_first(student: RunnerStudent, path: str) -> dict[str, Any]:
    model = FusedNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    student.call("save_checkpoint", path, model=model, optimizer=optimizer, step=1)
    _atomic_state.update(model=model, optimizer=optimizer)
    return {"first_size": os.path.getsize(path) if os.path.isfile(path) else None}


def atomic_scenario_second(student: RunnerStudent, path: str, failure: str) -> dict[str, Any]:
    model, optimizer = _atomic_state.pop("model"), _atomic_state.pop("optimizer")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)  # the new checkpoint differs from the previous one
    limit = None
    if failure == "interrupt":
        model.fuse = ExplodesWithInterrupt
    elif failure == "exception":
        model.fuse = ExplodingTensor
    else:  # the operating system refuses to let any file grow past half the previous checkpoint's size
        limit = max(1, os.path.getsize(path) // 2)
    try:
        with _file_size_limit(limit):
            student.call("save_checkpoint", path, model=model, optimizer=optimizer, step=2)
        return {"raised": None}
    except StudentRaised as exc:
        return {"raised": {"type": exc.error.exception_type, "injected": exc.error.is_instance(InjectedSaveFailure),
                           "interrupt": exc.error.is_instance(KeyboardInterrupt), "describe": exc.error.describe()}}


def write_scenario(student: RunnerStudent, path: str) -> dict[str, Any]:
    """Save twice to ``path`` while recording syncs and renames; report them and the file's identity."""
    setup = Setup()
    parts = build_parts(setup, setup.seed, torch.device("cpu"))
    student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=1)
    with file_events() as events, _sizes_at_sync() as sizes:
        student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=2)
    status = os.stat(path) if os.path.isfile(path) else None
    return {"events": [list(e) for e in events],
            "file": [status.st_dev, status.st_ino] if status else None,
            "size": status.st_size if status else None, "synced_sizes": sizes}


@contextlib.contextmanager
def _sizes_at_sync() -> Iterator[list[list[int]]]:
    """While saving: the size each file had when ``os.fsync`` / ``os.fdatasync`` reached it, by device and inode.

    Seen only through ``os.fsync`` looked up at call time (``from os import fsync`` binds the recorder installed
    before the answer loaded, which this does not reach: then nothing is seen, and nothing is concluded)."""
    sizes: list[list[int]] = []
    platform_module = sys.modules.get(os.name)
    originals = {name: getattr(os, name) for name in ("fsync", "fdatasync") if hasattr(os, name)}

    def sizing(real: Any) -> Any:
        def synced(fd: Any, *args: Any, **kwargs: Any) -> Any:
            with contextlib.suppress(Exception):
                status = os.fstat(fd if isinstance(fd, int) else fd.fileno())
                sizes.append([status.st_dev, status.st_ino, status.st_size])
            return real(fd, *args, **kwargs)
        synced.__name__ = real.__name__
        return synced

    for name, real in originals.items():
        setattr(os, name, sizing(real))
        if platform_module is not None and getattr(platform_module, name, None) is real:
            setattr(platform_module, name, getattr(os, name))
    try:
        yield sizes
    finally:
        for name, real in originals.items():
            if platform_module is not None and getattr(platform_module, name, None) is getattr(os, name):
                setattr(platform_module, name, real)
            setattr(os, name, real)


@CHECKPOINT.check(points=1)
def saves_through_a_temporary_file(student: Submission, device: torch.device) -> None:
    """A save writes a temporary file in the same directory, fsyncs it, then os.replace's it onto path; nothing is left
    over; a path ending in .tmp gets a temporary file of its own."""
    with _temporary_folder() as folder:
        path = folder / "latest.pt"
        given = "save_checkpoint(path, ...) when path already holds a checkpoint"
        try:
            report = student.scenario(write_scenario, os.fspath(path))
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, ...)") from None
        if report["file"] is None:
            fail(f"save_checkpoint(path, ...) returned without writing a file at path ({path.name} does not exist)")
        leftovers = sorted(p.name for p in folder.iterdir() if p.name != path.name)
    renames = [e for e in report["events"] if e[0] in ("replace", "rename") and pathlib.Path(e[2]) == path]
    if not renames:
        fail_mismatch("the checkpoint was not moved into place with os.replace", given=given,
                      expected="os.replace(temporary file, path) as the last step", got="path was written in place",
                      cause="torch.save(…, path) or a copy writes path bit by bit: a crash in between leaves a broken file")
    source = pathlib.Path(renames[-1][1])
    if source.parent != path.parent:
        fail_mismatch("the temporary file was not in the checkpoint's directory", given=given,
                      expected=f"a temporary file in {path.parent.name}/, renamed onto path",
                      got=f"renamed from {source}",
                      cause="a temporary file elsewhere (tempfile's default folder) may be on another filesystem, where "
                            "a rename is a copy and no longer atomic; pass dir=path's parent")
    removed = [e for e in report["events"][:report["events"].index(renames[-1])]
               if e[0] in ("remove", "unlink") and pathlib.Path(e[1]) == path]
    if removed:
        fail_mismatch("the previous checkpoint was deleted before the new one was moved into place", given=given,
                      expected="path replaced in one step by os.replace", got="os.remove(path) before os.replace",
                      cause="os.replace overwrites path atomically; removing it first leaves a moment with no "
                            "checkpoint at all, and a crash then loses it")
    if renames[-1][0] == "rename":
        fail_mismatch("the temporary file was moved onto path with os.rename, not os.replace", given=given,
                      expected="os.replace(temporary file, path)", got="os.rename (or shutil.move, which calls it)",
                      cause="on Windows os.rename refuses to overwrite an existing file (and shutil.move then copies, "
                            "which is not atomic); os.replace overwrites atomically on every platform")
    synced = [e for e in report["events"] if e[0] in ("fsync", "fdatasync") and e[1:] == report["file"]]
    rename_index = report["events"].index(renames[-1])
    if not synced or report["events"].index(synced[0]) > rename_index:
        fail_mismatch("the temporary file was not fsynced before os.replace", given=given,
                      expected="file.flush(); os.fsync(file.fileno()) before the rename",
                      got="no fsync of the file" if not synced else "fsync only after the rename",
                      cause="without fsync a power cut after the rename can leave path pointing at an empty file")
    unflushed = [size for dev, ino, size in report["synced_sizes"]
                 if [dev, ino] == report["file"] and size < report["size"]]
    if unflushed and all(size < report["size"] for dev, ino, size in report["synced_sizes"] if [dev, ino] == report["file"]):
        fail_mismatch("the temporary file was fsynced before its data was flushed", given=given,
                      expected=f"all {report['size']} bytes in the file when os.fsync runs",
                      got=f"{max(unflushed)} bytes in the file at the fsync ({report['size']} once closed)",
                      cause="call file.flush() before os.fsync(file.fileno()): fsync makes durable only what Python "
                            "has handed to the operating system, and the rest was still in the file object's buffer")
    if leftovers:
        fail_mismatch("the save left other files behind", given=given, expected="only path in the directory",
                      got=f"also {', '.join(leftovers)}")
    # A path whose own name is what a temporary name is made of (path.with_suffix(".tmp") is path itself there)
    with _temporary_folder() as folder:
        path = folder / "latest.tmp"
        try:
            report = student.scenario(write_scenario, os.fspath(path))
        except StudentCodeError as exc:
            raise exc.within("save_checkpoint(path, ...) with path = .../latest.tmp") from None
    renames = [e for e in report["events"] if e[0] in ("replace", "rename") and pathlib.Path(e[2]) == path]
    if not renames or pathlib.Path(renames[-1][1]) == path:
        fail_mismatch("the checkpoint was written in place, not through a temporary file of its own",
                      given="save_checkpoint(path, ...) with path = .../latest.tmp, which already holds a checkpoint",
                      expected="a temporary file other than path, os.replace'd onto path",
                      got="path itself written" + (", then os.replace(path, path)" if renames else ""),
                      cause="a temporary name made from path (path.with_suffix('.tmp')) is path itself when path "
                            "already ends in .tmp; add to the name instead (path.name + '.tmp', or tempfile.mkstemp)"
                      if renames else None)


def parents_scenario(student: RunnerStudent, path: str) -> dict[str, Any]:
    setup = Setup()
    parts = build_parts(setup, setup.seed, torch.device("cpu"))
    student.call("save_checkpoint", path, model=parts.model, optimizer=parts.optimizer, step=6)
    fresh = build_parts(setup, setup.rebuild_seed, torch.device("cpu"))
    step = student.call("load_checkpoint", path, model=fresh.model, optimizer=fresh.optimizer)
    return {"step": _describe_step(step)}


@CHECKPOINT.check(points=1)
def creates_parent_directories(student: Submission, device: torch.device) -> None:
    """save_checkpoint creates missing parent directories (several levels), for a str or a Path."""
    with _temporary_folder() as folder:
        for path, shown in ((folder / "runs" / "exp1" / "ckpt" / "step.pt", "a Path"),
                            (folder / "deep" / "er" / "last.pt", "a str")):
            target = os.fspath(path) if shown == "a str" else path
            call = f"save_checkpoint(<{shown} whose parent folders do not exist yet>, ...)"
            try:
                got = student.scenario(parents_scenario, target)
            except StudentCodeError as exc:
                if exc.error.kind == "raised" and not path.parent.is_dir():
                    fail_mismatch("save_checkpoint must create the missing parent folders", given=call,
                                  expected="the folders and the file created", got=f"it {exc.error.describe()}",
                                  cause="Path(path).parent.mkdir(parents=True, exist_ok=True) before writing")
                raise exc.within(call) from None
            if not path.is_file():
                fail(f"{call} returned, but no file exists at the path")
            if got["step"]["int"] != 6:
                _step_mismatch(got["step"], 6, call + ", then load_checkpoint")


# ==================================================================================================
# Generated round trips: the whole domain of what save_checkpoint and load_checkpoint are given
# ==================================================================================================
# Each case is a description (a Config) from which the runner and the judge build the same objects: the runner
# saves them, rebuilds every object from other seeds (another step count too), reseeds every RNG, loads and
# observes; the judge builds the saved objects again and knows what each must hold. Drawn:
# - models one level deeper and wider than the set-up's: BatchNorm buffers two levels down, a parameter and a
#   buffer on the root module, a ModuleDict of heads, tied weights, float64 or bfloat16, frozen layers left out
#   of the optimizer; optimizers SGD (momentum, Nesterov), Adam, AdamW with amsgrad, RMSprop, Adagrad, one or
#   two parameter groups, stepped 0 to 3 times (0: no state yet);
# - schedulers StepLR, MultiStepLR, ExponentialLR, CosineAnnealingWarmRestarts, OneCycleLR, ReduceLROnPlateau,
#   LambdaLR, or none; a GradScaler enabled (any scale and growth tracker) or disabled (an empty state), or none;
#   a DataLoader generator or none; each given to load_checkpoint or not, and passed there when never saved
#   (KeyError);
# - every global RNG anywhere in its sequence, with and without a cached Gaussian (Python, NumPy);
# - step 0, small, past 2**31, 2**53, 2**63 and 2**64; paths as a Path or a str, relative to the current folder,
#   in 0 to 3 parent folders that do not exist yet, names with spaces, non-ASCII letters, several dots or none,
#   over a previous file; map_location omitted, "cpu", torch.device("cpu"), a dict or a function.
MODELS = ["mlp", "nested", "wide", "tied"]
OPTIMIZERS = ["sgd", "sgd_momentum", "sgd_nesterov", "adam", "adamw_amsgrad", "rmsprop", "adagrad"]
SCHEDULERS = [None, "step", "multistep", "exponential", "cosine_restarts", "onecycle", "plateau", "lambda"]
FILE_NAMES = ["ckpt.pt", "model", "run 1.pt", "\u00e9tape.pt", "a.b.c.pt", "step_7.pt", ".hidden.pt", "x.ckpt"]
STEPS = [0, 1, 7, 12345, 2**31, 2**53 + 1, 2**63 - 1, 2**64 + 5]
MAP_LOCATIONS = ["omitted", "cpu", "device", "dict", "function"]


@dataclasses.dataclass(frozen=True)
class Config:
    model: str = "mlp"
    dtype: str = "float32"
    frozen: bool = False
    optimizer: str = "adam"
    groups: int = 1
    steps: int = 2  # optimizer steps before saving
    scheduler: str | None = None
    scaler: str | None = None  # None, "enabled" or "disabled"
    generator: bool = False
    saved: tuple[str, ...] = ()  # the optional parts given to save_checkpoint
    loaded: tuple[str, ...] = ()  # the optional parts given to load_checkpoint
    rng_seed: int = 0
    gauss_cached: bool = False
    step: int = 0
    path_form: str = "path"  # "path", "text", "relative"
    folders: tuple[str, ...] = ()  # parent folders that do not exist yet
    file_name: str = "ckpt.pt"
    previous: bool = False  # a previous file at path
    map_location: str = "omitted"
    seed: int = 0

    @property
    def raises(self) -> bool:
        return bool(set(self.loaded) - set(self.saved))

    @property
    def size(self) -> tuple[int, ...]:
        return (len(self.saved) + len(self.loaded), MODELS.index(self.model), self.groups, self.steps,
                len(self.folders), self.step.bit_length())

    def relative_path(self) -> str:
        return os.path.join(*self.folders, self.file_name)

    def call(self) -> str:
        shown_path = {"path": f"Path({os.path.join('...', self.relative_path())!r})",
                      "text": repr(os.path.join("...", self.relative_path())),
                      "relative": repr(self.relative_path()) + " (relative to the current folder)"}[self.path_form]
        saved = "".join(f", {part}=..." for part in self.saved)
        loaded = "".join(f", {part}=..." for part in self.loaded)
        where = {"omitted": "", "cpu": ", map_location='cpu'", "device": ", map_location=torch.device('cpu')",
                 "dict": ", map_location={'cuda:0': 'cpu'}", "function": ", map_location=<a function>"}[self.map_location]
        return (f"save_checkpoint({shown_path}, model=..., optimizer=..., step={self.step}{saved}), then in a restart "
                f"load_checkpoint(path, model=..., optimizer=...{loaded}{where})")

    def describe(self) -> str:
        parts = [f"model {self.model} ({self.dtype}{', a frozen layer' if self.frozen else ''})",
                 f"{self.optimizer} with {self.groups} parameter group(s), stepped {self.steps} time(s)"]
        if self.scheduler:
            parts.append(f"scheduler {self.scheduler}")
        if self.scaler:
            parts.append(f"a GradScaler ({self.scaler})")
        if self.generator:
            parts.append("a DataLoader generator")
        parts.append(f"Python and NumPy {'holding' if self.gauss_cached else 'without'} a cached Gaussian")
        if self.previous:
            parts.append("path already holds a file")
        return "; ".join(parts)


def generate_config(generator: random.Random) -> Config:
    """A round trip the specification allows (see above)."""
    optional = [part for part, present in (("scheduler", generator.random() < 0.7), ("scaler", generator.random() < 0.5),
                                           ("generator", generator.random() < 0.6)) if present]
    saved = tuple(optional)
    if generator.random() < 0.2:  # an object passed at load whose state was never saved: KeyError
        absent = [p for p in ALL_PARTS if p not in saved]
        loaded = tuple(p for p in ALL_PARTS if p in saved and generator.random() < 0.7) + (
            (domain.pick(generator, absent),) if absent else ())
    else:
        loaded = tuple(p for p in saved if generator.random() < 0.8)
    wanted = set(saved) | set(loaded)
    model = domain.pick(generator, MODELS)
    return Config(
        model=model, dtype=domain.pick(generator, ["float32", "float32", "float64", "bfloat16"]),
        frozen=generator.random() < 0.25, optimizer=domain.pick(generator, OPTIMIZERS),
        groups=domain.pick(generator, [1, 2]), steps=domain.small_int(generator, 0, 3),
        scheduler=domain.pick(generator, SCHEDULERS[1:]) if "scheduler" in wanted else None,
        scaler=domain.pick(generator, ["enabled", "enabled", "disabled"]) if "scaler" in wanted else None,
        generator="generator" in wanted, saved=saved, loaded=loaded, rng_seed=generator.randrange(2**32),
        gauss_cached=generator.random() < 0.5, step=domain.pick(generator, STEPS) if generator.random() < 0.6
        else generator.randrange(0, 10**6),
        path_form=domain.pick(generator, ["path", "text", "relative"]),
        folders=tuple(domain.pick(generator, ["runs", "exp 2", "d\u00e9j\u00e0", "a.b"])
                      for _ in range(domain.small_int(generator, 0, 3))),
        file_name=domain.pick(generator, FILE_NAMES), previous=generator.random() < 0.3,
        map_location=domain.pick(generator, MAP_LOCATIONS), seed=generator.randrange(10**6))


class _Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.BatchNorm1d(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.linear(x)))


class NestedNet(nn.Module):
    """BatchNorm two and three levels down, a parameter and a buffer on the root module."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 6)
        self.body = nn.Sequential(_Block(6), nn.Sequential(_Block(6), nn.Linear(6, 3)))
        self.temperature = nn.Parameter(torch.ones(3))
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.body(self.stem(x)) * self.temperature


class WideNet(nn.Module):
    """A ModuleDict of heads over a ModuleList of layers with LayerNorms."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 5), nn.LayerNorm(5), nn.Linear(5, 5), nn.LayerNorm(5)])
        self.heads = nn.ModuleDict({name: nn.Linear(5, 3) for name in ("a", "b", "c", "d")})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return sum(head(x) for head in self.heads.values())


class TiedNet(nn.Module):
    """A weight shared by two layers, and one module under two names."""

    def __init__(self) -> None:
        super().__init__()
        self.encode = nn.Linear(4, 6, bias=False)
        self.middle = nn.Linear(6, 6)
        self.again = nn.Linear(6, 6)
        self.again.weight = self.middle.weight  # one parameter under two names
        self.decode = nn.Linear(6, 4)
        self.head = nn.Linear(4, 3)
        self.head_tied = self.head  # the same module twice: its state_dict keys once per name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.decode(torch.tanh(self.again(torch.tanh(self.middle(self.encode(x)))))))


@dataclasses.dataclass
class Built:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: Any
    generator: torch.Generator | None


def build_config(config: Config, seed: int, steps: int) -> Built:
    """The objects of ``config``, their values from ``seed``, trained ``steps`` steps (global RNGs not used after)."""
    init = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, config.dtype)
    model = {"mlp": lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)), "nested": NestedNet,
             "wide": WideNet, "tied": TiedNet}[config.model]().to(dtype)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=init) * 0.5)
    parameters = list(model.parameters())
    if config.frozen:
        parameters[0].requires_grad_(False)
        parameters = parameters[1:]
    groups: list[dict[str, Any]] = ([{"params": parameters}] if config.groups == 1 else
                                    [{"params": parameters[::2]}, {"params": parameters[1::2], "lr": 0.003}])
    optimizer = {"sgd": lambda: torch.optim.SGD(groups, lr=0.05),
                 "sgd_momentum": lambda: torch.optim.SGD(groups, lr=0.05, momentum=0.9, dampening=0.1),
                 "sgd_nesterov": lambda: torch.optim.SGD(groups, lr=0.05, momentum=0.8, nesterov=True),
                 "adam": lambda: torch.optim.Adam(groups, lr=0.01),
                 "adamw_amsgrad": lambda: torch.optim.AdamW(groups, lr=0.01, amsgrad=True),
                 "rmsprop": lambda: torch.optim.RMSprop(groups, lr=0.01, momentum=0.5),
                 "adagrad": lambda: torch.optim.Adagrad(groups, lr=0.05)}[config.optimizer]()
    scheduler = None
    if config.scheduler is not None:
        scheduler = {"step": lambda: torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5),
                     "multistep": lambda: torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 3], gamma=0.3),
                     "exponential": lambda: torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9),
                     "cosine_restarts": lambda: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2),
                     "onecycle": lambda: torch.optim.lr_scheduler.OneCycleLR(
                         optimizer, max_lr=0.1, total_steps=10,
                         cycle_momentum=bool({"momentum", "betas"} & set(optimizer.defaults))),
                     "plateau": lambda: torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0),
                     "lambda": lambda: torch.optim.lr_scheduler.LambdaLR(optimizer, _lambda_rate)}[config.scheduler]()
    scaler = None
    if config.scaler == "disabled":
        scaler = torch.amp.GradScaler("cpu", enabled=False)
    elif config.scaler == "enabled":
        scaler = torch.amp.GradScaler("cpu")
        scaler.load_state_dict({"scale": 2.0 ** (seed % 20), "growth_factor": 2.0, "backoff_factor": 0.5,
                                "growth_interval": 1 + seed % 7, "_growth_tracker": seed % 5})
    generator = None
    if config.generator:
        generator = torch.Generator().manual_seed(seed + 1)
        torch.randperm(5 + seed % 11, generator=generator)
    inputs = torch.randn(5, 4, generator=init).to(dtype)
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index in range(steps):
            optimizer.zero_grad()
            model(inputs).square().mean().backward()
            optimizer.step()
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(1.0 + index)  # getting worse: the rate drops
            elif scheduler is not None:
                scheduler.step()
    return Built(model, optimizer, scheduler, scaler, generator)


def _lambda_rate(epoch: int) -> float:
    return 0.5 ** epoch


def seed_config_rngs(config: Config, seed: int) -> None:
    """Every global RNG somewhere in its sequence, a cached Gaussian or not."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)  # the CPU's (torch.manual_seed also queues every CUDA device's)
    for _ in range(seed % 5):
        random.random(), np.random.rand(), torch.rand(1)
    if config.gauss_cached:
        random.gauss(0.0, 1.0)
        np.random.randn()


def built_facts(built: Built) -> dict[str, Any]:
    """What each object holds now, and the next draws of every RNG (each put back)."""
    facts: dict[str, Any] = {"model": {}, "optimizer": {}, "scheduler": {}, "scaler": {}}
    _tensor_facts("model", built.model.state_dict(), facts["model"])
    _tensor_facts("optimizer", built.optimizer.state_dict(), facts["optimizer"])
    if built.scheduler is not None:
        _tensor_facts("scheduler", built.scheduler.state_dict(), facts["scheduler"])
    if built.scaler is not None:
        _tensor_facts("scaler", built.scaler.state_dict(), facts["scaler"])
    draws: dict[str, Any] = {}
    state = random.getstate()
    draws["Python's random"] = (random.gauss(0.0, 1.0), random.random())
    random.setstate(state)
    state = np.random.get_state()
    draws["NumPy's global generator"] = (float(np.random.randn()), float(np.random.rand()))
    np.random.set_state(state)
    state = torch.get_rng_state()
    draws["torch's CPU generator"] = torch.rand(3)
    torch.set_rng_state(state)
    if built.generator is not None:
        state = built.generator.get_state()
        draws["the DataLoader's generator (data order)"] = torch.randperm(8, generator=built.generator)
        built.generator.set_state(state)
    facts["rng"] = draws
    return facts


def keep_storage(storage: Any, location: str) -> Any:
    """A map_location function: every storage stays where it was loaded (the CPU)."""
    return storage


def _map_location_argument(kind: str) -> dict[str, Any]:
    return {"omitted": {}, "cpu": {"map_location": "cpu"}, "device": {"map_location": torch.device("cpu")},
            "dict": {"map_location": {"cuda:0": "cpu"}}, "function": {"map_location": keep_storage}}[kind]


def _rebuild_steps(config: Config) -> int:
    return (config.steps + 1 + config.seed % 2) % 4  # never the saved count: the rebuilt state differs


def round_trip_scenario(student: RunnerStudent, configs: list[Config], folder: str) -> list[dict[str, Any]]:
    """In the runner: for each config, build, save, rebuild from other seeds, reseed every RNG, load, observe."""
    observed = []
    previous_folder = os.getcwd()
    for index, config in enumerate(configs):
        base = pathlib.Path(folder) / f"case{index}"
        base.mkdir()
        target: Any = config.relative_path() if config.path_form == "relative" else base / config.relative_path()
        if config.path_form == "text":
            target = os.fspath(target)
        report: dict[str, Any] = {}
        os.chdir(base)
        try:
            if config.previous:
                existing = base / config.relative_path()
                existing.parent.mkdir(parents=True, exist_ok=True)
                existing.write_bytes(b"an earlier checkpoint")
            saved = build_config(config, config.seed, config.steps)
            seed_config_rngs(config, config.rng_seed)
            try:
                student.call("save_checkpoint", target, model=saved.model, optimizer=saved.optimizer, step=config.step,
                             **{part: getattr(saved, part) for part in config.saved})
            except StudentRaised as exc:
                observed.append({"stage": "save", "describe": exc.error.describe()})
                continue
            written = base / config.relative_path()
            report["written"] = written.is_file()
            report["leftovers"] = sorted(os.fspath(p.relative_to(base)) for p in base.rglob("*")
                                         if p.is_file() and p != written)
            rebuilt = build_config(config, config.seed + 7919, _rebuild_steps(config))
            seed_config_rngs(config, config.rng_seed + 104729)
            try:
                step = student.call("load_checkpoint", target, model=rebuilt.model, optimizer=rebuilt.optimizer,
                                    **{part: getattr(rebuilt, part) for part in config.loaded},
                                    **_map_location_argument(config.map_location))
            except StudentRaised as exc:
                report.update(stage="load", describe=exc.error.describe(), key_error=exc.error.is_instance(KeyError))
                observed.append(report)
                continue
            report.update(stage="done", step=_describe_step(step), facts=built_facts(rebuilt))
            observed.append(report)
        finally:
            os.chdir(previous_folder)
    return observed


@judge_only
def expected_round_trip(config: Config) -> dict[str, Any]:
    """What the loaded objects must hold: the saved objects' states and the RNGs as they were at the save."""
    with one_torch_thread():
        saved = build_config(config, config.seed, config.steps)
        state = (random.getstate(), np.random.get_state(), torch.get_rng_state())
        try:
            seed_config_rngs(config, config.rng_seed)
            facts = built_facts(saved)
        finally:
            random.setstate(state[0])
            np.random.set_state(state[1])
            torch.set_rng_state(state[2])
    return {"facts": facts}


@dataclasses.dataclass
class RoundTrip:
    got: str | None = None
    expected: str | None = None
    parts: tuple[str, ...] = ()  # the parts that differ after loading
    entries: tuple[str, ...] = ()  # the state entries that differ

    @property
    def wrong(self) -> bool:
        return self.got is not None


@judge_only
def _judge_round_trip(config: Config, seen: dict[str, Any]) -> RoundTrip:
    if seen["stage"] == "save":
        return RoundTrip(got=f"save_checkpoint {seen['describe']}", expected="the checkpoint written")
    if not seen["written"]:
        return RoundTrip(got="no file at path after save_checkpoint returned", expected="the checkpoint at path")
    if seen["leftovers"]:
        return RoundTrip(got=f"save_checkpoint left {seen['leftovers']} next to the checkpoint",
                         expected="only the checkpoint (the temporary file moved onto path)")
    if config.raises:
        missing = sorted(set(config.loaded) - set(config.saved))
        if seen["stage"] == "load" and seen["key_error"]:
            return RoundTrip()
        got = f"it {seen['describe']}" if seen["stage"] == "load" else f"it returned {seen['step']['repr']}"
        return RoundTrip(got=got, expected=f"KeyError (a {' and a '.join(missing)} passed, none saved)",
                         parts=tuple(missing))
    if seen["stage"] == "load":
        return RoundTrip(got=f"load_checkpoint {seen['describe']}", expected=f"the step, {config.step}")
    if seen["step"]["int"] != config.step:
        return RoundTrip(got=f"load_checkpoint returned {seen['step']['repr']} (a {seen['step']['type']})",
                         expected=f"{config.step} (the saved step, an int)", parts=("step",))
    expected = expected_round_trip(config)
    wrong_parts, wrong_entries = [], []
    restored = ["model", "optimizer", "rng"] + [p for p in ("scheduler", "scaler") if p in config.loaded]
    for part in restored:
        got_part, want = seen["facts"][part], expected["facts"][part]
        if part == "rng":
            got_part = {k: v for k, v in got_part.items()
                        if k != "the DataLoader's generator (data order)" or "generator" in config.loaded}
            want = {k: v for k, v in want.items()
                    if k != "the DataLoader's generator (data order)" or "generator" in config.loaded}
        differing = _differences(got_part, want)
        if differing:
            wrong_parts.append(part)
            wrong_entries.extend(differing)
    if not wrong_parts:
        return RoundTrip()
    shown = ", ".join(wrong_entries[:6]) + (f" and {len(wrong_entries) - 6} more" if len(wrong_entries) > 6 else "")
    return RoundTrip(got=f"after load_checkpoint these differ from what was saved: {shown}",
                     expected="every state exactly as it was saved (model, optimizer, the parts passed, every RNG)",
                     parts=tuple(wrong_parts), entries=tuple(wrong_entries))


@judge_only
def _round_trip_cause(configs: list[Config], verdicts: list[RoundTrip]) -> str | None:
    """Named only when the observations single it out on every failing case."""
    failing = [(c, v) for c, v in zip(configs, verdicts) if v.wrong]
    if not failing or any(not v.parts for _, v in failing):
        return None
    if all(c.raises for c, _ in failing):
        missing = sorted({p for _, v in failing for p in v.parts})
        return (f"an object passed to load_checkpoint whose state the checkpoint does not hold (here: "
                f"{', '.join(missing)}) must raise KeyError")
    if any(c.raises for c, _ in failing):
        return None
    parts = {p for _, v in failing for p in v.parts}
    if len(parts) != 1:
        return None
    part = parts.pop()
    if part == "model":
        buffers = all(_is_buffer_entry(e) for _, v in failing for e in v.entries)
        if buffers:
            return ("only the model's buffers differ (BatchNorm's running statistics, num_batches_tracked, a "
                    "registered buffer): save model.state_dict(), which holds buffers as well as parameters")
        return PART_CAUSES["model"]
    if part in ("optimizer", "scaler"):
        return PART_CAUSES[part]
    if part == "scheduler":
        return ("the scheduler's state_dict was not saved or not restored in full (scheduler.state_dict() / "
                "scheduler.load_state_dict(): last_epoch, _step_count, _last_lr and the rest)")
    if part == "rng":
        names = {e.split("[")[0] for _, v in failing for e in v.entries}
        if all(n in RNG_CAUSES for n in names):
            return "save and restore " + "; ".join(RNG_CAUSES[n] for n in sorted(names))
    return None


def _is_buffer_entry(entry: str) -> bool:
    return entry.rsplit(".", 1)[-1] in ("running_mean", "running_var", "num_batches_tracked", "calls")


ROUND_TRIPS_PER_CALL = 4  # per scenario call: each call has its own time limit (a runner's first calls warm up)


def _grade_round_trips(student: Submission, configs: list[Config]) -> list[RoundTrip]:
    root = pathlib.Path(tempfile.mkdtemp(prefix="course-checkpoint-gen-", dir=exchange_folder(memory=True)))
    try:
        observed = []
        for start in range(0, len(configs), ROUND_TRIPS_PER_CALL):
            chunk = root / f"chunk{start}"
            chunk.mkdir()
            observed.extend(student.scenario(round_trip_scenario, configs[start:start + ROUND_TRIPS_PER_CALL],
                                             os.fspath(chunk)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return [_judge_round_trip(config, seen) for config, seen in zip(configs, observed)]


def _smaller_configs(config: Config) -> list[Config]:
    simpler = [dataclasses.replace(config, model="mlp"), dataclasses.replace(config, groups=1),
               dataclasses.replace(config, steps=max(0, config.steps - 1)), dataclasses.replace(config, folders=()),
               dataclasses.replace(config, step=7), dataclasses.replace(config, frozen=False),
               dataclasses.replace(config, dtype="float32"), dataclasses.replace(config, previous=False),
               dataclasses.replace(config, path_form="path"), dataclasses.replace(config, file_name="ckpt.pt"),
               dataclasses.replace(config, map_location="omitted"), dataclasses.replace(config, optimizer="sgd")]
    for part in config.saved:
        if part not in config.loaded:
            simpler.append(dataclasses.replace(config, saved=tuple(p for p in config.saved if p != part),
                                               **({part: None} if part != "generator" else {"generator": False})))
    for part in config.loaded:
        if part in config.saved:
            simpler.append(dataclasses.replace(config, loaded=tuple(p for p in config.loaded if p != part)))
    return simpler


@CHECKPOINT.check(points=2)
def round_trips_on_generated_setups(student: Submission, device: torch.device) -> None:
    """On 40 generated set-ups (nested and wide models with buffers, every optimizer and scheduler kind, scalers enabled or disabled, any step, any path), load_checkpoint restores what was saved, returns the step, and raises KeyError for a part never saved."""
    configs = domain.draw(generate_config, 40, size=lambda c: c.size)
    verdicts = _grade_round_trips(student, configs)
    worst = domain.smallest(configs, [v.wrong for v in verdicts], lambda c: c.size)
    if worst is None:
        return
    smallest = domain.shrink(worst, _smaller_configs, lambda options: [v.wrong for v in _grade_round_trips(student, options)],
                             rounds=8)
    verdict = _grade_round_trips(student, [smallest])[0]
    if not verdict.wrong:
        smallest, verdict = worst, verdicts[configs.index(worst)]
    failed = sum(v.wrong for v in verdicts)
    fail_mismatch(f"a round trip went wrong on {failed} of {len(configs)} generated set-ups; the smallest found",
                  given=f"{smallest.call()}, with {smallest.describe()}", expected=verdict.expected, got=verdict.got,
                  cause=_round_trip_cause(configs, verdicts))
