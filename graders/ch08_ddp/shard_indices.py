"""shard_indices(num_samples, rank, world_size, *, shuffle, seed, epoch, drop_last): DistributedSampler's
indices for one rank, without DistributedSampler and without touching the global RNG.

The judge asks ``torch.utils.data.DistributedSampler`` itself (the specification's definition) for every
expected list. A scenario calls the student's function on a batch of cases inside the runner and reports
each result as an observation (the list, or the type of what came back, or what was raised); the judge
compares. When a list is wrong, the judge also works out what common mistakes would have returned (the
epoch or the seed ignored, blocks instead of a stride, no padding, padding only once, drop_last ignored
or inverted, shuffle ignored) and names the one mistake that gives exactly the student's list.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

import torch

from graders.compare import show
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission, expect_error

SHARD_INDICES = exercise("shard_indices", chapter="08_ddp", names=["shard_indices"])


@dataclasses.dataclass(frozen=True)
class Case:
    num_samples: int
    rank: int
    world_size: int
    options: tuple[tuple[str, Any], ...] = ()  # keyword arguments given; the others keep their defaults

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.options)

    def option(self, name: str) -> Any:
        return self.kwargs.get(name, {"shuffle": True, "seed": 0, "epoch": 0, "drop_last": False}[name])

    @property
    def call(self) -> str:
        given = "".join(f", {k}={v!r}" for k, v in self.options)
        return f"shard_indices({self.num_samples}, {self.rank}, {self.world_size}{given})"


def _cases(sizes: list[tuple[int, int]], *option_sets: dict[str, Any], ranks: str = "all") -> list[Case]:
    """Every rank (or the first and last) of each (num_samples, world_size), with each set of options."""
    cases = []
    for num_samples, world_size in sizes:
        chosen = range(world_size) if ranks == "all" else sorted({0, world_size - 1})
        for options in option_sets:
            cases.extend(Case(num_samples, r, world_size, tuple(options.items())) for r in chosen)
    return cases


# ==================================================================================================
# The expected answer, and what common mistakes return
# ==================================================================================================
@judge_only
def sampler_indices(case: Case, **changes: Any) -> list[int]:
    """What DistributedSampler yields for ``case`` (with ``changes`` to its options) after set_epoch."""
    options = {name: case.option(name) for name in ("shuffle", "seed", "epoch", "drop_last")} | changes
    sampler = torch.utils.data.DistributedSampler(range(case.num_samples), num_replicas=case.world_size,
                                                  rank=case.rank, shuffle=options["shuffle"], seed=options["seed"],
                                                  drop_last=options["drop_last"])
    sampler.set_epoch(options["epoch"])
    return list(sampler)


@judge_only
def _order(case: Case, seed: int) -> list[int]:
    if not case.option("shuffle"):
        return list(range(case.num_samples))
    return torch.randperm(case.num_samples, generator=torch.Generator().manual_seed(seed)).tolist()


@judge_only
def _mistakes(case: Case) -> list[tuple[str, list[int]]]:
    """(cause, what that mistake returns) for the mistakes students make, on ``case``."""
    n, rank, size = case.num_samples, case.rank, case.world_size
    seed, epoch = case.option("seed"), case.option("epoch")
    drop_last, shuffle = case.option("drop_last"), case.option("shuffle")
    order = _order(case, seed + epoch)
    per_rank = n // size if drop_last and n % size else math.ceil(n / size)
    total = per_rank * size
    padded = (order * math.ceil(total / n))[:total] if n else []
    mistakes = [
        ("the epoch is ignored: DistributedSampler seeds its permutation with seed + epoch (that is what "
         "set_epoch changes), so each epoch has another order", sampler_indices(case, epoch=0)),
        ("the seed is ignored: the permutation is seeded with seed + epoch",
         sampler_indices(case, seed=0)),
        ("contiguous blocks: DistributedSampler gives rank r every world_size-th index, starting at r "
         "(indices[rank:total:world_size]), not one block per rank", padded[rank * per_rank:(rank + 1) * per_rank]),
        ("no padding: when num_samples is not a multiple of world_size (and drop_last is False), the order is "
         "extended with its own first indices so that every rank gets the same number",
         order[rank::size] if not drop_last else None),
        ("the padding is added only once: when it is longer than the order itself (more ranks than samples), "
         "the order must repeat as many times as needed",
         (order + order[:total - n])[rank:total:size] if not drop_last else None),
        ("drop_last is ignored: with drop_last=True the tail that does not fill every rank is dropped, "
         "nothing is padded", sampler_indices(case, drop_last=False)),
        ("drop_last works the wrong way round (or defaults to True): drop_last=True drops the tail, False (the "
         "default) pads",
         sampler_indices(case, drop_last=not drop_last)),
        ("with drop_last a whole round is dropped when world_size divides num_samples: only the tail that does "
         "not fill a round is dropped (num_samples // world_size each)",
         order[:total - size][rank::size] if drop_last and n % size == 0 and n else None),
        ("shuffle is ignored or defaults to False: shuffle=True (the default) permutes with torch.randperm and a "
         "generator seeded with seed + epoch; shuffle=False keeps the order 0, 1, 2, …", sampler_indices(case, shuffle=not shuffle)),
    ]
    return mistakes


def _cause(results: list[tuple[Case, list[int]]]) -> str | None:
    """The one mistake that gives exactly the student's list on every case of the check (a mistake that does
    not apply to a case, or changes nothing there, must leave the right list). One case alone is no
    evidence: with a few samples a wrong permutation often equals another by chance."""
    causes = None
    for case, got in results:
        expected = sampler_indices(case)
        fitting = {cause for cause, returned in _mistakes(case) if got == (expected if returned is None else returned)}
        causes = fitting if causes is None else causes & fitting
    return causes.pop() if causes and len(causes) == 1 else None


# ==================================================================================================
# In the runner: call the student's function on every case, describe what came back
# ==================================================================================================
def describe_result(value: Any) -> dict[str, Any]:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return {"kind": "ints", "values": [int(v) for v in value]}  # int subclasses are ints; bools are not indices
    if isinstance(value, torch.Tensor):
        return {"kind": "other", "what": f"a tensor ({value.dtype}, shape {tuple(value.shape)})",
                "hint": "return a Python list of ints, for example with .tolist()"}
    if isinstance(value, (list, tuple)):
        odd = next((v for v in value if not isinstance(v, int) or isinstance(v, bool)), None)
        if isinstance(value, list):
            return {"kind": "other", "what": f"a list holding a {type(odd).__module__}.{type(odd).__qualname__} "
                                             f"({odd!r})",
                    "hint": "every element must be a Python int (int(i), or .tolist() for a tensor or array)"}
        return {"kind": "other", "what": f"a {type(value).__name__}", "hint": "the specification asks for a list"}
    return {"kind": "other", "what": f"{type(value).__qualname__} {repr(value)[:80]}",
            "hint": "return the list of indices"}


def call_cases(student: RunnerStudent, cases: list[Case]) -> list[dict[str, Any]]:
    """The student's ``shard_indices`` on each case; stops at the first case that raises."""
    function = student.get("shard_indices")
    observed = []
    for case in cases:
        try:
            value = student.run(function, case.num_samples, case.rank, case.world_size, **case.kwargs)
        except StudentRaised as exc:
            observed.append({"kind": "raised", "error": dataclasses.asdict(exc.error)})
            break
        observed.append(describe_result(value))
    return observed


