"""ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches): one optimizer step of gradient
accumulation under DistributedDataParallel, with one gradient all-reduce per call.

Each check runs a real process group (gloo on CPU; NCCL with a GPU per rank) through
:func:`graders.ranks.run_on_ranks`. On every rank a scenario builds the same model from an
:class:`AccumulationCase`, wraps it in DDP with a communication hook that records every bucket it
all-reduces, records at each forward and each backward whether it ran inside ``no_sync`` (DDP decides at
forward time whether the coming backward all-reduces), counts forwards that went around DDP
(``ddp_model.module(x)``) and all-reduces the student's code makes by hand, and calls the student's
function once per step with that rank's own micro-batches. It reports those records, the returned value and the parameters after
each call.

The judge trains the same model in one process on every rank's micro-batches (the mean loss over all of
them), step by step, and expects those parameters on every rank. A wrong step is compared with what
common mistakes give (losses not divided, divided by the ranks as well, old gradients kept, only the last
micro-batch, no synchronisation) and the one mistake that matches is named.

``matches_on_generated_cases`` draws cases from the specification's whole domain (:func:`generate_accumulation`:
any optimizer and loss, gradient norms far above 1, deeper, frozen and nested models, float64, several calls)
and checks every record and value on each; it names the smallest failing case, and a cause only when the same
catalogued mistake fits every case whose parameters are wrong.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import random
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from graders import domain
from graders.compare import difference, show, show_number
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, fail, fail_mismatch
from graders.ranks import RankContext, ddp_group
from graders.registry import exercise, judge_only
from graders.student import Submission

DDP_ACCUMULATION = exercise("ddp_accumulation", chapter="08_ddp", names=["ddp_accumulation_step"],
                            warm_compiler_stack=True)

RTOL, ATOL = 1e-5, 1e-6  # parameters after a step: float32 sums in another order differ in the last bits
LOSS_RTOL = 1e-5


@dataclasses.dataclass(frozen=True)
class AccumulationCase:
    world_size: int = 2
    counts: tuple[int, ...] = (3, 3)  # micro-batches per call; one call per optimizer step
    batch: int = 5  # samples per micro-batch (not a count or a world size: dividing by it is no other mistake)
    bucket_cap_mb: float = 25.0  # tiny: several gradient buckets (after DDP's first step)
    leftover: bool = False  # gradients lie in .grad before the first call
    loss: str = "mse"  # or "cross_entropy"
    momentum: float = 0.0
    lr: float = 0.5
    seed: int = 3
    empty_call: bool = False  # after the steps, call with an empty list
    # The generated domain's dimensions (the hand-written cases keep the defaults):
    optimizer: str = "sgd"  # "sgd", "adam", "adamw", "rmsprop"
    hidden: tuple[int, ...] = (16,)  # widths of the hidden layers
    frozen: bool = False  # the first layer is frozen (requires_grad=False; DDP leaves it out)
    nested: bool = False  # the layers sit one level deeper, in a module of their own
    double: bool = False  # a float64 model and data
    scale: float = 1.0  # targets (or logits' inputs) this many times larger: gradient norms far above 1
    bucket_view: bool = False  # DDP(gradient_as_bucket_view=True)
    weight_decay: float = 0.0
    repeated: bool = False  # each call's micro-batches are one (inputs, targets) object, listed again and again
    dropout_eval: bool = False  # a Dropout layer, the model handed over in eval mode (and left in it)

    def given(self, call: int) -> str:
        leftover = "; gradients were left in .grad before the first call" if self.leftover else ""
        steps = f"call {call + 1} of {len(self.counts)}" if len(self.counts) > 1 else "one call"
        return (f"{self.world_size} ranks, each with its own {self.counts[call]} micro-batches of {self.batch} "
                f"samples ({steps}); {self.loss} loss, {self.optimizer_text}{leftover}{self.model_text}")

    @property
    def optimizer_text(self) -> str:
        decay = f", weight_decay={self.weight_decay}" if self.weight_decay else ""
        if self.optimizer == "sgd":
            return f"SGD(lr={self.lr}, momentum={self.momentum}{decay})"
        return f"{OPTIMIZERS[self.optimizer].__name__}(lr={self.lr}{decay})"

    @property
    def model_text(self) -> str:
        parts = [f"hidden layers {list(self.hidden)}"] if self.hidden != (16,) else []
        parts += [text for flag, text in ((self.frozen, "the first layer frozen"), (self.nested, "layers nested in a "
                  "submodule"), (self.double, "float64"), (self.bucket_view, "DDP(gradient_as_bucket_view=True)"),
                  (self.repeated, "each call's micro-batches the same (inputs, targets) object listed again "
                                  "([batch] * n)"),
                  (self.dropout_eval, "a Dropout layer, the model in eval mode"))
                  if flag]
        if self.scale != 1.0:
            parts.append(f"targets scaled by {show_number(self.scale)}")
        if self.bucket_cap_mb < 1:
            parts.append("tiny gradient buckets")
        return f"; {', '.join(parts)}" if parts else ""

    @property
    def size(self) -> tuple[float, ...]:
        return (sum(self.counts), len(self.counts), sum(self.hidden), self.batch, self.scale)


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
              "rmsprop": torch.optim.RMSprop}


class Nested(nn.Module):
    """The layers one level deeper: ``self.body.layers``."""

    def __init__(self, layers: nn.Module) -> None:
        super().__init__()
        self.body = nn.Module()
        self.body.layers = layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body.layers(x)


def build_model(case: AccumulationCase) -> nn.Module:
    with torch.random.fork_rng(devices=[]):  # the global RNG seeds the layers; the caller's stays as it was
        torch.manual_seed(case.seed)
        outputs = 3 if case.loss == "cross_entropy" else 4
        widths = [6, *case.hidden]
        layers: list[nn.Module] = []
        for before, after in zip(widths, widths[1:]):
            layers += [nn.Linear(before, after), nn.Tanh()]
        if case.dropout_eval:
            layers.append(nn.Dropout(0.5))
        layers.append(nn.Linear(widths[-1], outputs))
        model: nn.Module = nn.Sequential(*layers)
        if case.frozen:
            layers[0].requires_grad_(False)
        if case.nested:
            model = Nested(model)
        if case.dropout_eval:  # in eval mode Dropout does nothing; in training mode it would draw a mask
            model.eval()
        return model.double() if case.double else model


def loss_function(case: AccumulationCase) -> nn.Module:
    return {"cross_entropy": nn.CrossEntropyLoss(), "l1": nn.L1Loss(), "mse_sum": nn.MSELoss(reduction="sum"),
            "smooth_l1": nn.SmoothL1Loss()}.get(case.loss, nn.MSELoss())


def _trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def micro_batches(case: AccumulationCase, rank: int, call: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Rank ``rank``'s micro-batches for call ``call`` (on the CPU)."""
    data = torch.Generator().manual_seed(10_000 * case.seed + 100 * call + rank)
    dtype = torch.float64 if case.double else torch.float32
    batches = []
    for _ in range(case.counts[call]):
        inputs = torch.randn(case.batch, 6, generator=data, dtype=dtype)
        if case.loss == "cross_entropy":
            inputs = inputs * case.scale
            targets = torch.randint(0, 3, (case.batch,), generator=data)
        else:
            targets = torch.randn(case.batch, 4, generator=data, dtype=dtype) * case.scale
        batches.append((inputs, targets))
    if case.repeated:  # the very same object at every place (a "last micro-batch" found by identity is every one)
        return [batches[0]] * len(batches)
    return batches


