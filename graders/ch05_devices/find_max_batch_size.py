"""find_max_batch_size(try_batch, *, start=1, limit=4096): the largest batch size that fits, found by doubling
then bisection, without keeping an out-of-memory error alive.

The student's function runs in the runner against a grader-made ``try_batch`` (:class:`FakeTrainer`): it
records every size it is given and raises ``torch.OutOfMemoryError`` above a threshold, from a frame that
holds a tensor standing for the activations of the failed step. Whether that tensor is still alive tells
whether the student's code kept the exception (or its traceback) after leaving the ``except`` block; it is
looked at when ``try_batch`` is called again, when ``torch.cuda.empty_cache`` is called (patched in the
runner, with ``torch.cuda.is_available`` patched to say yes or no), and when the function returns. The judge
computes the sizes the specification's search probes with its own simulation and compares.
"""

from __future__ import annotations

import dataclasses
import json
import random
import weakref
from typing import Any, NamedTuple

import torch

from graders import domain
from graders.isolation import RunnerStudent, StudentRaised, describe_exception
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, fail
from graders.registry import exercise, judge_only
from graders.student import Submission

FIND_MAX_BATCH_SIZE = exercise("find_max_batch_size", chapter="05_devices", names=["find_max_batch_size"])

ACTIVATION_ELEMENTS = 1 << 18  # 1 MiB of float32 per failed step: big enough to matter, small enough to be quick
LARGEST = 2**62  # sizes stay int64 (the runner reports the calls as an int64 tensor)
MAX_CALLS = 10_000  # far past any search of the grid (the largest bound is 41 calls): an endless search stops here


EVENT_CODES = {"call": 0, "oom": 1, "empty_cache": 2}
# What try_batch returns when the size fits (the spec says nothing of it: a step may return its loss, or nothing).
RETURNS = {"none": None, "loss": 0.6931, "zero": 0, "false": False, "true": True, "text": "ok"}


class EndlessSearch(BaseException):
    """Raised by try_batch past MAX_CALLS; a BaseException, so that `except Exception` cannot swallow it."""


# ==================================================================================================
# Inside the runner
# ==================================================================================================
class FakeTrainer:
    """try_batch(b): fits when ``b <= threshold``; otherwise raises torch.OutOfMemoryError from a frame that
    holds a tensor. ``other`` = (size, kind) raises another exception at that size instead."""

    def __init__(self, threshold: int, other: tuple[int, str] | None = None, returns: str = "none") -> None:
        self.threshold = threshold
        self.other = other
        self.returns = RETURNS[returns]
        self.calls: list[Any] = []
        self.activations: list[weakref.ref] = []
        self.alive_at_call: list[int] = []  # sizes at whose call an earlier failure's tensor was still alive
        self.raised: BaseException | None = None
        self.events: list[tuple[str, Any]] = []  # ("call", size), ("oom", size), ("empty_cache", alive_count)

    def alive(self) -> int:
        return sum(ref() is not None for ref in self.activations)

    def __call__(self, b: Any) -> None:
        if len(self.calls) >= MAX_CALLS:
            raise EndlessSearch(f"try_batch was called {MAX_CALLS} times, far more than any search needs (last "
                                f"sizes: {self.calls[-3:]})")
        if self.alive():
            self.alive_at_call.append(b)
        self.calls.append(b)
        self.events.append(("call", b))
        if self.other is not None and b == self.other[0]:
            self.raised = _other_error(self.other[1], b)
            raise self.raised
        if b > self.threshold:
            activations = torch.empty(ACTIVATION_ELEMENTS)  # what the failed forward pass had made
            self.activations.append(weakref.ref(activations))
            self.events.append(("oom", b))
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {4 * b} MiB (batch size {b})")
        return self.returns


def _other_error(kind: str, b: int) -> BaseException:
    if kind == "runtime":
        return RuntimeError(f"CUDA error: an illegal memory access was encountered (batch size {b})")
    if kind == "value":
        return ValueError(f"batch size {b} is not a multiple of the number of devices")
    if kind == "memory":
        return MemoryError(f"host memory exhausted while collating batch size {b}")
    if kind == "oom_text":  # says "out of memory", but is not torch.OutOfMemoryError: not the signal to shrink
        return RuntimeError(f"CUDA error: out of memory (a cuBLAS handle could not be created at batch size {b})")
    return KeyError(f"missing column for batch size {b}")