def rng_around_cases(student: RunnerStudent, cases: list[Case], seed: int) -> dict[str, Any]:
    """Seed torch's global generator and draw from it (so that reseeding cannot put it back by chance), call
    every case, and report the results and the generator's state before and after."""
    torch.manual_seed(seed)
    torch.rand(7)
    before = torch.get_rng_state()
    observed = call_cases(student, cases)
    return {"observed": observed, "before": before, "after": torch.get_rng_state()}


def _same_code(code: Any, original: Any) -> bool:
    """``code`` is a copy of ``original``'s text (the class's source run again with exec, under any name): the
    same arguments, local variables and global and attribute names, in the same order. (The bytecode itself
    may differ: the installed file can be compiled otherwise than a copy made at run time.)"""
    return (code.co_argcount == original.co_argcount and code.co_names == original.co_names
            and code.co_varnames == original.co_varnames)


SAMPLER_USED: list[str] = []  # filled by the switched-off sampler (it finds this list through sys.modules)


def _switched_off_sampler_method(*args: Any, **kwargs: Any) -> Any:
    """Stands in for DistributedSampler's methods during the check (as their code: it runs with torch's globals)."""
    import sys

    sys.modules["graders.ch08_ddp.shard_indices"].SAMPLER_USED.append("DistributedSampler")
    raise RuntimeError("DistributedSampler is switched off while shard_indices is graded: compute the indices")