def leftover_gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    """The same stale gradients on every rank (what a previous step could have left)."""
    stale = torch.Generator().manual_seed(77)
    return {name: 3.0 * torch.randn(p.shape, generator=stale, dtype=p.dtype) for name, p in _trainable(model)}


def make_optimizer(case: AccumulationCase, model: nn.Module) -> torch.optim.Optimizer:
    if case.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=case.lr, momentum=case.momentum, weight_decay=case.weight_decay)
    return OPTIMIZERS[case.optimizer](model.parameters(), lr=case.lr, weight_decay=case.weight_decay)


# ==================================================================================================
# On each rank
# ==================================================================================================
_ALL_REDUCE = dist.all_reduce  # the hook's own: the student's all-reduces are counted through dist.all_reduce


@dataclasses.dataclass
class _Record:
    world_size: int
    group: Any  # DDP's process group
    buckets: list[tuple[int, bool]] = dataclasses.field(default_factory=list)  # (index, is_last) per all-reduce
    forwards: list[bool] = dataclasses.field(default_factory=list)  # DDP's forward: would its backward sync?
    backwards: list[bool] = dataclasses.field(default_factory=list)  # each backward: outside no_sync?
    inner: int = 0  # forwards of the wrapped module (through DDP or around it)
    by_hand: int = 0  # all-reduces the student's code made on gradient-sized tensors


def _counting_allreduce_hook(record, bucket):  # type: ignore[no-untyped-def]
    """DDP's default behaviour (all-reduce the bucket, divide by the world size), recorded.

    (No annotations: DDP checks them, and ``from __future__ import annotations`` would turn them into text.)
    """
    record.buckets.append((bucket.index(), bucket.is_last()))
    future = _ALL_REDUCE(bucket.buffer(), group=record.group, async_op=True).get_future()
    return future.then(lambda done: done.value()[0].div_(record.world_size))