class _CudaPatch:
    """torch.cuda.is_available / empty_cache replaced (in torch and in the student's own namespace)."""

    def __init__(self, student: RunnerStudent, available: bool, trainer: FakeTrainer) -> None:
        self.student, self.available, self.trainer = student, available, trainer
        self.saved: list[tuple[Any, str, Any]] = []

    def is_available(self) -> bool:
        return self.available

    def empty_cache(self) -> None:
        self.trainer.events.append(("empty_cache", self.trainer.alive()))

    def __enter__(self) -> "_CudaPatch":
        originals = {torch.cuda.is_available: self.is_available, torch.cuda.empty_cache: self.empty_cache}
        targets = [(torch.cuda, "is_available"), (torch.cuda, "empty_cache"), (torch.cuda.memory, "empty_cache")]
        targets += [(self.student.namespace, name) for name, value in list(self.student.namespace.items())
                    if _hashable(value) and value in originals]
        for owner, name in targets:
            current = owner[name] if isinstance(owner, dict) else getattr(owner, name)
            if not _hashable(current) or current not in originals:
                continue
            self.saved.append((owner, name, current))
            replacement = originals[current]
            if isinstance(owner, dict):
                owner[name] = replacement
            else:
                setattr(owner, name, replacement)
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in reversed(self.saved):
            if isinstance(owner, dict):
                owner[name] = value
            else:
                setattr(owner, name, value)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _catching(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """Call the student's function; return ("returned", value) or ("raised", the exception object itself)."""
    try:
        return "returned", function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception is what the check looks at
        return "raised", exc


def _value_facts(value: Any) -> dict[str, Any]:
    return {"type": type(value).__name__, "int": int(value) if isinstance(value, int) and not isinstance(value, bool)
            else None, "text": repr(value)[:80] if isinstance(value, (int, float, str, type(None))) else None}


def search_scenario(student: RunnerStudent, runs: list[tuple[int, dict[str, Any], Any, bool]]) -> list[dict[str, Any]]:
    """For each (threshold, kwargs, other, cuda_available): run the search; what came out, and what happened."""
    function = student.get("find_max_batch_size")
    seen = []
    for threshold, kwargs, other, available, *returns in runs:
        trainer = FakeTrainer(threshold, other, *returns)
        with _CudaPatch(student, available, trainer):
            try:
                outcome, value = student.run(_catching, function, trainer, **kwargs)
            except StudentRaised as exc:  # BaseException (SystemExit, KeyboardInterrupt): the student's error
                seen.append({"error": dataclasses.asdict(exc.error)})
                return seen
        # Tensors, not lists: a linear search makes 10**5 calls, which as list items would swamp the reply.
        ints = all(type(c) is int for c in trainer.calls)
        record: dict[str, Any] = {
            "calls": torch.tensor(trainer.calls, dtype=torch.int64) if ints else [repr(c) for c in trainer.calls[:1000]],
            "events": torch.tensor([(EVENT_CODES[kind], x if type(x) is int else -1) for kind, x in trainer.events],
                                   dtype=torch.int64).reshape(-1, 2),
            "alive_at_call": [repr(b) for b in trainer.alive_at_call[:5]]}
        if outcome == "returned":
            record["returned"] = _value_facts(value)
        else:
            error = describe_exception(value, student.files, student.label)
            record["raised"] = dataclasses.asdict(error)
            record["same_object"] = value is trainer.raised
            record["context"] = type(value.__context__).__name__ if value.__context__ is not None else None
            record["cause"] = type(value.__cause__).__name__ if value.__cause__ is not None else None
            del value
        record["alive_after"] = trainer.alive()
        seen.append(record)
    return seen


def search_scenario_text(student: RunnerStudent, runs: list[tuple]) -> str:
    """:func:`search_scenario` for many runs, its records as one JSON text (a few hundred records of small lists
    decode far faster as one string than as tensors and dicts)."""
    records = search_scenario(student, runs)
    for record in records:
        for key in ("calls", "events"):
            if isinstance(record.get(key), torch.Tensor):
                record[key] = record[key].tolist()
    return json.dumps(records)


# ==================================================================================================
# In the judge
# ==================================================================================================
class Run(NamedTuple):
    threshold: int
    start: int | None = None  # None: left out (the default, 1)
    limit: int | None = None  # None: left out (the default, 4096)
    other: tuple[int, str] | None = None
    cuda: bool = False
    returns: str = "none"  # what try_batch returns when the size fits (RETURNS)

    @property
    def kwargs(self) -> dict[str, int]:
        given = {"start": self.start, "limit": self.limit}
        return {k: v for k, v in given.items() if v is not None}

    @property
    def bounds(self) -> tuple[int, int]:
        return (1 if self.start is None else self.start), (4096 if self.limit is None else self.limit)

    def text(self) -> str:
        args = ", ".join(["try_batch"] + [f"{k}={v}" for k, v in self.kwargs.items()])
        fits = f"every size up to {self.threshold} fits, larger ones raise torch.OutOfMemoryError"
        if self.other is not None:
            fits += f"; size {self.other[0]} raises {type(_other_error(self.other[1], 0)).__name__} instead"
        if self.cuda:
            fits += "; torch.cuda.is_available() is True"
        if self.returns != "none":
            fits += f"; try_batch returns {RETURNS[self.returns]!r} when the size fits"
        return f"find_max_batch_size({args}) where {fits}"


@judge_only
def probes(start: int, limit: int, threshold: int, middle=lambda lo, hi: (lo + hi) // 2) -> tuple[list[int], int | None]:
    """The sizes the specification's search tries, in order, and its answer (None: even start does not fit).
    ``middle`` picks the bisection's next size (another one gives a known wrong search, to name a cause)."""
    tried, lo, size = [], None, start
    while True:
        tried.append(size)
        if size > threshold:
            hi = size
            break
        lo = size
        if size == limit:
            return tried, limit
        size = min(2 * size, limit)
    if lo is None:
        return tried, None
    while hi - lo > 1:
        mid = middle(lo, hi)
        tried.append(mid)
        if mid <= threshold:
            lo = mid
        else:
            hi = mid
    return tried, lo


def call_bound(start: int, limit: int) -> int:
    """ceil(log2(limit / start)) + ceil(log2(limit - start + 1)) + 1, exactly (in integers: a float quotient
    rounds limit / start to 1.0 for sizes near 2**62)."""
    doublings = next(k for k in range(130) if start << k >= limit)  # the least k with start * 2**k >= limit
    return doublings + (limit - start).bit_length() + 1  # ceil(log2(n)) = (n - 1).bit_length() for an int n >= 1


def _search(student: Submission, runs: list[Run]) -> list[dict[str, Any]]:
    # One request per search, so that the time limit applies to each search (an answer that calls
    # gc.collect() after every out-of-memory error is slower, not wrong).
    return _search_batched(student, runs, chunk=1)


def _answer(record: dict[str, Any], run: Run) -> int:
    """What the search returned, as an int; a raised exception or another type fails the check."""
    if "raised" in record:
        error = StudentError(**record["raised"])
        if error.is_instance(torch.OutOfMemoryError):
            fail(f"{run.text()}\n  the torch.OutOfMemoryError from try_batch escaped; catch it (except "
                 "torch.OutOfMemoryError:) and treat that size as too large")
        raise StudentCodeError(error, run.text())
    got = record["returned"]
    if got["int"] is None:
        fail(f"{run.text()} returned {got['text'] or 'a ' + got['type']}, a {got['type']}; it must return an int")
    return got["int"]


def _require_search(record: dict[str, Any], run: Run, judged: str) -> None:
    """A check that judges *how* the search went first makes sure it found the right size, from its own calls."""
    got, right = _answer(record, run), min(run.threshold, run.bounds[1])
    if got != right:
        fail(f"{run.text()}\n  returned {got}, expected {right}: {judged} can only be judged once the search finds "
             "the right size")
    _require_evidence(record, run, got)


def _require_evidence(record: dict[str, Any], run: Run, got: int) -> None:
    """The answer must be what the search established: got was tried and fit, got + 1 was tried and did not."""
    unproven = [size for size in ([got] if got == run.bounds[1] else [got, got + 1]) if size not in record["calls"]]
    if unproven:
        fail(f"{run.text()}\n  returned {got}, but try_batch was never called with {unproven[0]} (sizes tried: "
             f"{_short(record['calls'])}); the answer must come from the sizes the search tried")


def _grid() -> list[Run]:
    runs = [Run(1000), Run(4096), Run(5000), Run(1), Run(4095), Run(7, start=3, limit=100), Run(5, start=5, limit=5),
            Run(1, start=1, limit=1), Run(999, start=7, limit=1000), Run(36, start=2, limit=37),
            Run(100, start=16, limit=300), Run(123457, start=1, limit=2**20), Run(2**20, start=1, limit=2**20),
            Run(6, start=6, limit=7), Run(12, start=3, limit=12), Run(11, start=3, limit=12), Run(50, limit=64)]
    rng = random.Random(5)
    for _ in range(12):
        start = rng.randint(1, 40)
        limit = start + rng.randint(0, 3000)
        runs.append(Run(rng.randint(start, limit + 5), start=start, limit=limit))
    return runs


# ==================================================================================================
# The generated domain (from the specification's sentences): start left out (1) or given (1, small, powers of
# two, past 2**31, near 2**62: a float midpoint loses them); limit left out (4096) or in any relation to start
# (equal, start·2**k exactly with k up to 61, one above or below it, a few above, far above); the memory threshold
# at every place the search can meet (start itself, each doubled size and its neighbours, limit and limit - 1, above
# limit, anywhere between; below start for the RuntimeError); CUDA available or not; try_batch returning None,
# a loss, 0, False, True or a string when a size fits; another exception raised at any size the search tries;
# invalid bounds (start < 1, limit < start, both) with any threshold.
# ==================================================================================================
def _gen_start(generator: random.Random) -> int | None:
    return domain.pick(generator, [None, 1, domain.small_int(generator, 1, 9), generator.randint(1, 200),
                                   2 ** generator.randint(0, 20), generator.randint(2**31 - 5, 2**33),
                                   2 ** generator.randint(40, 61) + generator.randint(0, 3)], [2, 2, 3, 3, 2, 1, 1])


def _gen_limit(generator: random.Random, start: int) -> int | None:
    # k past 30 too, and past 48, where math.log2((start * 2**k - 1) / start) rounds up to k itself (a count of
    # doublings computed with it probes a size above limit there)
    k = domain.pick(generator, [domain.small_int(generator, 1, 14), generator.randint(30, 61),
                                generator.randint(49, 58)], [5, 1, 1])
    relation = domain.pick(generator, ["equal", "power", "power_plus", "power_minus", "near", "random", "far",
                                       "default"], [2, 3, 2, 2, 2, 3, 1, 1])
    if relation == "default" and start <= 4096:
        return None
    return min(LARGEST - 1, {"equal": start, "power": start * 2**k, "power_plus": start * 2**k + 1,
            "power_minus": max(start, start * 2**k - 1), "near": start + domain.small_int(generator, 1, 5),
            "random": start + generator.randint(0, 5000),
            "far": min(LARGEST - 1, start * generator.randint(2**20, 2**40)),
            "default": start + generator.randint(0, 100)}[relation])


def _gen_threshold(generator: random.Random, start: int, limit: int, below_start: bool = False) -> int:
    if below_start:
        return domain.pick(generator, [start - 1, 0, generator.randint(0, start - 1)])
    doubled = [start * 2**j for j in range(0, 64) if start * 2**j <= limit]
    near = domain.pick(generator, doubled) + domain.pick(generator, [-1, 0, 1])
    options = [start, near, limit, limit - 1, limit + generator.randint(1, 10**6), generator.randint(start, limit),
               start + 1, LARGEST - 1]
    return min(LARGEST - 1, max(start, domain.pick(generator, options, [1, 4, 2, 2, 1, 4, 1, 1])))


def generate_run(generator: random.Random, *, cuda: bool | None = None, below_start: bool = False) -> Run:
    """A valid call (threshold >= start unless ``below_start``)."""
    start = _gen_start(generator)
    first = 1 if start is None else start
    if below_start and first == 1:
        start = first = generator.randint(2, 5000)
    limit = _gen_limit(generator, first)
    last = 4096 if limit is None else limit
    threshold = _gen_threshold(generator, first, last, below_start)
    returns = domain.pick(generator, list(RETURNS), [5, 2, 1, 1, 1, 1])
    return Run(threshold, start, limit, None, generator.random() < 0.4 if cuda is None else cuda, returns)


def generate_other_run(generator: random.Random) -> Run:
    """A valid call where another exception comes from a size the spec's search tries (the first, the last,
    any between), when that size fits or not."""
    run = generate_run(generator)
    tried, _ = probes(*run.bounds, run.threshold)
    index = domain.pick(generator, [0, len(tried) - 1, generator.randint(0, len(tried) - 1)])
    kind = domain.pick(generator, ["runtime", "value", "memory", "oom_text", "key"])
    return run._replace(other=(tried[index], kind))


def generate_invalid_run(generator: random.Random) -> Run:
    """start < 1, limit < start, or both, with any threshold (also one at which every size fits)."""
    kind = domain.pick(generator, ["start", "limit", "both"])
    if kind == "limit":
        start = domain.pick(generator, [2, domain.small_int(generator, 2, 9), generator.randint(2, 10**6), 2**40])
        limit = domain.pick(generator, [start - 1, 1, 0, -1, generator.randint(-10, start - 1)])
    else:
        start = domain.pick(generator, [0, -1, -domain.small_int(generator, 1, 9), -2**40])
        limit = (domain.pick(generator, [None, start + generator.randint(1, 100), 1, 4096]) if kind == "start"
                 else start - domain.small_int(generator, 1, 5))
    threshold = domain.pick(generator, [0, 10**6, generator.randint(0, 5000)])
    return Run(threshold, start, limit, None, generator.random() < 0.3)


def run_size(run: Run) -> tuple[int, ...]:
    start, limit = run.bounds
    return (abs(limit).bit_length() + abs(start).bit_length(), abs(limit - start), min(abs(run.threshold), 2 * abs(limit)),
            run.other is not None, run.cuda, run.returns != "none", run.start is not None, run.limit is not None)


def _smaller_runs(run: Run) -> list[Run]:
    """Smaller variants of a failing run, for shrinking (the check keeps those still in its class)."""
    start, limit = run.bounds
    out = [run._replace(returns="none"), run._replace(cuda=False)]
    for new_start in sorted({1, start // 2, start - 1} - {start}):
        if new_start >= 1 or start < 1:
            out.append(run._replace(start=new_start, threshold=max(0, run.threshold - (start - new_start))))
    for new_limit in sorted({limit // 2, limit - 1, start, start + (limit - start) // 2} - {limit}):
        out.append(run._replace(limit=new_limit, threshold=min(run.threshold, new_limit + 1)))
    for new_threshold in sorted({start, run.threshold // 2, run.threshold - 1, limit} - {run.threshold}):
        if new_threshold >= 0:
            out.append(run._replace(threshold=new_threshold))
    if run.other is not None:
        tried, _ = probes(*run.bounds, run.threshold) if start >= 1 and limit >= start else ([], None)
        out += [run._replace(other=(size, run.other[1])) for size in tried if size < run.other[0]][:3]
    return out


@judge_only
def _search_batched(student: Submission, runs: list[Run], chunk: int = 100) -> list[dict[str, Any]]:
    """Every run observed, 100 to a request (a request stops at the student's first BaseException)."""
    names = {code: kind for kind, code in EVENT_CODES.items()}
    seen: list[dict[str, Any]] = []
    for at in range(0, len(runs), chunk):
        part = runs[at:at + chunk]
        records = json.loads(student.scenario(search_scenario_text, [(r.threshold, r.kwargs, r.other, r.cuda,
                                                                      r.returns) for r in part]))
        for run, record in zip(part, records):
            for key in ("error", "raised"):
                if key in record:
                    record[key]["exception_types"] = tuple(record[key]["exception_types"])
            if "error" in record:
                raise StudentCodeError(StudentError(**record["error"]), run.text())
            record["events"] = [(names[code], value) for code, value in record["events"]]
        seen += records
    return seen


@judge_only
def _verdict(judge: Any, run: Run, record: dict[str, Any]) -> str | StudentCodeError | None:
    try:
        judge(run, record)
    except CheckFailed as exc:
        return str(exc)
    except StudentCodeError as exc:
        return exc
    return None


CAUSE = "\n  likely cause: "


@judge_only
def _too_big(run: Run) -> bool:
    start, limit = run.bounds
    return 1 <= start <= limit and run.threshold < start


def _valid(run: Run) -> bool:
    start, limit = run.bounds
    return 1 <= start <= limit and run.threshold >= start


@judge_only
def _check_generated(student: Submission, runs: list[Run], judge: Any, keep: Any = _valid) -> None:
    """``judge(run, record)`` on every generated run; on failures, the smallest failing run (shrunk among the
    runs ``keep`` accepts), in the words of ``judge``, its likely cause kept only when every failing run gives
    that same cause."""
    verdicts = [_verdict(judge, run, record) for run, record in zip(runs, _search_batched(student, runs))]
    failing = [v is not None for v in verdicts]
    if not any(failing):
        return
    found = dict(zip(runs, verdicts))

    def fails(candidates: list[Run]) -> list[bool]:
        results = [_verdict(judge, c, r) for c, r in zip(candidates, _search_batched(student, candidates))]
        found.update(zip(candidates, results))
        return [r is not None for r in results]

    def candidates(run: Run) -> list[Run]:
        return [c for c in _smaller_runs(run) if keep(c) and max(abs(x) for x in (*c.bounds, c.threshold)) < LARGEST]

    run = domain.shrink(domain.smallest(runs, failing, size=run_size), candidates, fails)
    verdict = found[run]
    if isinstance(verdict, StudentCodeError):
        raise verdict
    texts = [v if isinstance(v, str) else "" for v in verdicts if v is not None]
    causes = {text.split(CAUSE, 1)[1] if CAUSE in text else None for text in texts}
    body, _, cause = verdict.partition(CAUSE)
    count = sum(failing)
    fail(f"{body}\n  (a generated case: {count} of the {len(runs)} generated cases failed; this is the smallest)"
         + (f"{CAUSE}{cause}" if cause and len(causes) == 1 else ""))


def _result_cause(run: Run, got: int, calls: list[Any]) -> str | None:
    start, limit = run.bounds
    right = min(run.threshold, limit)
    if got == right + 1:
        return "one too many: return the last size that fit (lo), not the first that failed"
    if got == right - 1:
        return "one too few: the bisection stops when hi - lo == 1 and lo is the answer"
    if calls and got == calls[-1]:
        return "the last size tried is returned, whether it fit or not; return lo, the largest size that fit"
    if got > limit:
        return f"the answer is above limit = {limit}: probe limit itself in place of the first doubled size past it"
    fitted = [c for c in calls if isinstance(c, int) and c <= run.threshold]
    if fitted and got == max(fitted) and got < right:
        return "the search stops after the doubling; bisect between the last size that fit and the first that did not"
    return None


@FIND_MAX_BATCH_SIZE.check(points=2)
def finds_the_largest(student: Submission, device: torch.device) -> None:
    """The largest size in [start, limit] that fits, for many starts, limits and memory thresholds."""
    runs = _grid()
    for run, record in zip(runs, _search(student, runs)):
        _judge_largest(run, record)
    _check_generated(student, domain.draw(generate_run, 200, size=run_size), _judge_largest)


def _judge_largest(run: Run, record: dict[str, Any]) -> None:
    got = _answer(record, run)
    start, limit = run.bounds
    right = min(run.threshold, limit)
    if got != right:
        cause = _result_cause(run, got, record["calls"])
        fail(f"{run.text()}\n  expected {right}, returned {got} (sizes tried: {_short(record['calls'])})"
             + (f"\n  likely cause: {cause}" if cause else ""))
    _require_evidence(record, run, got)


def _short(calls: list[Any], limit: int = 24) -> str:
    shown = ", ".join(map(str, calls[:limit]))
    return f"[{shown}{', ...' if len(calls) > limit else ''}] ({len(calls)} calls)"


def _order_cause(run: Run, calls: list[Any], expected: list[int]) -> str | None:
    start, limit = run.bounds
    if not all(isinstance(c, int) for c in calls):
        return "try_batch was given something else than an int batch size"
    if calls and calls[0] == limit and start != limit:
        return "limit is probed first; the search starts at start and doubles"
    if any(c > limit for c in calls):
        return f"a size above limit = {limit} was tried: probe limit in place of the first doubled size past it"
    if limit in expected and limit not in calls:
        return f"limit = {limit} was never probed: when doubling passes limit, probe limit itself before bisecting"
    if len(calls) > 3 and calls[:4] == list(range(calls[0], calls[0] + 4)):
        return "the sizes are tried one by one (a linear search); the spec doubles, then bisects"
    if calls and calls[0] != start:
        return f"start = {start} was not tried first: the search begins by probing start itself"
    if limit in calls and (limit not in expected or calls.index(limit) < expected.index(limit)) and \
            calls.index(limit) < len(calls) - 1 and calls[calls.index(limit) + 1] < limit:
        return "limit is probed before the doubling reaches it; probe it only in place of the first doubled size past it"
    doubling = next((i + 1 for i, size in enumerate(expected) if size > run.threshold), len(expected))
    prefix = 0
    while prefix < min(len(calls), len(expected)) and calls[prefix] == expected[prefix]:
        prefix += 1
    if prefix < len(calls) and prefix < len(expected):
        if calls[prefix] in calls[:prefix]:
            return "a size already tried is tried again (the ends of the interval are known: lo fits, hi does not)"
        if prefix >= doubling and calls == probes(start, limit, run.threshold, lambda lo, hi: (lo + hi + 1) // 2)[0]:
            return "mid is rounded up ((lo + hi + 1) // 2); the spec bisects with mid = (lo + hi) // 2"
    return None


@FIND_MAX_BATCH_SIZE.check(points=1)
def probes_in_order(student: Submission, device: torch.device) -> None:
    """The sizes tried are start, 2·start, 4·start, … (limit in place of the first past it), then (lo + hi) // 2."""
    runs = [Run(1000), Run(7, start=3, limit=100), Run(999, start=7, limit=1000), Run(36, start=2, limit=37),
            Run(100, start=16, limit=300), Run(4096), Run(600, start=5, limit=640), Run(20, start=20, limit=25)]
    for run, record in zip(runs, _search(student, runs)):
        _judge_order(run, record)
    _check_generated(student, domain.draw(generate_run, 150, size=run_size), _judge_order)


def _judge_order(run: Run, record: dict[str, Any]) -> None:
    _answer(record, run)
    start, limit = run.bounds
    expected, _ = probes(start, limit, run.threshold)
    calls = record["calls"]
    if calls != expected:
        cause = _order_cause(run, calls, expected)
        fail(f"{run.text()}\n  tried the sizes {_short(calls)}\n  the spec tries   {_short(expected)}"
             + (f"\n  likely cause: {cause}" if cause else ""))


@FIND_MAX_BATCH_SIZE.check(points=1)
def call_budget(student: Submission, device: torch.device) -> None:
    """try_batch is called at most ceil(log2(limit/start)) + ceil(log2(limit-start+1)) + 1 times, no size twice."""
    runs = [r for r in _grid() if r.threshold >= r.bounds[0]]
    for run, record in zip(runs, _search(student, runs)):
        _judge_budget(run, record)
    _check_generated(student, domain.draw(generate_run, 150, size=run_size), _judge_budget)


def _judge_budget(run: Run, record: dict[str, Any]) -> None:
    _require_search(record, run, "the number of calls")  # returning start at once makes no calls at all
    calls = record["calls"]
    start, limit = run.bounds
    repeated = sorted({c for c in calls if calls.count(c) > 1}, key=str)
    if repeated:
        first_failure = next((i for i, c in enumerate(calls) if isinstance(c, int) and c > run.threshold), len(calls))
        cause = ("bisecting the closed interval [lo, hi] re-tries its ends; lo is known to fit and hi known not to"
                 if any(calls.index(c, calls.index(c) + 1) > first_failure for c in repeated) else
                 "a size that fit is tried again: once limit fits, return it (when start == limit, start is limit)")
        fail(f"{run.text()}\n  try_batch was called more than once with the size(s) {repeated[:5]} (sizes tried: "
             f"{_short(calls)}); each size costs a whole training step, so never try one twice\n  likely cause: "
             f"{cause}")
    bound = call_bound(start, limit)
    if len(calls) > bound:
        fail(f"{run.text()}\n  try_batch was called {len(calls)} times; at most {bound} are needed "
             f"(ceil(log2(limit / start)) + ceil(log2(limit - start + 1)) + 1); sizes tried: {_short(calls)}")


@FIND_MAX_BATCH_SIZE.check(points=1)
def propagates_other_errors(student: Submission, device: torch.device) -> None:
    """Any exception from try_batch other than torch.OutOfMemoryError propagates unchanged."""
    runs = [Run(1000, other=(64, "runtime")), Run(100, other=(96, "runtime")), Run(1000, other=(1, "value")),
            Run(1000, other=(512, "oom_text")), Run(50, start=3, limit=90, other=(48, "memory")),
            Run(300, other=(384, "key")), Run(5000, other=(4096, "runtime"))]
    for run, record in zip(runs, _search(student, runs)):
        _judge_other(run, record)
    _check_generated(student, domain.draw(generate_other_run, 120, size=run_size), _judge_other,
                     keep=lambda run: _valid(run) and run.other is not None
                     and run.other[0] in probes(*run.bounds, run.threshold)[0])


def _judge_other(run: Run, record: dict[str, Any]) -> None:
    wanted = type(_other_error(run.other[1], 0)).__name__
    if "returned" in record:
        got = record["returned"]
        if run.other[0] not in record["calls"]:
            fail(f"{run.text()}\n  returned {got['text'] or got['type']} without ever trying size {run.other[0]} "
                 f"(sizes tried: {_short(record['calls'])}), which the spec's search tries; so the {wanted} it "
                 "raises never came out")
        fail(f"{run.text()}\n  returned {got['text'] or got['type']}: the {wanted} from try_batch({run.other[0]}) "
             "was swallowed; only torch.OutOfMemoryError means 'too large', anything else must propagate\n  likely "
             "cause: an except clause that catches more than torch.OutOfMemoryError (except RuntimeError, except "
             "Exception, a bare except" + (", or MemoryError: that is the host's out-of-memory error, not the "
                                           "GPU's" if wanted == "MemoryError" else "") +
             (", or a test of the message: this RuntimeError says 'out of memory' but is not "
              "torch.OutOfMemoryError" if run.other[1] == "oom_text" else "") + ")")
    if not record["same_object"]:
        error = StudentError(**record["raised"])
        fail(f"{run.text()}\n  try_batch({run.other[0]}) raised {wanted}, and find_max_batch_size let out "
             f"{error.exception_type} instead: {error.exception_message[:120]}; another exception must propagate "
             "unchanged (the very same exception, not a new one)\n  likely cause: catching it and raising a new "
             "error; catch only torch.OutOfMemoryError")
    if record["calls"] and record["calls"][-1] != run.other[0]:
        fail(f"{run.text()}\n  after try_batch({run.other[0]}) raised {wanted}, the search went on (sizes tried: "
             f"{_short(record['calls'])}); it must stop there and let the error out")


@FIND_MAX_BATCH_SIZE.check(points=1)
def releases_the_error(student: Submission, device: torch.device) -> None:
    """No reference to an out-of-memory error survives its except block; then empty_cache, only if CUDA is there."""
    runs = [Run(1000, cuda=True), Run(7, start=3, limit=100, cuda=True), Run(600, start=5, limit=640, cuda=True),
            Run(1000, cuda=False), Run(36, start=2, limit=37, cuda=False)]
    for run, record in zip(runs, _search(student, runs)):
        _judge_release(run, record)
    # Even when start itself does not fit: the error is released and the cache emptied before the RuntimeError.
    run = Run(3, start=4, limit=64, cuda=True)
    (record,) = _search(student, [run])
    _judge_release_too_big(run, record)
    _check_generated(student, domain.draw(lambda g: generate_run(g, cuda=g.random() < 0.7), 120, size=run_size),
                     _judge_release)
    _check_generated(student, domain.draw(lambda g: generate_run(g, below_start=True, cuda=g.random() < 0.7), 40,
                                          size=run_size), _judge_release_too_big, keep=_too_big)


def _judge_release(run: Run, record: dict[str, Any]) -> None:
    _require_search(record, run, "whether the errors are released")
    _check_release(run, record)


def _judge_release_too_big(run: Run, record: dict[str, Any]) -> None:
    if "returned" in record or not StudentError(**record["raised"]).is_instance(RuntimeError):
        fail(f"{run.text()}\n  did not raise RuntimeError: whether the error is released when even start does not "
             "fit can only be judged once it raises RuntimeError")
    _check_release(run, record)


def _check_release(run: Run, record: dict[str, Any]) -> None:
    events = record["events"]
    if record["alive_at_call"]:
        fail(f"{run.text()}\n  when try_batch({record['alive_at_call'][0]}) was called, the tensors of an earlier "
             "failed step were still alive: a reference to the out-of-memory error (or its traceback, which holds "
             "the failed step's frames and their tensors) was kept after the except block\n  likely cause: storing "
             "the exception (error = e, errors.append(e), sys.exc_info()) or its traceback; set a flag inside except "
             "and keep nothing")
    if record["alive_after"]:
        fail(f"{run.text()}\n  after find_max_batch_size returned, {record['alive_after']} failed step(s) still held "
             "their tensors: a reference to an out-of-memory error or its traceback was kept (in a global, a default "
             "argument or an attribute)")
    empties = [i for i, (kind, _) in enumerate(events) if kind == "empty_cache"]
    if not run.cuda:
        if empties:
            fail(f"{run.text()} with torch.cuda.is_available() False\n  torch.cuda.empty_cache() was called "
                 f"{len(empties)} time(s); the spec calls it only if torch.cuda.is_available()")
        return
    ooms = [i for i, (kind, _) in enumerate(events) if kind == "oom"]
    while_alive = [events[i][1] for i in empties if events[i][1]]
    if while_alive:
        fail(f"{run.text()}\n  torch.cuda.empty_cache() was called while an out-of-memory error was still alive (so "
             "the failed step's tensors could not be freed and their blocks stayed cached)\n  likely cause: "
             "empty_cache inside the except block; leave the block first (the exception is dropped there), then "
             "call it")
    for n, at in enumerate(ooms):
        until = ooms[n + 1] if n + 1 < len(ooms) else len(events)
        calls_between = [i for i in range(at + 1, until) if events[i][0] == "call"]
        end = calls_between[0] if calls_between else until
        if not any(at < i < end for i in empties):
            failed = events[at][1]
            then = "the next step" if calls_between else "find_max_batch_size returned or raised"
            fail(f"{run.text()}\n  after try_batch({failed}) ran out of memory, torch.cuda.empty_cache() was not "
                 f"called before {then}; with CUDA available the spec calls it after each out-of-memory error, "
                 "once the except block is left\n  likely cause: "
                 + ("empty_cache is never called here" if not empties else
                    "empty_cache is called only in some branches (or only once, at the end)"))


@FIND_MAX_BATCH_SIZE.check(points=1)
def rejects_bad_arguments(student: Submission, device: torch.device) -> None:
    """ValueError for start < 1 or limit < start; RuntimeError, unchained, when even start does not fit."""
    bad = [Run(100, start=0), Run(100, start=-4, limit=10), Run(100, start=10, limit=5), Run(100, start=2, limit=1)]
    reasons = ["start < 1", "start < 1", "limit < start", "limit < start"]
    records = _search(student, bad)
    raised = [run for run, record in zip(bad, records)
              if "raised" in record and StudentError(**record["raised"]).is_instance(ValueError)]
    for run, record, why in zip(bad, records, reasons):
        _judge_invalid(run, record, why, raised)
    too_big = [Run(3, start=4, limit=64), Run(0, start=1, limit=1), Run(0), Run(9, start=10, limit=10, cuda=True)]
    for run, record in zip(too_big, _search(student, too_big)):
        _judge_too_big(run, record)
    _check_generated(student, domain.draw(generate_invalid_run, 80, size=run_size),
                     lambda run, record: _judge_invalid(run, record, _invalid_reason(run)),
                     keep=lambda run: _invalid_reason(run) is not None)
    _check_generated(student, domain.draw(lambda g: generate_run(g, below_start=True, cuda=g.random() < 0.5), 60,
                                          size=run_size), _judge_too_big, keep=_too_big)


def _invalid_reason(run: Run) -> str | None:
    start, limit = run.bounds
    reasons = [text for bad, text in ((start < 1, "start < 1"), (limit < start, "limit < start")) if bad]
    return " and ".join(reasons) or None


def _judge_invalid(run: Run, record: dict[str, Any], why: str, raised_elsewhere: list[Run] | None = None) -> None:
    """``raised_elsewhere``: the other invalid runs of the same calls that did raise ValueError (None: not known,
    as for one generated run): a returned run's cause is named only from them."""
    if "returned" in record:
        cause = ("" if raised_elsewhere is None else
                 "\n  likely cause: no check at the top of the function (no invalid call raised)"
                 if not raised_elsewhere
                 else f"\n  likely cause: the check's condition lets this call through, although "
                      f"{raised_elsewhere[0].text().split(' where ')[0]} raised ValueError")
        fail(f"{run.text()}\n  returned {record['returned']['text'] or record['returned']['type']}; it must raise "
             f"ValueError because {why}{cause}")
    error = StudentError(**record["raised"])
    if not error.is_instance(ValueError):
        cause = ("assert raises AssertionError; raise ValueError(...) instead"
                 if error.exception_type == "AssertionError" else f"the spec asks for ValueError when {why}")
        fail(f"{run.text()}\n  must raise ValueError because {why}, but it {error.describe()}\n"
             f"  likely cause: {cause}")


def _judge_too_big(run: Run, record: dict[str, Any]) -> None:
    if "returned" in record:
        fail(f"{run.text()}\n  returned {record['returned']['text'] or record['returned']['type']}; even start = "
             f"{run.bounds[0]} does not fit, so it must raise RuntimeError")
    error = StudentError(**record["raised"])
    if error.is_instance(torch.OutOfMemoryError):
        fail(f"{run.text()}\n  the torch.OutOfMemoryError itself escaped; when even start does not fit, raise a "
             "RuntimeError of your own, after the except block")
    if not error.is_instance(RuntimeError):
        fail(f"{run.text()}\n  must raise RuntimeError because even start = {run.bounds[0]} does not fit, but it "
             f"{error.describe()}")
    if record["context"] or record["cause"]:
        linked = record["cause"] or record["context"]
        how = ("raise ... from e links it as __cause__" if record["cause"] else
               "raising inside the except block links the out-of-memory error as __context__")
        fail(f"{run.text()}\n  the RuntimeError carries the {linked} it was raised from ({how}): the traceback keeps "
             "the failed step's tensors alive, and the report shows two errors\n  likely cause: raise it after "
             "the except block (set a flag inside it)")
    if record["calls"] != [run.bounds[0]]:
        fail(f"{run.text()}\n  sizes tried: {_short(record['calls'])}; once start does not fit there is nothing "
             "smaller to try: raise RuntimeError")