def sampler_watched(student: RunnerStudent, cases: list[Case]) -> dict[str, Any]:
    """Call every case while DistributedSampler's __init__ and __iter__ are switched off and a profile function
    watches for copies of their code.

    The methods' code is swapped, not the class attributes, so a reference taken at import, a call from another
    thread or from a forked child all reach the switched-off code. A copy of their source, run again with exec,
    is seen by the profile function (same arguments, locals and names, whatever the function is called)."""
    functions = {name: torch.utils.data.distributed.DistributedSampler.__dict__[name] for name in ("__init__", "__iter__")}
    originals = {name: function.__code__ for name, function in functions.items()}
    used: set[str] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            for name, original in originals.items():
                if frame.f_code is not original and _same_code(frame.f_code, original):
                    used.add(f"a copy of DistributedSampler.{name} (its source run again)")

    SAMPLER_USED.clear()
    previous = sys.getprofile()
    for function in functions.values():
        function.__code__ = _switched_off_sampler_method.__code__
    sys.setprofile(profile)
    try:
        observed = call_cases(student, cases)
    finally:
        sys.setprofile(previous)
        for name, function in functions.items():
            function.__code__ = originals[name]
    if SAMPLER_USED:
        used.add("DistributedSampler itself")
    return {"observed": observed, "used": sorted(used)}


# ==================================================================================================
# In the judge
# ==================================================================================================
def _expect_cases(cases: list[Case], observed: list[dict[str, Any]]) -> None:
    """Every case returned exactly DistributedSampler's list, or the check fails on the first that did not."""
    lists = [(case, seen["values"]) for case, seen in zip(cases, observed) if seen["kind"] == "ints"]
    for case, seen in zip(cases, observed):
        if seen["kind"] == "raised":
            raise StudentCodeError(StudentError(**seen["error"])).within(case.call) from None
        expected = sampler_indices(case)
        if seen["kind"] == "other":
            fail(f"{case.call} returned {seen['what']}; expected the list {show(expected)} ({seen['hint']})")
        got = seen["values"]
        if got != expected:
            where = (f"{len(got)} indices instead of {len(expected)}" if len(got) != len(expected) else
                     f"first difference at position {next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)}")
            fail_mismatch("shard_indices returned other indices than DistributedSampler gives this rank",
                          given=case.call, expected=show(expected), got=show(got), where=where,
                          cause=_cause(lists) if len(lists) == len(cases) else None)
    if len(observed) < len(cases):  # the runner stops only at an error, which is reported above
        fail("shard_indices was not called on every case (a grader error; please report it)")


def _check_cases(student: Submission, cases: list[Case]) -> None:
    _expect_cases(cases, student.scenario(call_cases, cases))


ORDERED = [(10, 2), (10, 3), (11, 4), (7, 7), (5, 1), (13, 5), (100, 8), (1001, 7), (9, 4)]
SHUFFLED = [(10, 2), (33, 4), (64, 8), (257, 3), (1000, 6), (7, 1), (12, 5)]


@SHARD_INDICES.check(points=1)
def matches_the_sampler_in_order(student: Submission, device: Any) -> None:
    """With shuffle=False: every rank's indices, padded or with drop_last, exactly as DistributedSampler."""
    _check_cases(student, _cases(ORDERED, {"shuffle": False}, {"shuffle": False, "drop_last": True})
                 + _cases([(11, 3), (6, 4)], {"shuffle": False, "seed": 5, "epoch": 3}))