@contextlib.contextmanager
def _all_reduce_counted(record: _Record, model: nn.Module) -> Iterator[None]:
    """Count the student's ``dist.all_reduce`` calls on tensors the size of a gradient (or of all of them)."""
    sizes = {p.numel() for p in model.parameters()} | {sum(p.numel() for p in model.parameters())}
    modules = (dist, dist.distributed_c10d)
    originals = [module.all_reduce for module in modules]

    def counted(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel() in sizes:
            record.by_hand += 1
        return originals[0](tensor, *args, **kwargs)

    for module in modules:
        module.all_reduce = counted
    try:
        yield
    finally:
        for module, original in zip(modules, originals):
            module.all_reduce = original


def _describe_return(value: Any) -> dict[str, Any]:
    if isinstance(value, float):
        return {"kind": "float", "value": float(value)}
    if isinstance(value, torch.Tensor):
        return {"kind": "other", "what": f"a tensor ({value.dtype}, shape {tuple(value.shape)})",
                "hint": "return a Python float: loss.item()"}
    return {"kind": "other", "what": f"{type(value).__qualname__} {repr(value)[:80]}",
            "hint": "return this rank's mean micro-batch loss as a float"}


def accumulate_on_rank(student: RunnerStudent, rank: RankContext, case: AccumulationCase) -> dict[str, Any]:
    """Wrap the model in DDP (recorded), call the student's step once per entry of ``case.counts``."""
    return _accumulate(student, rank, case, ddp_group(rank.backend))  # all ranks; see graders.ranks.ddp_group


def accumulate_generated(student: RunnerStudent, rank: RankContext, cases: list[AccumulationCase]) -> dict[str, Any]:
    """Every generated case in turn (a model, DDP, optimizer and calls of its own); stops at the first that raises."""
    group = ddp_group(rank.backend)
    observed = []
    for index, case in enumerate(cases):
        try:
            observed.append(_accumulate(student, rank, case, group))
        except StudentRaised as exc:
            return {"cases": observed, "raised": dataclasses.asdict(exc.error), "at": index}
    return {"cases": observed, "raised": None, "at": None}


def _accumulate(student: RunnerStudent, rank: RankContext, case: AccumulationCase, group: Any) -> dict[str, Any]:
    device = torch.device(rank.device)
    model = build_model(case).to(device)
    ddp_model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None,
                                        bucket_cap_mb=case.bucket_cap_mb, process_group=group,
                                        gradient_as_bucket_view=case.bucket_view)
    record = _Record(rank.world_size, group)
    ddp_model.register_comm_hook(record, _counting_allreduce_hook)
    # Forwards without autograd (a loss measured under no_grad) change nothing in DDP: they are not counted.
    def note_forward(module: nn.Module, args: Any) -> None:
        if torch.is_grad_enabled():
            record.forwards.append(module.require_backward_grad_sync)

    def count_inner(module: nn.Module, args: Any) -> None:
        if torch.is_grad_enabled():
            record.inner += 1

    # The first layer's weight gets a gradient in every backward, once: its hook sees each backward.
    first = next(p for p in model.parameters() if p.requires_grad)
    hooks = [ddp_model.register_forward_pre_hook(note_forward), model.register_forward_pre_hook(count_inner),
             first.register_hook(lambda grad: record.backwards.append(ddp_model.require_backward_grad_sync))]
    try:
        return _calls(student, rank, case, model, ddp_model, record, device)
    finally:
        # Removed, because the tensor hook keeps the DDP model alive for good: the parameter holds the hook, the
        # hook the DDP model, and the autograd graph (C++, which gc cannot see) the parameter. Kept ranks serve
        # many runs: each run left 2 DDP models, their process groups and 3 threads alive (0.6 threads a case),
        # and the mutation benchmark's rounds of 400 cases ended both ranks with SIGABRT once threads ran out.
        for hook in hooks:
            hook.remove()


def _calls(student: RunnerStudent, rank: RankContext, case: AccumulationCase, model: nn.Module,
           ddp_model: DistributedDataParallel, record: "_Record", device: torch.device) -> dict[str, Any]:
    """The student's step called once per entry of ``case.counts`` (and on no micro-batches where the case asks)."""
    optimizer = make_optimizer(case, model)
    if case.leftover:
        stale = leftover_gradients(model)
        for name, parameter in _trainable(model):
            parameter.grad = stale[name].to(device)
    loss_fn = loss_function(case)
    function = student.get("ddp_accumulation_step")
    calls = []
    for call in range(len(case.counts)):
        given = micro_batches(case, rank.rank, call)
        moved = {id(batch): (batch[0].to(device), batch[1].to(device)) for batch in given}
        batches = [moved[id(batch)] for batch in given]  # (the same object where the case repeats one)
        record.buckets, record.forwards, record.backwards, record.inner, record.by_hand = [], [], [], 0, 0
        with _all_reduce_counted(record, model):
            value = student.run(function, ddp_model, optimizer, loss_fn, batches)
        calls.append({"buckets": list(record.buckets), "forwards": list(record.forwards),
                      "backwards": list(record.backwards), "inner": record.inner,
                      "by_hand": record.by_hand, "returned": _describe_return(value),
                      "params": {n: p.detach().cpu().clone() for n, p in model.named_parameters()},
                      "grads": {n: None if p.grad is None else p.grad.detach().cpu().clone()
                                for n, p in model.named_parameters()}})
    empty = None
    if case.empty_call:
        try:
            value = student.run(function, ddp_model, optimizer, loss_fn, [])
            empty = {"raised": None, "returned": repr(value)[:80]}
        except StudentRaised as exc:
            empty = {"raised": dataclasses.asdict(exc.error)}
    return {"calls": calls, "empty": empty}


# ==================================================================================================
# In the judge: the same steps in one process, on every rank's micro-batches
# ==================================================================================================
@dataclasses.dataclass
class Expected:
    params: list[dict[str, torch.Tensor]]  # after each call
    gradients: list[dict[str, torch.Tensor]]  # each call's step: the gradient of the mean loss over all micro-batches
    losses: list[list[float]]  # [call][rank]: that rank's mean micro-batch loss before the step
    losses_after: list[list[float]]  # the same, measured again after the step
    mistakes: list[dict[str, list[dict[str, torch.Tensor]]]]  # [call]: cause -> parameters on each rank


def _gradients(model: nn.Module, case: AccumulationCase, batches: dict[int, list], scale: float,
               ranks: list[int], only_last: bool = False, reverse: bool = False) -> dict[str, torch.Tensor]:
    """The gradient of sum over ``ranks`` and their micro-batches of loss * ``scale`` (only the last ones);
    ``reverse``: summed in the opposite order (another order than DDP's is as right: see _determinate)."""
    model.zero_grad(set_to_none=True)
    loss_fn = loss_function(case)
    for r in (reversed(ranks) if reverse else ranks):
        chosen = batches[r][-1:] if only_last else batches[r]
        for inputs, targets in (reversed(chosen) if reverse else chosen):
            (loss_fn(model(inputs), targets) * scale).backward()
    return {n: p.grad.detach().clone() for n, p in _trainable(model)}


