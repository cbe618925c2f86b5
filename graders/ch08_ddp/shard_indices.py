"""shard_indices(num_samples, rank, world_size, *, shuffle, seed, epoch, drop_last): DistributedSampler's
indices for one rank, without DistributedSampler and without touching the global RNG.

The judge asks ``torch.utils.data.DistributedSampler`` itself (the specification's definition) for every
expected list. A scenario calls the student's function on a batch of cases inside the runner and reports
each result as an observation (the list, or the type of what came back, or what was raised); the judge
compares. When a list is wrong, the judge also works out what common mistakes would have returned (the
epoch or the seed ignored, blocks instead of a stride, no padding, padding only once, drop_last ignored
or inverted, shuffle ignored) and names the one mistake that gives exactly the student's list.

Besides today's hand-written cases (graded first, their messages as they were), each check draws generated
cases from the specification's whole domain (:func:`generate_case`, :func:`generate_invalid_case`: every
relation of num_samples to world_size, every rank, every keyword given or not, seeds and epochs at the edges,
invalid ranks combined with every option), hundreds per scenario call; a failure names the smallest failing
case, shrunk further with the student's own function, and a cause only when one catalogued mistake gives the
student's list on every case.
"""

from __future__ import annotations

import dataclasses
import math
import random
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch

from graders import domain
from graders.compare import show
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import ErrorCase, Submission, expect_errors

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
# The generated domain (from the specification's sentences): every num_samples / world_size relation
# (a multiple, one more or one less, a tail, more ranks than samples, n < world_size < 2n, world_size > 2n,
# 0 samples, a few thousand), every rank (the ends most often), each keyword given or left to its default,
# in any order, with seeds and epochs at the edges (negative, 2**31 - 1, past 2**32, near 2**62; seed + epoch
# negative), and invalid ranks and world sizes combined with every option.
# ==================================================================================================
RELATIONS = ("multiple", "one_more", "one_less", "tail", "fewer", "between", "far_fewer", "zero", "large")
SMALL_RELATIONS = ("fewer", "between", "far_fewer", "zero")  # more ranks than samples


def _world_size(generator: random.Random) -> int:
    return domain.pick(generator, [domain.small_int(generator, 1, 8), generator.randint(1, 64), 1, 2])