@SHARD_INDICES.check(points=2)
def matches_the_sampler_shuffled(student: Submission, device: Any) -> None:
    """With shuffle (the default): seed + epoch choose the permutation, for every rank, size, seed and epoch."""
    options = [{}, {"epoch": 1}, {"seed": 42, "epoch": 3}, {"shuffle": True, "seed": 7, "drop_last": True},
               {"seed": -7, "epoch": 2},  # DistributedSampler takes any int seed; seed + epoch may be negative
               {"seed": 2**31 - 1, "epoch": 2, "drop_last": True}, {"seed": 2**40 + 3, "epoch": 17}]
    cases = _cases(SHUFFLED, *options) + [Case(50_000, 1, 3, (("seed", 3), ("epoch", 9)))]
    _check_cases(student, cases)


@SHARD_INDICES.check(points=1)
def more_ranks_than_samples(student: Submission, device: Any) -> None:
    """More ranks than samples: the order repeats to pad every rank; drop_last leaves none; 0 samples gives []."""
    sizes = [(3, 8), (1, 4), (2, 7), (5, 12)]
    cases = _cases(sizes, {"shuffle": False}, {"seed": 5, "epoch": 2}, {"drop_last": True})
    _check_cases(student, cases + _cases([(0, 3)], {}, {"shuffle": False, "drop_last": True}))


@SHARD_INDICES.check(points=1)
def keeps_the_global_rng(student: Submission, device: Any) -> None:
    """The global torch RNG is neither used nor changed (the answer does not depend on it either)."""
    cases = _cases([(20, 3), (9, 2)], {"seed": 4, "epoch": 6}, {}, ranks="ends")
    first = student.scenario(rng_around_cases, cases, 123)
    _expect_cases(cases, first["observed"])
    if not torch.equal(first["before"], first["after"]):
        last = cases[-1]
        seeded = _global_state_after_seeding(last.option("seed") + last.option("epoch"), last.num_samples)
        cause = ("torch.manual_seed reseeds the global generator for everybody; seed a generator of your own, "
                 "torch.Generator().manual_seed(seed + epoch), and pass it to torch.randperm(..., generator=g)"
                 if torch.equal(first["after"], seeded) else
                 "a draw from the global generator (torch.randperm or torch.rand without generator=)")
        fail(f"calling shard_indices changed torch's global random state (after torch.manual_seed(123), "
             f"{cases[-1].call} and the others left the global generator in another state); it must not: the "
             f"training code's own random numbers would change\n  likely cause: {cause}")


@judge_only
def _global_state_after_seeding(seed: int, num_samples: int) -> torch.Tensor:
    saved = torch.get_rng_state()
    try:
        torch.manual_seed(seed)
        torch.randperm(num_samples)
        return torch.get_rng_state()
    finally:
        torch.set_rng_state(saved)


@SHARD_INDICES.check(points=1)
def does_not_use_the_sampler(student: Submission, device: Any) -> None:
    """The indices are computed, not taken from DistributedSampler."""
    cases = _cases([(10, 3)], {"seed": 2, "epoch": 1}, {"shuffle": False, "drop_last": True})
    watched = student.scenario(sampler_watched, cases)
    if watched["used"]:  # before the values: an answer whose sampler call was refused fails there too
        fail(f"shard_indices used torch.utils.data.DistributedSampler ({' and '.join(watched['used'])} ran); the "
             "exercise is to compute its indices yourself: the permutation, the padding or the dropped tail, and "
             "every world_size-th index from rank")
    _expect_cases(cases, watched["observed"])


@SHARD_INDICES.check(points=1)
def invalid_rank_raises_value_error(student: Submission, device: Any) -> None:
    """ValueError unless 0 <= rank < world_size (rank == world_size, a negative rank, world_size 0)."""
    _check_cases(student, [Case(6, 2, 3, (("shuffle", False),))])  # the last valid rank works
    for num_samples, rank, world_size in [(6, 3, 3), (6, -1, 3), (10, 4, 2), (4, 0, 0)]:
        expect_error(student, ValueError, "shard_indices", (num_samples, rank, world_size),
                     call=f"shard_indices({num_samples}, {rank}, {world_size})",
                     why=f"rank must satisfy 0 <= rank < world_size (rank {rank}, world_size {world_size})",
                     cause="a missing or off-by-one check of rank at the top of the function (rank == world_size "
                           "and negative ranks are invalid)")