def _stepped(model: nn.Module, optimizer: torch.optim.Optimizer, gradient: dict[str, torch.Tensor]
             ) -> tuple[nn.Module, torch.optim.Optimizer, dict[str, torch.Tensor]]:
    """A copy of ``model`` and ``optimizer`` stepped once with ``gradient``; and the copy's parameters."""
    model, optimizer = _copies(model, optimizer)
    for name, parameter in _trainable(model):
        parameter.grad = gradient[name].clone()
    optimizer.step()
    return model, optimizer, {n: p.detach().clone() for n, p in model.named_parameters()}


def _copies(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[nn.Module, torch.optim.Optimizer]:
    twin = copy.deepcopy(model)
    accepted = inspect.signature(type(optimizer).__init__).parameters  # AdamW's defaults hold one it does not take
    options = {k: v for k, v in optimizer.defaults.items() if k in accepted}
    twin_optimizer = type(optimizer)(twin.parameters(), **options)
    twin_optimizer.load_state_dict(copy.deepcopy(optimizer.state_dict()))  # it would share the momentum buffers
    return twin, twin_optimizer


@judge_only
def expected_run(case: AccumulationCase) -> Expected:
    model = build_model(case)
    optimizer = make_optimizer(case, model)
    ranks = list(range(case.world_size))
    stale = leftover_gradients(model) if case.leftover else None
    params, gradients, losses, losses_after, mistakes = [], [], [], [], []
    for call, count in enumerate(case.counts):
        batches = {r: micro_batches(case, r, call) for r in ranks}
        loss_fn = loss_function(case)
        with torch.no_grad():
            losses.append([sum(loss_fn(model(x), y).item() for x, y in batches[r]) / count for r in ranks])
        mean = _gradients(model, case, batches, 1.0 / (case.world_size * count), ranks)
        gradients.append(mean)
        alternatives: dict[str, Any] = {
            "each micro-batch's loss was not divided by the number of micro-batches, so the gradient is "
            "that many times too large": {n: g * count for n, g in mean.items()} if count > 1 else None,
            "the loss was also divided by the number of ranks: DDP already averages the gradients over the "
            "ranks": {n: g / case.world_size for n, g in mean.items()},
            "the gradient is summed over the ranks, not averaged (an all-reduce with SUM on top of DDP's mean?)":
                {n: g * case.world_size for n, g in mean.items()},
            "only the last micro-batch's gradient is left (are the gradients zeroed inside the loop?)":
                _gradients(model, case, batches, 1.0 / (case.world_size * count), ranks, only_last=True)
                if count > 1 else None,
        }
        if stale is not None:
            alternatives["gradients from before the call leaked in: zero them first (optimizer.zero_grad())"] = \
                {n: g + stale[n] for n, g in mean.items()}
        per_rank = {}
        for cause, gradient in alternatives.items():
            if gradient is not None:
                per_rank[cause] = [_stepped(model, optimizer, gradient)[2]] * case.world_size
        per_rank["the gradients were not synchronised between the ranks: each rank stepped with its own "
                 "gradient (did the forward go around DDP, through ddp_model.module, or did every backward "
                 "run inside no_sync?)"] = [
            _stepped(model, optimizer, _gradients(model, case, batches, 1.0 / count, [r]))[2] for r in ranks]
        per_rank["optimizer.step() was not called: the parameters did not change"] = [
            {n: p.detach().clone() for n, p in model.named_parameters()}] * case.world_size
        mistakes.append(per_rank)
        model, optimizer, after = _stepped(model, optimizer, mean)
        params.append(after)
        with torch.no_grad():
            losses_after.append([sum(loss_fn(model(x), y).item() for x, y in batches[r]) / count for r in ranks])
        stale = mean  # not zeroing next time would add this step's gradient
    return Expected(params, gradients, losses, losses_after, mistakes)


@judge_only
def _determinate(case: AccumulationCase, expected: Expected) -> bool:
    """Whether the parameters the case expects hold in DDP's order of summing the gradient (each rank's micro-batches,
    then the ranks) and in the reverse of the judge's. Adam's step divides
    the gradient by its own magnitude: a component that is zero but for rounding (smooth_l1's saturated ±1 terms
    cancelling over the micro-batches) moves its parameter by up to lr in a direction the summation order decides.
    DDP sums in its own order, so such a case has no one right answer to compare with, and is not judged (seen:
    the reference itself rejected, 1 generated case in 64, AdamW). So for the gradient itself: a component that
    cancels over large terms (mse_sum on scaled targets) differs by more than ATOL in another order (seen: 1 case
    in 475). And over several calls: the same two orders followed through the whole run, each from its own
    parameters, for an optimizer that divides by a running magnitude (RMSprop) makes a rounding difference of one
    call grow in the next; seen: the reference rejected on 1 case in 1588 (RMSprop, cross-entropy on logits scaled by
    100, the third call's gradient 2e-5 off, relatively), although each call alone held."""
    model = build_model(case)
    optimizer = make_optimizer(case, model)
    ranks = list(range(case.world_size))

    def ddp_order(model, batches, scale):  # each rank's micro-batches summed, then the ranks' sums
        per_rank = [_gradients(model, case, batches, scale, [r]) for r in ranks]
        return {n: sum(g[n] for g in per_rank) for n in per_rank[0]}

    def reverse_order(model, batches, scale):  # the reverse of the judge's
        return _gradients(model, case, batches, scale, ranks, reverse=True)

    orders = (ddp_order, reverse_order)
    followed = [_copies(model, optimizer) for _ in orders]  # each order's own run, from the same start
    for call, count in enumerate(case.counts):
        batches = {r: micro_batches(case, r, call) for r in ranks}
        scale = 1.0 / (case.world_size * count)
        for order in orders:  # this call alone, from the expected parameters
            mean = order(model, batches, scale)
            if not _close_params(mean, expected.gradients[call]):  # a component that cancels but for rounding
                return False
            if not _close_params(_stepped(model, optimizer, mean)[2], expected.params[call]):
                return False
        for index, order in enumerate(orders):  # the whole run so far, in this order
            own_model, own_optimizer = followed[index]
            mean = order(own_model, batches, scale)
            if not _close_params(mean, expected.gradients[call]):
                return False
            own_model, own_optimizer, params = _stepped(own_model, own_optimizer, mean)
            if not _close_params(params, expected.params[call]):
                return False
            followed[index] = (own_model, own_optimizer)
        model, optimizer, _ = _stepped(model, optimizer, expected.gradients[call])
    return True


def _close_params(got: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> bool:
    return all(torch.allclose(got[n].double(), expected[n].double(), rtol=RTOL, atol=ATOL) for n in expected)


def _run(student: Submission, case: AccumulationCase, device: Any) -> tuple[Expected, list[dict[str, Any]]]:
    expected = expected_run(case)  # expected values first, before any student code runs
    run = student.on_ranks(accumulate_on_rank, case.world_size, [(case,)] * case.world_size, device=device)
    try:
        return expected, run.values()
    except StudentCodeError as exc:
        raise exc.within(f"ddp_accumulation_step ({case.given(0)})") from None


def _parameter_causes(case: AccumulationCase, expected: Expected, observed: list[dict[str, Any]]) -> set[str] | None:
    """The catalogued mistakes whose parameters the first wrong rank holds after the first wrong call (None: every
    call right on every rank)."""
    for call in range(len(case.counts)):
        for rank, seen in enumerate(observed):
            got = seen["calls"][call]["params"]
            if not _close_params(got, expected.params[call]):
                return {cause for cause, params in expected.mistakes[call].items() if _close_params(got, params[rank])}
    return None


def _expect_parameters(case: AccumulationCase, expected: Expected, observed: list[dict[str, Any]],
                       allowed: set[str] | None = None) -> None:
    for call in range(len(case.counts)):
        for rank, seen in enumerate(observed):
            got = seen["calls"][call]["params"]
            want = expected.params[call]
            if _close_params(got, want):
                continue
            name = next(n for n in want if not torch.allclose(got[n].double(), want[n].double(), rtol=RTOL, atol=ATOL))
            causes = [cause for cause, params in expected.mistakes[call].items() if _close_params(got, params[rank])]
            ranks_differ = any(not _close_params(other["calls"][call]["params"], got) for other in observed)
            what = (f"after call {call + 1}, rank {rank}'s parameters are not those of one-process training on "
                    f"all ranks' micro-batches (the mean loss over all of them)")
            if ranks_differ:
                what += "; the ranks' parameters also differ from each other"
            fail_mismatch(what, given=case.given(call), expected=f"{name} = {show(want[name], 6)}",
                          got=f"{name} = {show(got[name], 6)}", where=difference(got[name], want[name], rtol=RTOL,
                                                                               atol=ATOL),
                          cause=_one(causes if allowed is None else [c for c in causes if c in allowed]))


def _one(causes: list[str]) -> str | None:
    return causes[0] if len(causes) == 1 else None


def _expect_stepped_gradient(case: AccumulationCase, expected: Expected, observed: list[dict[str, Any]]) -> None:
    """The gradients left in .grad after the call (unless cleared after the step) are those it stepped with:
    the gradient of the mean loss. (Right parameters with another gradient: the learning rate was scaled
    instead of the loss, which breaks momentum and every optimizer that is not plain SGD.)"""
    for call in range(len(case.counts)):
        for rank, seen in enumerate(observed):
            grads = {name: seen["calls"][call]["grads"][name] for name in expected.gradients[call]}
            if any(g is None or not bool(g.any()) for g in grads.values()):
                continue  # cleared after the step (set to None or zeros): nothing to see
            for name, want in expected.gradients[call].items():
                got = grads[name]
                if torch.allclose(got.double(), want.double(), rtol=RTOL, atol=ATOL):
                    continue
                ratio = float((got.double() * want.double()).sum() / (want.double() ** 2).sum())
                scaled = torch.allclose(got.double(), ratio * want.double(), rtol=1e-4, atol=1e-7)
                fail_mismatch(f"on rank {rank}, after call {call + 1}, the gradient in .grad (the one the step used) "
                              f"is not that of the mean loss over all micro-batches of all ranks",
                              given=case.given(call), expected=f"{name}.grad = {show(want, 6)}",
                              got=f"{name}.grad = {show(got, 6)}", where=difference(got, want, rtol=RTOL, atol=ATOL),
                              cause=(f"the gradient is {show_number(round(ratio, 4))} times the right one: the loss "
                                     f"must be divided by the number of micro-batches (scaling the learning rate "
                                     f"instead gives the same plain SGD step, but a wrong momentum and a wrong "
                                     f"gradient for clipping or any other optimizer)"
                                     if scaled and abs(ratio - case.counts[call]) < 1e-3 * case.counts[call] else
                                     None))


def _expect_one_all_reduce(case: AccumulationCase, observed: list[dict[str, Any]]) -> None:
    """Per call: forwards and backwards inside no_sync but the last, through DDP; each bucket all-reduced once."""
    for call, count in enumerate(case.counts):
        for rank, seen in enumerate(observed):
            record = seen["calls"][call]
            given = case.given(call)
            wanted = [False] * (count - 1) + [True]
            if not record["forwards"]:
                fail(f"on rank {rank}, no forward ran through ddp_model during the call ({count} micro-batches; "
                     f"{given}): call ddp_model(inputs) for each micro-batch")
            if record["inner"] > len(record["forwards"]):
                fail(f"on rank {rank}, {record['inner'] - len(record['forwards'])} of the {record['inner']} forwards "
                     f"went around DDP (ddp_model.module(x), or the model itself): DDP never saw them, so it cannot "
                     f"all-reduce their gradients; call ddp_model(x) ({given})")
            if True not in record["forwards"]:
                fail(f"on rank {rank}, every forward of the call ran inside ddp_model.no_sync(), the last one too, so "
                     f"DDP all-reduced nothing and each rank keeps its own gradient ({given}): the last micro-batch's "
                     f"forward and backward must run outside no_sync")
            if record["forwards"] != wanted:
                outside = [i + 1 for i, synced in enumerate(record["forwards"]) if synced]
                # The cause is named only when the count is right and only the places are wrong.
                fail(f"on rank {rank}, the forwards through ddp_model were {len(record['forwards'])} for {count} "
                     f"micro-batches, and forward(s) {outside} ran outside ddp_model.no_sync(); exactly one forward "
                     f"per micro-batch, and only the last outside no_sync ({given})"
                     + ("\n  likely cause: DDP decides during forward whether the coming backward all-reduces: every "
                        "micro-batch but the last needs its forward and its backward inside no_sync, and the last "
                        "one both outside" if len(record["forwards"]) == count else ""))
            if len(record["backwards"]) != count:
                fail(f"on rank {rank}, {len(record['backwards'])} backward(s) ran for {count} micro-batches; each "
                     f"micro-batch needs its own backward, right after its forward ({given})\n  likely cause: the "
                     f"losses were added up and one backward run on the sum, which keeps every micro-batch's graph "
                     f"(and its activations) in memory until the end: the memory accumulation is meant to save"
                     if len(record["backwards"]) == 1 else
                     f"on rank {rank}, {len(record['backwards'])} backward(s) ran for {count} micro-batches; each "
                     f"micro-batch needs its own backward, right after its forward ({given})"
                     if len(record["backwards"]) < count else
                     f"on rank {rank}, {len(record['backwards'])} backwards ran for {count} micro-batches ({given})")
            if record["backwards"] != wanted:
                outside = [i + 1 for i, synced in enumerate(record["backwards"]) if synced]
                fail(f"on rank {rank}, the backward of micro-batch(es) {outside} of {count} ran outside "
                     f"ddp_model.no_sync(); only the last one may ({given})\n  likely cause: no_sync must hold the "
                     f"backward as well as the forward (here DDP decided at forward time not to all-reduce, so the "
                     f"numbers come out right, but the specification asks for both inside)")
            indices = sorted(index for index, _ in record["buckets"])
            lasts = [index for index, last in record["buckets"] if last]
            if not record["buckets"]:
                fail(f"on rank {rank}, no gradient was all-reduced during the call ({given}): the last micro-batch's "
                     f"backward must run outside no_sync, so that DDP all-reduces every bucket once")
            if indices != list(range(len(indices))) or lasts != [len(indices) - 1]:
                fail(f"on rank {rank}, DDP all-reduced the gradient buckets {indices} during one call; each bucket "
                     f"must be all-reduced exactly once per call ({given})\n  likely cause: more than one backward "
                     f"ran outside no_sync")
            if record["by_hand"]:
                fail(f"on rank {rank}, the gradients were all-reduced by hand ({record['by_hand']} dist.all_reduce "
                     f"call(s)) as well as by DDP; DDP already averages them once, on the backward outside "
                     f"no_sync ({given})")


def _expect_losses(case: AccumulationCase, expected: Expected, observed: list[dict[str, Any]]) -> None:
    for call in range(len(case.counts)):
        for rank, seen in enumerate(observed):
            returned = seen["calls"][call]["returned"]
            want = expected.losses[call][rank]
            given = case.given(call)
            if returned["kind"] != "float":
                fail(f"on rank {rank}, ddp_accumulation_step returned {returned['what']}; expected the float "
                     f"{show_number(want)} ({returned['hint']}; {given})")
            got = returned["value"]
            if not abs(got - want) <= LOSS_RTOL * abs(want):  # written so that NaN fails
                others = expected.losses[call]
                hints = {
                    "the sum of the micro-batch losses, not their mean": want * case.counts[call],
                    "the mean over the ranks (this rank's own mean is asked for: no all-reduce of the loss)":
                        sum(others) / len(others),
                    "the mean divided again by the number of micro-batches": want / case.counts[call],
                    "the loss measured again after optimizer.step(): return the losses of the micro-batches as they "
                    "were computed for the step": expected.losses_after[call][rank],
                }
                causes = [c for c, v in hints.items() if abs(v - want) > LOSS_RTOL * abs(want)
                          and abs(got - v) <= LOSS_RTOL * abs(v)]
                fail_mismatch(f"on rank {rank}, the returned loss is not this rank's mean micro-batch loss",
                              given=given, expected=show_number(want), got=show_number(got),
                              cause=causes[0] if len(causes) == 1 else None)


# ==================================================================================================
# The checks
# ==================================================================================================
# The counts differ from the world size where they can, so that a gradient off by one factor is one mistake.
TWO_STEPS = AccumulationCase(world_size=2, counts=(3, 3))
SEVERAL_BUCKETS = AccumulationCase(world_size=2, counts=(4, 3, 4), bucket_cap_mb=0.0001, seed=5)
LEFTOVERS = AccumulationCase(world_size=2, counts=(3, 3), leftover=True, momentum=0.9, seed=7)
THREE_RANKS = AccumulationCase(world_size=3, counts=(2, 1), loss="cross_entropy", seed=11)
THEN_EMPTY = AccumulationCase(world_size=2, counts=(3,), empty_call=True, seed=13)
# One (inputs, targets) object listed three times: a "last micro-batch" found by identity (mb is batches[-1]) is
# every one of them
REPEATED = AccumulationCase(world_size=2, counts=(3,), bucket_cap_mb=0.0001, repeated=True, seed=17)
# A Dropout layer in a model handed over in eval mode: the step trains the model in the mode it was given
IN_EVAL_MODE = AccumulationCase(world_size=2, counts=(3, 2), dropout_eval=True, seed=19)
CASES = [TWO_STEPS, SEVERAL_BUCKETS, LEFTOVERS, THREE_RANKS, THEN_EMPTY, REPEATED, IN_EVAL_MODE]


@DDP_ACCUMULATION.check(points=3)
def matches_single_process_training(student: Submission, device: Any) -> None:
    """Two steps on 2 ranks give, on every rank, the parameters of one process trained on all micro-batches (also
    for a model with Dropout handed over in eval mode)."""
    for case in (TWO_STEPS, IN_EVAL_MODE):
        expected, observed = _run(student, case, device)
        _expect_parameters(case, expected, observed)
        _expect_stepped_gradient(case, expected, observed)


@DDP_ACCUMULATION.check(points=2)
def all_reduces_once_per_call(student: Submission, device: Any) -> None:
    """Forward and backward inside no_sync but the last; each gradient bucket all-reduced exactly once per call (also
    when the list holds one micro-batch object three times)."""
    for case in (SEVERAL_BUCKETS, REPEATED):
        expected, observed = _run(student, case, device)
        _expect_one_all_reduce(case, observed)
        _expect_parameters(case, expected, observed)


@DDP_ACCUMULATION.check(points=1)
def clears_leftover_gradients(student: Submission, device: Any) -> None:
    """Gradients already in .grad before the call (from an earlier step) do not leak into the step."""
    case = LEFTOVERS
    expected, observed = _run(student, case, device)
    _expect_parameters(case, expected, observed)
    _expect_stepped_gradient(case, expected, observed)


@DDP_ACCUMULATION.check(points=1)
def returns_the_mean_loss(student: Submission, device: Any) -> None:
    """On 3 ranks (with 2, then 1 micro-batches), each rank returns its own mean micro-batch loss as a float."""
    case = THREE_RANKS
    expected, observed = _run(student, case, device)
    _expect_losses(case, expected, observed)
    _expect_parameters(case, expected, observed)


@DDP_ACCUMULATION.check(points=1)
def empty_list_raises_value_error(student: Submission, device: Any) -> None:
    """An empty list of micro-batches raises ValueError (after a step that works)."""
    case = THEN_EMPTY
    expected, observed = _run(student, case, device)
    _expect_parameters(case, expected, observed)
    for rank, seen in enumerate(observed):
        empty = seen["empty"]
        if empty["raised"] is None:
            fail(f"on rank {rank}, ddp_accumulation_step(ddp_model, optimizer, loss_fn, []) returned "
                 f"{empty['returned']}; it must raise ValueError because there is no micro-batch to step with "
                 f"(likely cause: a missing check at the top of the function)")
        error = StudentError(**empty["raised"])
        if not error.is_instance(ValueError):
            fail(f"on rank {rank}, ddp_accumulation_step(ddp_model, optimizer, loss_fn, []) must raise ValueError "
                 f"because there is no micro-batch to step with, but it {error.describe()}\n  likely cause: "
                 + _empty_list_cause(error))


def _empty_list_cause(error: StudentError) -> str:
    """Why an empty list did not raise ValueError: the student's own check raised something else, or the list
    was used without a check (the error came from using it)."""
    own_line = (error.where or "").split(": ", 1)[-1].lstrip()
    if error.exception_type == "AssertionError":
        return "assert raises AssertionError; raise ValueError(...) instead"
    if error.kind != "raised" or error.exception_type == "SystemExit" or own_line.startswith("raise "):
        return "the check for an empty list is there, but the specification asks for ValueError: raise ValueError(...)"
    return "nothing checks for an empty list before it is used; raise ValueError(...) at the top"


# ==================================================================================================
# The generated domain (from the specification's sentences): 1 to 5 micro-batches per call (1: the only backward
# is the synced one), 1 to 3 calls in a row, micro-batches of 1 to 6 samples, any optimizer (SGD with or without
# momentum and weight decay, Adam, AdamW, RMSprop), any loss (mean, sum, L1, smooth L1, cross-entropy), targets up
# to 100 times larger (gradient norms far above 1: a clip that should not be there acts), deeper and narrower
# models, a frozen first layer, layers nested one level down, float64, several gradient buckets, DDP's
# gradient_as_bucket_view, gradients left in .grad before the first call.
# ==================================================================================================
GENERATED_WORLD = 2
CHUNK = 2  # generated cases per run of the ranks (each run has the per-request time limit; a fresh
# interpreter under spawn first imports what DDP and the optimizers need)


def generate_accumulation(generator: random.Random) -> AccumulationCase:
    optimizer = domain.pick(generator, ["sgd", "adam", "adamw", "rmsprop"], weights=[4, 1, 1, 1])
    loss = domain.pick(generator, ["mse", "cross_entropy", "l1", "mse_sum", "smooth_l1"], weights=[3, 2, 1, 1, 1])
    scale = domain.pick(generator, [1.0, 10.0, 100.0], weights=[1, 2, 2])
    batch = domain.small_int(generator, 1, 6)
    if optimizer == "sgd":  # steps of a sensible size: no run diverges to inf
        lr = domain.pick(generator, [0.1, 0.02]) / (scale * (4 * batch if loss == "mse_sum" else 1))
    else:
        lr = domain.pick(generator, [0.01, 0.001])
    calls = domain.small_int(generator, 1, 3)
    return AccumulationCase(
        world_size=GENERATED_WORLD, counts=tuple(domain.small_int(generator, 1, 5) for _ in range(calls)), batch=batch,
        bucket_cap_mb=domain.pick(generator, [25.0, 0.0001]), leftover=generator.random() < 0.5, loss=loss,
        momentum=domain.pick(generator, [0.0, 0.9]) if optimizer == "sgd" else 0.0, lr=lr,
        seed=generator.randint(0, 10**6), optimizer=optimizer,
        hidden=tuple(domain.pick(generator, [1, domain.small_int(generator, 2, 8), 16])
                     for _ in range(domain.small_int(generator, 1, 3))),
        frozen=generator.random() < 0.25, nested=generator.random() < 0.3, double=generator.random() < 0.25,
        scale=scale, bucket_view=generator.random() < 0.3,
        weight_decay=domain.pick(generator, [0.0, 0.0, 0.01]), repeated=generator.random() < 0.25,
        dropout_eval=generator.random() < 0.25)


@judge_only
def _expect_generated(student: Submission, device: Any, count: int) -> None:
    drawn = domain.draw(generate_accumulation, count, size=lambda c: c.size)
    expected_all = [expected_run(case) for case in drawn]  # expected values first, before any student code runs
    kept = [i for i, case in enumerate(drawn) if _determinate(case, expected_all[i])]
    cases, expected = [drawn[i] for i in kept], [expected_all[i] for i in kept]
    # Runs of at most CHUNK cases each (the mutation benchmark draws many more; one run has a time limit).
    observed: list[dict[str, Any]] = [{"cases": []} for _ in range(GENERATED_WORLD)]
    for first in range(0, len(cases), CHUNK):
        chunk = cases[first:first + CHUNK]
        run = student.on_ranks(accumulate_generated, GENERATED_WORLD, [(chunk,)] * GENERATED_WORLD, device=device)
        try:
            seen_chunk = run.values()
        except StudentCodeError as exc:
            raise exc.within(f"ddp_accumulation_step on {len(chunk)} generated cases, "
                             f"{GENERATED_WORLD} ranks") from None
        for rank, seen in enumerate(seen_chunk):
            if seen["raised"] is not None:
                case = chunk[seen["at"]]
                raise StudentCodeError(StudentError(**seen["raised"])).within(
                    f"on rank {rank}, ddp_accumulation_step ({case.given(0)})") from None
            observed[rank]["cases"].extend(seen["cases"])
    done = min(len(seen["cases"]) for seen in observed)
    per_case = [[seen["cases"][index] for seen in observed] for index in range(done)]
    causes = [_parameter_causes(case, expected[i], per_case[i]) for i, case in enumerate(cases[:done])]
    wrong = [c for c in causes if c is not None]
    allowed = set.intersection(*wrong) if wrong else None  # a cause must fit every case whose parameters are wrong
    failures: list[tuple[int, CheckFailed]] = []
    for index, case in enumerate(cases[:done]):
        try:
            _expect_one_all_reduce(case, per_case[index])
            _expect_parameters(case, expected[index], per_case[index], allowed)
            _expect_stepped_gradient(case, expected[index], per_case[index])
            _expect_losses(case, expected[index], per_case[index])
        except CheckFailed as exc:
            failures.append((index, exc))
    if failures:
        index, exc = min(failures, key=lambda f: cases[f[0]].size)
        raise CheckFailed(f"{len(failures)} of the {done} generated cases failed; the smallest of them:\n"
                          f"{exc}") from None


@DDP_ACCUMULATION.check(points=2)
def matches_on_generated_cases(student: Submission, device: Any) -> None:
    """Generated cases (1-5 micro-batches, several calls, any optimizer and loss, gradient norms far above 1,
    frozen and nested layers, float64, tiny buckets, gradient_as_bucket_view, stale gradients): one-process
    training's parameters and gradient, one all-reduce per bucket and call, and each rank's mean loss."""
    _expect_generated(student, device, 8)