def _samples(generator: random.Random, relation: str, world_size: int) -> int:
    k = domain.small_int(generator, 1, 12)
    if relation == "multiple":
        return world_size * k
    if relation == "one_more":
        return world_size * k + 1
    if relation == "one_less":
        return world_size * k - 1
    if relation == "tail":
        return world_size * k + generator.randint(0, world_size - 1)
    if relation == "fewer":
        return generator.randint(0, world_size - 1)
    if relation == "between":  # world_size / 2 < n < world_size
        return generator.randint(world_size // 2 + 1, world_size - 1) if world_size > 2 else 1
    if relation == "far_fewer":  # more than twice as many ranks as samples
        return generator.randint(1, (world_size - 1) // 2) if world_size > 2 else 1
    if relation == "zero":
        return 0
    return generator.randint(1000, 2000)


def _seed(generator: random.Random) -> int:
    return domain.pick(generator, [0, 1, domain.small_int(generator, 0, 100), -domain.small_int(generator, 1, 100),
                                   2**31 - 1, 2**32 + generator.randint(0, 9), 2**62 + generator.randint(0, 99),
                                   -(2**62), generator.randint(0, 2**40)])


def _epoch(generator: random.Random) -> int:
    return domain.pick(generator, [0, 1, domain.small_int(generator, 0, 20), generator.randint(0, 10**6),
                                   -generator.randint(1, 5)])


def _options(generator: random.Random, shuffle: bool | None = None) -> tuple[tuple[str, Any], ...]:
    """Each keyword given (in any order) or left to its default; ``shuffle`` forces that value."""
    values = {"shuffle": generator.random() < 0.5, "seed": _seed(generator), "epoch": _epoch(generator),
              "drop_last": generator.random() < 0.5}
    given = [name for name in values if generator.random() < 0.6]
    if shuffle is not None:
        values["shuffle"] = shuffle
        if shuffle is False and "shuffle" not in given:
            given.append("shuffle")
    generator.shuffle(given)
    return tuple((name, values[name]) for name in given)


def generate_case(generator: random.Random, *, relations: tuple[str, ...] = RELATIONS,
                  shuffle: bool | None = None) -> Case:
    """A valid call: any relation of num_samples to world_size, any rank, any options."""
    world_size = _world_size(generator)
    relation = domain.pick(generator, relations, weights=[0.5 if r == "large" else 1 for r in relations])
    if relation in ("between", "far_fewer") and world_size < 3:
        world_size = generator.randint(3, 40)
    num_samples = max(0, _samples(generator, relation, world_size))
    rank = domain.pick(generator, [0, world_size - 1, generator.randint(0, world_size - 1)])
    return Case(num_samples, rank, world_size, _options(generator, shuffle))


def generate_invalid_case(generator: random.Random) -> Case:
    """0 <= rank < world_size broken (rank == world_size, above, negative; world_size 0 or negative), with
    any num_samples (0 too) and any options (drop_last with world_size 0: a division before the check)."""
    world_size = domain.pick(generator, [0, 0, -1, -domain.small_int(generator, 1, 5),
                                         domain.small_int(generator, 1, 8)])
    if world_size > 0:
        rank = domain.pick(generator, [world_size, world_size + domain.small_int(generator, 1, 5), -1,
                                       -domain.small_int(generator, 1, 9)])
    else:
        rank = generator.randint(-3, 3)
    num_samples = domain.pick(generator, [0, domain.small_int(generator, 0, 30), generator.randint(0, 200)])
    return Case(num_samples, rank, world_size, _options(generator))


def case_size(case: Case) -> tuple[int, ...]:
    return (case.num_samples + abs(case.world_size), len(case.options), abs(case.option("seed"))
            + abs(case.option("epoch")), abs(case.rank))


def _smaller(case: Case) -> Iterable[Case]:
    """Smaller variants of a failing case, for shrinking (still valid when ``case`` is)."""
    n, rank, size, options = case.num_samples, case.rank, case.world_size, case.options
    for m in sorted({0, n // 2, n - 1, n - size, n % size if size > 0 else n} - {n}):
        if 0 <= m < n:
            yield Case(m, rank, size, options)
    if size > 1:
        for smaller in sorted({size // 2, size - 1, rank + 1}):
            if 0 < smaller < size and rank < smaller:
                yield Case(n, rank, smaller, options)
        if rank:
            yield Case(n, 0, size, options)
            yield Case(n, rank - 1, size, options)
    for index, (name, value) in enumerate(options):
        rest = options[:index] + options[index + 1:]
        yield Case(n, rank, size, rest)  # the keyword left to its default
        if name in ("seed", "epoch") and value not in (0, 1):
            yield Case(n, rank, size, options[:index] + ((name, 0 if abs(value) > 1 else 1),) + options[index + 1:])


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
    given = case.kwargs
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
        ("drop_last works the wrong way round: drop_last=True drops the tail, False (the default) pads",
         sampler_indices(case, drop_last=not drop_last)),
        ("drop_last defaults to True: without drop_last= the sampler pads (drop_last=False is the default)",
         None if "drop_last" in given else sampler_indices(case, drop_last=True)),
        ("with drop_last a whole round is dropped when world_size divides num_samples: only the tail that does "
         "not fill a round is dropped (num_samples // world_size each)",
         order[:total - size][rank::size] if drop_last and n % size == 0 and n else None),
        ("shuffle is ignored: shuffle=True permutes with torch.randperm and a generator seeded with seed + epoch; "
         "only shuffle=False keeps the order 0, 1, 2, …", sampler_indices(case, shuffle=False)),
        ("shuffle works the wrong way round: shuffle=True (the default) permutes with torch.randperm and a "
         "generator seeded with seed + epoch; shuffle=False keeps the order 0, 1, 2, …",
         sampler_indices(case, shuffle=not shuffle)),
        ("shuffle defaults to False: without shuffle= the sampler permutes (shuffle=True is the default)",
         None if "shuffle" in given else sampler_indices(case, shuffle=False)),
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


def _observe_one(student: RunnerStudent, function: Any, case: Case) -> dict[str, Any]:
    try:
        value = student.run(function, case.num_samples, case.rank, case.world_size, **case.kwargs)
    except StudentRaised as exc:
        return {"kind": "raised", "error": dataclasses.asdict(exc.error)}
    return describe_result(value)


INT64 = (-(2**63), 2**63 - 1)


def packed(observed: list[dict[str, Any]]) -> dict[str, Any]:
    """The lists of ints concatenated into one int64 tensor (thousands of small lists decode slowly in the judge);
    a list with an int outside int64 stays a list."""
    flat: list[int] = []
    cases = []
    for seen in observed:
        values = seen.get("values")
        if seen["kind"] == "ints" and all(INT64[0] <= v <= INT64[1] for v in values):
            cases.append({"kind": "ints", "length": len(values)})
            flat.extend(values)
        else:
            cases.append(seen)
    return {"cases": cases, "values": torch.tensor(flat, dtype=torch.int64)}


def unpacked(packed_observations: dict[str, Any]) -> list[dict[str, Any]]:
    flat, start, observed = packed_observations["values"].tolist(), 0, []
    for seen in packed_observations["cases"]:
        if seen["kind"] == "ints" and "length" in seen:
            observed.append({"kind": "ints", "values": flat[start:start + seen["length"]]})
            start += seen["length"]
        else:
            observed.append(seen)
    return observed


def observe_cases(student: RunnerStudent, cases: list[Case], max_raised: int = 50) -> dict[str, Any]:
    """The student's ``shard_indices`` on each case, every case observed (a raise is recorded and the next case
    called; after ``max_raised`` raises the rest are left out)."""
    function = student.get("shard_indices")
    observed: list[dict[str, Any]] = []
    for case in cases:
        raised = sum(seen["kind"] == "raised" for seen in observed)
        observed.append({"kind": "skipped"} if raised >= max_raised else _observe_one(student, function, case))
    return packed(observed)


def changed_between_calls(student: RunnerStudent, case: Case) -> dict[str, Any]:
    """Call, change the returned list as a caller may (a shuffle of its own, an extra index), call again."""
    function = student.get("shard_indices")
    first = _observe_one(student, function, case)
    if first["kind"] != "ints":
        return {"first": first}
    value = student.run(function, case.num_samples, case.rank, case.world_size, **case.kwargs)
    if isinstance(value, list):
        value.reverse()
        value.append(-1)
    changed = describe_result(value)
    return {"first": first, "changed": changed, "second": _observe_one(student, function, case)}


def rng_per_case(student: RunnerStudent, cases: list[Case], seed: int) -> dict[str, Any]:
    """Before each case, seed torch's global generator and draw from it (so that reseeding cannot put it back by
    chance); report each result and the global state after the first (up to 5) cases that changed it."""
    function = student.get("shard_indices")
    observed, changed = [], []
    for index, case in enumerate(cases):
        torch.manual_seed(seed)
        torch.rand(7)
        before = torch.get_rng_state()
        observed.append(_observe_one(student, function, case))
        after = torch.get_rng_state()
        if len(changed) < 5 and not torch.equal(before, after):
            changed.append((index, after))
    return {"observed": packed(observed), "changed": changed}


def rng_around_cases(student: RunnerStudent, cases: list[Case], seed: int) -> dict[str, Any]:
    """Seed torch's global generator and draw from it (so that reseeding cannot put it back by chance), call
    every case, and report the results and the generator's state before and after."""
    torch.manual_seed(seed)
    torch.rand(7)
    before = torch.get_rng_state()
    observed = observe_cases(student, cases)
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
        observed = observe_cases(student, cases)
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
@judge_only
def _verdicts(cases: list[Case], observed: list[dict[str, Any]]) -> list[bool]:
    """Per case: did it fail (raised, returned something else than a list of ints, or other indices)?"""
    return [seen["kind"] != "ints" or seen["values"] != sampler_indices(case) for case, seen in zip(cases, observed)]


@judge_only
def _expect_cases(cases: list[Case], observed: list[dict[str, Any]], student: Submission | None = None) -> None:
    """Every case returned exactly DistributedSampler's list, or the check fails on the smallest case that did not
    (shrunk further with the student's own function when ``student`` is given); a likely cause is named only when
    one catalogued mistake gives the student's list on every case that came back as a list."""
    if len(observed) != len(cases):
        fail("shard_indices was not called on every case (a grader error; please report it)")
    failing = _verdicts(cases, observed)
    if not any(failing):
        return
    seen_of = dict(zip(cases, observed))
    case = domain.smallest(cases, failing, size=case_size)
    if student is not None:
        def fails(candidates: list[Case]) -> list[bool]:
            seen = unpacked(student.scenario(observe_cases, candidates))
            seen_of.update(zip(candidates, seen))
            return _verdicts(candidates, seen)

        case = domain.shrink(case, _smaller, fails)
    seen = seen_of[case]
    if seen["kind"] == "skipped":  # the smallest failing ones raised; this one was not called
        case = next(c for c, s in seen_of.items() if s["kind"] == "raised")
        seen = seen_of[case]
    if seen["kind"] == "raised":
        raise StudentCodeError(StudentError(**seen["error"])).within(case.call) from None
    expected = sampler_indices(case)
    if seen["kind"] == "other":
        fail(f"{case.call} returned {seen['what']}; expected the list {show(expected)} ({seen['hint']})")
    got = seen["values"]
    where = (f"{len(got)} indices instead of {len(expected)}" if len(got) != len(expected) else
             f"first difference at position {next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)}")
    wrong = sum(failing)
    total = f"; {wrong} of the {len(cases)} cases tried failed" if wrong > 1 else ""
    fail_mismatch(f"shard_indices returned other indices than DistributedSampler gives this rank{total}",
                  given=case.call, expected=show(expected), got=show(got), where=where, cause=_evidence(seen_of))


@judge_only
def _evidence(seen_of: dict[Case, dict[str, Any]]) -> str | None:
    """The cause that fits every case (when every case came back as a list): the failing ones (the 150
    smallest) and 100 of the passing ones, smallest first."""
    if any(seen["kind"] != "ints" for seen in seen_of.values()):
        return None
    results = sorted(((case, seen["values"]) for case, seen in seen_of.items()), key=lambda r: case_size(r[0]))
    bad = [r for r in results if r[1] != sampler_indices(r[0])]
    good = [r for r in results if r[1] == sampler_indices(r[0])]
    return _cause(bad[:150] + good[:100])


BATCH = 150  # cases per scenario call at most: each call has the per-request time limit, and a slow correct
BATCH_SAMPLES = 20_000  # answer (a loop per rank, an int() per index) on a busy machine must stay well inside it


def batches(cases: list[Case]) -> list[list[Case]]:
    """Consecutive runs of at most BATCH cases and about BATCH_SAMPLES samples (a case alone may be larger)."""
    runs: list[list[Case]] = [[]]
    for case in cases:
        if runs[-1] and (len(runs[-1]) >= BATCH
                         or sum(c.num_samples for c in runs[-1]) + case.num_samples > BATCH_SAMPLES):
            runs.append([])
        runs[-1].append(case)
    return [run for run in runs if run]


def observed_in_batches(student: Submission, cases: list[Case], max_raised: int = 50) -> list[dict[str, Any]]:
    """``observe_cases`` on every case, one scenario call per batch."""
    observed: list[dict[str, Any]] = []
    for run in batches(cases):
        raised = sum(seen["kind"] == "raised" for seen in observed)
        if raised >= max_raised:
            observed += [{"kind": "skipped"}] * len(run)
            continue
        observed += unpacked(student.scenario(observe_cases, run, max_raised - raised))
    return observed


def _check_cases(student: Submission, fixed: list[Case], generated: list[Case] = ()) -> None:
    """Today's hand-written cases first (their messages as they were), then the generated ones."""
    for cases in (fixed, generated):
        if cases:
            _expect_cases(cases, observed_in_batches(student, cases), student)


ORDERED = [(10, 2), (10, 3), (11, 4), (7, 7), (5, 1), (13, 5), (100, 8), (1001, 7), (9, 4)]
SHUFFLED = [(10, 2), (33, 4), (64, 8), (257, 3), (1000, 6), (7, 1), (12, 5)]


@SHARD_INDICES.check(points=1)
def matches_the_sampler_in_order(student: Submission, device: Any) -> None:
    """With shuffle=False: every rank's indices, padded or with drop_last, exactly as DistributedSampler (a new
    list on every call: changing one the caller got changes no later call's)."""
    fixed = (_cases(ORDERED, {"shuffle": False}, {"shuffle": False, "drop_last": True})
             + _cases([(11, 3), (6, 4)], {"shuffle": False, "seed": 5, "epoch": 3}))
    _check_cases(student, fixed, domain.draw(lambda g: generate_case(g, shuffle=False), 300, size=case_size))
    _expect_a_new_list_each_call(student, Case(10, 1, 3, (("shuffle", False),)))


@judge_only
def _expect_a_new_list_each_call(student: Submission, case: Case) -> None:
    seen = student.scenario(changed_between_calls, case)
    if "second" not in seen:
        return  # the first call's verdict came from the cases above
    second, expected = seen["second"], sampler_indices(case)
    if second["kind"] == "raised":
        raise StudentCodeError(StudentError(**second["error"])).within(f"{case.call}, called again") from None
    if second["kind"] == "ints" and second["values"] == expected:
        return
    got = second.get("values", second.get("what"))
    mutated = seen["changed"].get("values")
    cause = ("it is the list an earlier call returned, as the caller changed it: shard_indices keeps one list and "
             "returns it again (a cache such as functools.lru_cache or a dict); return a new list on every call, "
             "e.g. list(cached)") if got == mutated else None
    fail_mismatch("called a second time, shard_indices returned other indices", given=(
        f"{case.call}, whose list the caller then reversed and appended -1 to, then {case.call} again"),
        expected=show(expected), got=show(got), cause=cause)


@SHARD_INDICES.check(points=2)
def matches_the_sampler_shuffled(student: Submission, device: Any) -> None:
    """With shuffle (the default): seed + epoch choose the permutation, for every rank, size, seed and epoch."""
    options = [{}, {"epoch": 1}, {"seed": 42, "epoch": 3}, {"shuffle": True, "seed": 7, "drop_last": True},
               {"seed": -7, "epoch": 2},  # DistributedSampler takes any int seed; seed + epoch may be negative
               {"seed": 2**31 - 1, "epoch": 2, "drop_last": True}, {"seed": 2**40 + 3, "epoch": 17}]
    fixed = _cases(SHUFFLED, *options) + [Case(50_000, 1, 3, (("seed", 3), ("epoch", 9)))]
    shuffled = [True, None]  # given, or the default
    _check_cases(student, fixed, domain.draw(lambda g: generate_case(g, shuffle=domain.pick(g, shuffled)), 500,
                                             size=case_size))


@SHARD_INDICES.check(points=1)
def more_ranks_than_samples(student: Submission, device: Any) -> None:
    """More ranks than samples: the order repeats to pad every rank; drop_last leaves none; 0 samples gives []."""
    sizes = [(3, 8), (1, 4), (2, 7), (5, 12)]
    cases = _cases(sizes, {"shuffle": False}, {"seed": 5, "epoch": 2}, {"drop_last": True})
    fixed = cases + _cases([(0, 3)], {}, {"shuffle": False, "drop_last": True})
    _check_cases(student, fixed, domain.draw(lambda g: generate_case(g, relations=SMALL_RELATIONS), 300,
                                             size=case_size))


@SHARD_INDICES.check(points=1)
def keeps_the_global_rng(student: Submission, device: Any) -> None:
    """The global torch RNG is neither used nor changed (the answer does not depend on it either)."""
    # The last case shuffles with the default seed (the cause below is worked out from it).
    fixed = _cases([(20, 3), (9, 2)], {"seed": 4, "epoch": 6}, {"shuffle": True, "drop_last": True, "seed": 1}, {},
                   ranks="ends")
    first = student.scenario(rng_around_cases, fixed, 123)
    _expect_cases(fixed, unpacked(first["observed"]), student)
    if not torch.equal(first["before"], first["after"]):
        _rng_changed(fixed[-1], first["after"], f"{fixed[-1].call} and the others")
    # Generated cases, the global state checked around each one.
    cases = domain.draw(generate_case, 200, size=case_size)
    observed, changed = [], []
    for run in batches(cases):
        watched = student.scenario(rng_per_case, run, 321)
        changed += [(len(observed) + index, after) for index, after in watched["changed"]]
        observed += unpacked(watched["observed"])
    _expect_cases(cases, observed, student)
    if changed:
        index, after = min(changed, key=lambda c: case_size(cases[c[0]]))
        _rng_changed(cases[index], after, cases[index].call)


@judge_only
def _rng_changed(case: Case, after: torch.Tensor, calls: str) -> None:
    """Fail: ``case`` changed the global generator; the cause is named only when the state after it is that of
    torch.manual_seed(seed + epoch) (followed by the global torch.randperm or not)."""
    seed = case.option("seed") + case.option("epoch")
    seeded = any(torch.equal(after, _global_state_after_seeding(seed, case.num_samples, draw))
                 for draw in (True, False))
    cause = ("\n  likely cause: torch.manual_seed reseeds the global generator for everybody; seed a generator of "
             "your own, torch.Generator().manual_seed(seed + epoch), and pass it to torch.randperm(..., generator=g)"
             if seeded else "\n  (the state is not the one torch.manual_seed(seed + epoch) leaves: a draw from the "
             "global generator, such as torch.randperm or torch.rand without generator=, or another reseeding)")
    fail(f"calling shard_indices changed torch's global random state (after torch.manual_seed(123), "
         f"{calls} left the global generator in another state); it must not: the training code's own random "
         f"numbers would change{cause}")


@judge_only
def _global_state_after_seeding(seed: int, num_samples: int, draw: bool = True) -> torch.Tensor:
    saved = torch.get_rng_state()
    try:
        torch.manual_seed(seed)
        if draw:
            torch.randperm(num_samples)
        return torch.get_rng_state()
    finally:
        torch.set_rng_state(saved)


@SHARD_INDICES.check(points=1)
def does_not_use_the_sampler(student: Submission, device: Any) -> None:
    """The indices are computed, not taken from DistributedSampler."""
    fixed = _cases([(10, 3)], {"seed": 2, "epoch": 1}, {"shuffle": False, "drop_last": True})
    for cases in (fixed, domain.draw(generate_case, 60, size=case_size)):
        watched = student.scenario(sampler_watched, cases)
        if watched["used"]:  # before the values: an answer whose sampler call was refused fails there too
            fail(f"shard_indices used torch.utils.data.DistributedSampler ({' and '.join(watched['used'])} ran); "
                 "the exercise is to compute its indices yourself: the permutation, the padding or the dropped tail, "
                 "and every world_size-th index from rank")
        _expect_cases(cases, unpacked(watched["observed"]), student)


@SHARD_INDICES.check(points=1)
def invalid_rank_raises_value_error(student: Submission, device: Any) -> None:
    """ValueError unless 0 <= rank < world_size (rank == world_size, a negative rank, world_size 0)."""
    _check_cases(student, [Case(6, 2, 3, (("shuffle", False),))])  # the last valid rank works
    hints = {(6, 3, 3): "an off-by-one test: rank == world_size is invalid too (rank >= world_size, not rank > "
                        "world_size)",
             (6, -1, 3): "negative ranks are let through (a negative index counts from the end): test rank < 0 too",
             (4, 0, 0): "world_size 0 is let through: no rank satisfies 0 <= rank < 0"}
    expect_errors(student, ValueError, "shard_indices",
                  [ErrorCase((n, rank, size), f"shard_indices({n}, {rank}, {size})",
                             f"rank must satisfy 0 <= rank < world_size (rank {rank}, world_size {size})",
                             hint=hints.get((n, rank, size)))
                   for n, rank, size in [(6, 3, 3), (6, -1, 3), (10, 4, 2), (4, 0, 0)]],
                  missing_check="no check of rank at the top of the function: none of these invalid ranks raised")
    # Generated: every way of breaking 0 <= rank < world_size, combined with every option and num_samples.
    cases = domain.draw(generate_invalid_case, 200, size=case_size)
    observed = observed_in_batches(student, cases, len(cases))
    failing = [not (seen["kind"] == "raised" and StudentError(**seen["error"]).is_instance(ValueError))
               for seen in observed]
    case = domain.smallest(cases, failing, size=case_size)
    if case is None:
        return
    seen = observed[cases.index(case)]
    why = f"rank must satisfy 0 <= rank < world_size (rank {case.rank}, world_size {case.world_size})"
    if seen["kind"] == "raised":
        error = StudentError(**seen["error"])
        if error.kind != "raised":
            raise StudentCodeError(error).within(case.call) from None
        cause = ("\n  likely cause: assert raises AssertionError; raise ValueError(...) instead"
                 if error.exception_type == "AssertionError" else "")
        fail(f"{case.call} must raise ValueError because {why}, but it {error.describe()}{cause}")
    returned = f"the list {show(seen['values'])}" if seen["kind"] == "ints" else seen.get("what", "nothing")
    fail(f"{case.call} returned {returned}; it must raise ValueError because {why}")
