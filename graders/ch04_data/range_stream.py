"""RangeStream(start, end) -> an IterableDataset yielding start, ..., end - 1, each exactly once per pass of any
DataLoader over it, whatever its num_workers (0 to 8) and batch size.

The student's class lives only in the runner: the scenarios below build it there, iterate it directly or run
a real DataLoader over it (worker processes started by ``fork``, so a class unpickled from a notebook or
defined in the imported file needs no importing in the workers), and send back the items, batches and facts
about the object. The judge compares them with ``range(start, end)`` and names the mistake.

A worker stuck in the student's loop needs no clean-up here: the judge stops the runner's whole process
group (its DataLoader workers included) when a request runs past its time limit, and when it is done with the
runner. The runner serves the exercise's next checks too, so every loader ends with the request that used it:
its workers shut down there, not in a later check.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import linecache
import multiprocessing
import numbers
import pickle
import random
import re
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from graders import domain
from graders.compare import dtype_name, show, type_name
from graders.isolation import RunnerStudent, StudentRaised, describe_exception
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

RANGE_STREAM = exercise("range_stream", chapter="04_data", names=["RangeStream"])

# Workers are started by fork: nothing is pickled, so the student's class works in them whether it was
# defined in a notebook (unpickled by cloudpickle in the runner) or in the file the runner imported.
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else None

_ITEM_TYPES = ("yield each value as a Python int (a 0-d integer tensor or a NumPy integer is fine too: the "
               "DataLoader collates them the same way)")
_NOT_AN_ITERATOR = ("__iter__ must return an ITERATOR: return iter(range(...)) (a list or a range is iterable, "
                    "but not an iterator), or make __iter__ a generator with yield")


# ==================================================================================================
# Inside the runner: DataLoader runs whose worker errors come back as the student's own errors
# ==================================================================================================
_WORKER_ERROR = re.compile(r"Caught (\w+) in DataLoader worker process (\d+)\.\s*\nOriginal Traceback")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$')
_NOTEBOOK_FILE = re.compile(r"ipykernel_\d+|<ipython-input")
_GRADER_NOISE = ("This DataLoader will create", "use of fork\\(\\) may lead to deadlocks")


def worker_error(exc: BaseException, student: RunnerStudent) -> StudentError | None:
    """The facts of an exception a DataLoader worker raised (the DataLoader re-raises it in the main process with
    the worker's traceback as text: the only form it keeps), or None for any other exception."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a student's exception class whose __str__ breaks
        return None
    found = _WORKER_ERROR.search(text)
    if not found:
        return None
    name, worker = found.group(1), found.group(2)
    lines = text.splitlines()
    message = ""
    for index in range(len(lines) - 1, -1, -1):  # the last unindented "Type: message" line names the error
        line = lines[index]
        head = re.match(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$", line)
        if head and head.group(1).rsplit(".", 1)[-1] == name:
            message = "\n".join([head.group(2) or "", *lines[index + 1:]]).strip()
            break
    where = None
    for index, line in enumerate(lines):
        frame = _FRAME.match(line)
        if frame and frame.group(1) in student.files:
            path, number, function = frame.group(1), int(frame.group(2)), frame.group(3).strip()
            code = linecache.getline(path, number).strip()
            shown = "your notebook cell" if _NOTEBOOK_FILE.search(path) else Path(path).name
            where = f"{shown}, line {number}, in {function}: {code}"
    types_ = tuple(f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__) \
        if type(exc).__name__ == name else (name,)
    said = f"{name}: {message}" if message else name
    return StudentError("raised", f"raised {said} (in DataLoader worker process {worker})", name, types_,
                        message[:1200], where)


def _guarded(student: RunnerStudent, work: Callable[[], Any], label: str = "DataLoader") -> Any:
    """Run ``work()`` (which drives a DataLoader) as the student's code. A worker's error becomes the student's
    error with their own line, and the DataLoader's notices about the grader's choices (more workers than
    cores, fork in a process with threads) are not the student's and do not become notes."""

    def guarded() -> Any:
        for pattern in _GRADER_NOISE:  # inside run()'s own warning filters, which it restores afterwards
            warnings.filterwarnings("ignore", message=f".*{pattern}")
        try:
            return work()
        except Exception as exc:  # noqa: BLE001 - the student's error, told with their own line
            error = worker_error(exc, student) or describe_exception(exc, student.files, student.label)
            # The failed iterator is still referenced by the traceback's frames, in a reference cycle: left to
            # the garbage collector, it would shut its workers down later, in another check, after their
            # queues were closed, waiting 5 s for each. Freed now, it shuts them down at once.
            traceback.clear_frames(exc.__traceback__)
        raise StudentRaised(error)

    guarded.__qualname__ = label
    return student.run(guarded)


# A loader started by one request and iterated by the next. Forking many workers from a process that has
# imported torch takes a while on a busy machine; starting them and running the passes in two requests gives
# each part the whole time limit, while a worker that hangs still ends as a timeout of the request that waits
# for it (the judge then stops the runner's whole process group, its workers included).
_STARTED: dict[str, Any] = {}


def start_loader(student: RunnerStudent, dataset: Any, options: dict) -> None:
    """``DataLoader(dataset, **options)`` and its first iterator (its worker processes, forked from the runner)."""
    _STARTED.clear()
    options = dict(options)
    if options.get("num_workers"):
        options.setdefault("multiprocessing_context", START_METHOD)
    live = {"loader": DataLoader(dataset, **options)}
    try:
        _STARTED["first"] = _guarded(student, lambda: iter(live["loader"]))
        _STARTED["loader"] = live["loader"]
    finally:
        live.clear()


def iterate_started(student: RunnerStudent, passes: int, limit: int) -> list[list[Any]]:
    """The batches of ``passes`` passes over the started loader (each pass after the first a new ``iter``), at
    most ``limit`` batches each: an endless stream stops. The loader and its workers end with this request
    (not after its reply, when the time limit no longer runs: a worker stuck in the student's code would then
    hold up the next request)."""
    live = {"loader": _STARTED.pop("loader"), "first": _STARTED.pop("first")}  # nothing else keeps them alive

    def passes_over() -> list[list[Any]]:
        return [list(itertools.islice(live.pop("first") if number == 0 else iter(live["loader"]), limit))
                for number in range(passes)]

    try:
        return _guarded(student, passes_over)
    finally:
        live.clear()


def run_loader(student: RunnerStudent, dataset: Any, *, passes: int = 1, limit: int, **options: Any) -> list[list[Any]]:
    """A real ``DataLoader(dataset, **options)`` in the runner (workers forked from it); its batches per pass."""
    start_loader(student, dataset, options)
    return iterate_started(student, passes, limit)


# ==================================================================================================
# Scenarios: the student's RangeStream, driven in the runner
# ==================================================================================================
def _stream(student: RunnerStudent, start: int, end: int) -> tuple[Any, dict]:
    stream = student.run(student.get("RangeStream"), start, end)
    cls = type(stream)  # looked up on the class: a student's __getattr__ never runs here
    facts = {"iterable": isinstance(stream, IterableDataset), "type": cls.__name__,
             "getitem": hasattr(cls, "__getitem__"), "len": hasattr(cls, "__len__")}
    return stream, facts


def direct_passes(student: RunnerStudent, start: int, end: int, passes: int, limit: int) -> dict:
    """``passes`` passes of ``iter(RangeStream(start, end))`` in the runner's main process (no DataLoader)."""
    stream, facts = _stream(student, start, end)
    if not facts["iterable"]:
        return {"facts": facts}

    def one_pass() -> list:
        return list(itertools.islice(iter(stream), limit))  # at most limit items: an endless stream stops

    one_pass.__qualname__ = "RangeStream.__iter__"
    return {"facts": facts, "runs": [student.run(one_pass) for _ in range(passes)]}


def start_stream_loader(student: RunnerStudent, start: int, end: int, options: dict) -> dict:
    """Start ``DataLoader(RangeStream(start, end), **options)`` (see :func:`start_loader`); facts on the stream."""
    stream, facts = _stream(student, start, end)
    if facts["iterable"]:
        start_loader(student, stream, options)
    return facts


# ==================================================================================================
# In the judge
# ==================================================================================================
def _loader_label(start: int, end: int, options: dict) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"DataLoader(RangeStream({start}, {end}), {shown})"


def _expect_iterable(facts: dict, start: int, end: int) -> None:
    if facts["iterable"]:
        return
    if facts["getitem"] and facts["len"]:
        cause = ("it is map-style (it has __len__ and __getitem__), and the exercise asks for a "
                 "torch.utils.data.IterableDataset that yields its items from __iter__")
    else:
        cause = ("subclass torch.utils.data.IterableDataset: a DataLoader treats any other object as a map-style "
                 "dataset and asks it for len() and [index]")
    fail(f"RangeStream({start}, {end}) is a {facts['type']}, not an IterableDataset: {cause}")


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool:
            return int(value.item())
        kind = ("a float tensor" if value.is_floating_point() else f"a {dtype_name(value.dtype)} tensor"
                if value.dim() == 0 else f"a tensor of shape {tuple(value.shape)}")
        fail(f"{where} yielded {kind} ({show(value)}); {_ITEM_TYPES}, not a 1-element or float tensor")
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    fail(f"{where} yielded {show(value)} (a {type_name(value)}); {_ITEM_TYPES}")


def _with_iter_hint(exc: StudentCodeError, call: str) -> StudentCodeError:
    """Fail with the likely cause when __iter__ returned a list or a range; else the error, said of ``call``."""
    error = exc.error
    if error.exception_type == "TypeError" and "returned non-iterator" in error.exception_message:
        fail(f"{call} failed: {error.describe()}\n  likely cause: {_NOT_AN_ITERATOR}")
    return exc.within(call)


def _direct(student: Submission, start: int, end: int, passes: int = 1) -> list[list[int]]:
    label = f"iter(RangeStream({start}, {end}))"
    try:
        reply = student.scenario(direct_passes, start, end, passes, 2 * max(end - start, 0) + 10)
    except StudentCodeError as exc:
        raise _with_iter_hint(exc, label) from None
    _expect_iterable(reply["facts"], start, end)
    return [[_as_int(v, label) for v in run] for run in reply["runs"]]


def _through_loader(student: Submission, start: int, end: int, options: dict, passes: int = 1) -> list[list[int]]:
    label = _loader_label(start, end, options)
    size = max(end - start, 0)
    limit = (2 * size + 10) * max(1, options.get("num_workers", 0))  # batches; each holds at least one item
    try:
        _expect_iterable(student.scenario(start_stream_loader, start, end, options), start, end)
        runs = student.scenario(iterate_started, passes, limit)
    except StudentCodeError as exc:
        raise _with_iter_hint(exc, label) from None
    batch_size = options.get("batch_size", 1)
    out = []
    for batches in runs:
        values: list[int] = []
        for batch in batches:
            if batch_size is None:
                values.append(_as_int(batch, label))
                continue
            if not isinstance(batch, torch.Tensor) or batch.dim() != 1:
                shape = f"shape {tuple(batch.shape)}" if isinstance(batch, torch.Tensor) else f"type {type_name(batch)}"
                fail(f"{label} gave a batch of {shape} ({show(batch)}); ints collate into a 1-D tensor, so "
                     f"{_ITEM_TYPES}; a 1-element tensor per item makes batches of shape (batch_size, 1)")
            if batch.is_floating_point() or batch.is_complex() or batch.dtype == torch.bool:
                fail(f"{label} gave a {dtype_name(batch.dtype)} batch {show(batch)}; {_ITEM_TYPES}, not floats")
            values.extend(int(v) for v in batch.tolist())
        out.append(values)
    return out


def _shards(start: int, end: int, workers: int, shard) -> list[int]:
    return [v for k in range(workers) for v in shard(k)]


def _coverage_cause(values: list[int], start: int, end: int, workers: int) -> str | None:
    """Name the mistake when the ints match what a known wrong sharding gives, else from the evidence."""
    counts = Counter(values)
    n = max(end - start, 0)
    expected = range(start, end)
    got = sorted(values)
    extra = sorted(v for v in counts if not start <= v < end)
    missing = [v for v in expected if v not in counts]
    duplicated = [v for v in expected if counts.get(v, 0) > 1]
    int32 = [((v + 2**31) % 2**32) - 2**31 for v in expected]
    if any(v != w for v, w in zip(int32, expected)) and got == sorted(int32):
        return ("the ints overflowed: they went through an int32 (or a float) on the way; past 2**31 only int64 "
                "(torch.long) or Python ints hold them, e.g. range(start, end) itself")
    if any(float(np.float32(v)) != v for v in expected) and got == sorted(int(np.float32(v)) for v in expected):
        return ("the ints were rounded: they went through float32 on the way, which holds integers exactly only "
                "up to 2**24; yield Python ints from range(start, end)")
    if workers > 1 and n and not extra and all(counts.get(v, 0) == workers for v in expected):
        return (f"each int came once from every one of the {workers} workers: the items are duplicated across "
                "workers. Every worker runs __iter__ on its own copy of the dataset; shard by get_worker_info() "
                "(its id and num_workers) inside __iter__ (it is None in __init__ and in the main process)")
    if not values and n:
        if not workers:
            return "nothing was yielded at all"
        # (what made each worker's share empty is not singled out: contiguous chunks of (end - start) //
        # num_workers, an early return, a condition on info.id all give nothing here)
        more = f" ({workers} workers, {n} int{'s' if n > 1 else ''}: more workers than ints)" if n < workers else ""
        return (f"nothing came out of the worker processes{more}: get_worker_info() is not None in a worker, and "
                "each worker must yield its own share; together the shards of workers 0 .. num_workers - 1 cover "
                "the whole range, e.g. range(start + info.id, end, info.num_workers)")
    if workers >= 1:
        per, ceil = n // workers, -(-n // workers)
        known = [
            (_shards(start, end, workers, lambda k: range(start + k * per, start + (k + 1) * per)),
             f"the last {n - per * workers} int(s) are missing: contiguous chunks of (end - start) // num_workers "
             "drop the remainder (and give nothing at all when there are more workers than items); give the "
             "leftover ints to some worker, or shard with range(start + info.id, end, info.num_workers)"),
            (list(range(start, end, workers)),
             "only worker 0's share came out: the other workers yielded nothing (look at the condition on "
             "info.id); together the shards of workers 0 .. num_workers - 1 must cover the whole range"),
            (_shards(start, end, workers, lambda k: range(k, end, workers)) if abs(end) <= 10**6 else [],
             "the shards start from 0, not from start: they must begin at start, e.g. "
             "range(start + info.id, end, info.num_workers)"),  # (not built for an end past 10**6: far too long)
            (_shards(start, end, workers, lambda k: range(start + k * ceil, start + (k + 1) * ceil)),
             "chunks of ceil((end - start) / num_workers) run past end: clamp the last chunk to end "
             "(min(lo + per, end)), and a worker past the end gets nothing"),
            (_shards(start, end, workers, lambda k: range(start + k, end)),
             "each worker starts at start + info.id but then steps by 1, so the shards overlap: step by "
             "info.num_workers as well, range(start + info.id, end, info.num_workers)"),
            (_shards(start, end, workers, lambda k: range(start + k, end - 1, workers)),
             "the workers' shards stop before end - 1: end is exclusive already, so range(start + info.id, end, "
             "info.num_workers) reaches the last int; do not subtract 1 from end"),
            (_shards(start, end, workers, lambda k: range(start + k, end, 2)),
             "the shards step by 2 whatever the number of workers (written for 2 workers?): step by "
             "info.num_workers, range(start + info.id, end, info.num_workers)"),
        ]
        matches = {cause for wrong, cause in known if sorted(wrong) == got and sorted(wrong) != list(expected)}
        if len(matches) == 1:
            return matches.pop()
        if matches:  # several wrong shardings give these ints here: the evidence does not single one out
            return None
    if extra == [end] and not missing and not duplicated:
        return "end itself was yielded: end is exclusive (like range(start, end))"
    if duplicated and workers > 1:
        return ("some ints came from more than one worker (duplicated across workers): the workers' shards overlap; "
                "shard by get_worker_info() so that each int belongs to exactly one worker (use both info.id and "
                "info.num_workers)")
    return None


def _expect_exactly_once(values: list[int], start: int, end: int, label: str, workers: int, what: str,
                         causes: bool = True) -> None:
    if sorted(values) == list(range(start, end)):
        return
    counts = Counter(values)
    missing = [v for v in range(start, end) if v not in counts]
    duplicated = sorted(v for v, c in counts.items() if c > 1)
    extra = sorted(v for v in counts if not start <= v < end)
    kinds = (("missing", missing), ("more than once:", duplicated), ("outside the range:", extra))
    problems = [f"{what} {found[:10]}" + (f" and {len(found) - 10} more" if len(found) > 10 else "")
                for what, found in kinds if found]
    shown = sorted(values)
    got = f"{shown[:12]}"[:-1] + (f", ... ({len(shown)} ints)]" if len(shown) > 12 else "]")
    fail_mismatch(what, given=label,
                  expected=f"each of {start}, ..., {end - 1} exactly once ({end - start} ints)" if end > start + 1 else
                  f"the one int {start}, once" if end == start + 1 else
                  "nothing (start == end is an empty range)" if end == start else
                  f"nothing (start > end: range({start}, {end}) is empty)",
                  got=f"{got} ({'; '.join(problems)})",
                  cause=_coverage_cause(values, start, end, workers) if causes else None)


def _expect_loader(student: Submission, start: int, end: int, what: str, passes: int = 1, **options: Any) -> None:
    label = _loader_label(start, end, options)
    runs = _through_loader(student, start, end, options, passes)
    for number, values in enumerate(runs):
        shown = label if passes == 1 else f"pass {number + 1} over the same {label}"
        _expect_exactly_once(values, start, end, shown, options.get("num_workers", 0), what)


def _expect_direct(student: Submission, start: int, end: int, what: str) -> None:
    label = f"iter(RangeStream({start}, {end}))"
    (values,) = _direct(student, start, end)
    _expect_exactly_once(values, start, end, label, 0, what)


# ==================================================================================================
# Checks
# ==================================================================================================
@RANGE_STREAM.check(points=1)
def is_an_iterable_dataset(student: Submission, device: torch.device) -> None:
    """RangeStream(start, end) is a torch.utils.data.IterableDataset whose __iter__ yields its ints."""
    for start, end in [(0, 4), (-2, 3)]:
        _expect_direct(student, start, end, "an IterableDataset whose __iter__ yields the wrong ints")


@RANGE_STREAM.check(points=1)
def yields_the_range(student: Submission, device: torch.device) -> None:
    """Iterated in the main process it yields the ints start, ..., end - 1, each once (any start, large too)."""
    for start, end in [(0, 5), (3, 9), (-4, 2), (7, 8), (-9, -3), (1000, 1300), (2**40 - 3, 2**40 + 4),
                       (3_000_000_000, 3_000_000_006)]:
        _expect_direct(student, start, end, "wrong ints from the stream")
    _expect_generated(student, draw_direct, 150, "wrong ints from the stream")


@RANGE_STREAM.check(points=1)
def empty_range(student: Submission, device: torch.device) -> None:
    """start == end yields nothing, directly and through a DataLoader (and a one-int range yields that int); start
    > end yields nothing either, or raises."""
    for start, end in [(5, 5), (0, 0), (5, 6), (-3, -3), (-1, 0), (300, 300)]:
        _expect_direct(student, start, end, "an empty range must yield nothing" if start == end else
                       "a range of one int must yield that int")
    # start > end: no int lies in start, ..., end - 1, so none may come out. The specification says nothing of an
    # error there, so an answer may also raise one (the reference's islice does); yielding ints is wrong either way
    # (swapped bounds yield end, ..., start - 1)
    for start, end in [(5, 2), (0, -3), (7, 6), (-1, -40)]:
        try:
            (values,) = _direct(student, start, end)
        except StudentCodeError:
            continue
        _expect_exactly_once(values, start, end, f"iter(RangeStream({start}, {end}))",
                             0, "start > end: no int lies in start, ..., end - 1")
    _expect_loader(student, 2, 2, "an empty range through a DataLoader", batch_size=2, num_workers=0)
    _expect_loader(student, 4, 5, "a range of one int through a DataLoader", batch_size=2, num_workers=0)
    _expect_generated(student, draw_empty, 60, "an empty range (start >= end) or one int, with or without workers")


@RANGE_STREAM.check(points=1)
def fresh_pass_each_time(student: Submission, device: torch.device) -> None:
    """Every pass over the same stream (or the same DataLoader, persistent workers too) yields the whole range."""
    runs = _direct(student, 1, 7, passes=3)
    for number, values in enumerate(runs):
        label = f"pass {number + 1} of iter(...) over the same RangeStream(1, 7)"
        if number > 0 and sorted(runs[0]) == list(range(1, 7)) and sorted(values) != list(range(1, 7)):
            fail(f"{label} gave {values}; expected [1, 2, 3, 4, 5, 6] again, like pass 1 (likely cause: the stream "
                 "keeps its state from one pass to the next, and is used up after one pass: __iter__ must return a "
                 "new iterator each time, so do not create the iterator or generator in __init__, and reset any "
                 "counter in __iter__)")
        _expect_exactly_once(values, 1, 7, label, 0, "wrong ints from the stream")
    what = "every pass over a DataLoader must give the whole range"
    _expect_loader(student, 1, 7, what, passes=2, batch_size=2, num_workers=0)
    # Without persistent workers each pass forks new workers from the main process's untouched copy, which
    # repeats pass 1; persistent workers keep their copies, so a pass that changes its copy shows on the next.
    _expect_loader(student, -2, 9, what + " (persistent_workers=True keeps the workers, and their copies of the "
                   "dataset, from one pass to the next: __iter__ must not change the dataset)",
                   passes=3, batch_size=3, num_workers=2, persistent_workers=True)
    _expect_generated(student, draw_passes, 60, what)


@RANGE_STREAM.check(points=1)
def single_process_loader(student: Submission, device: torch.device) -> None:
    """DataLoader(num_workers=0) with batch sizes None, 1, 4 and one larger than the range gives each int once."""
    for start, end, batch_size in [(2, 12, None), (2, 12, 1), (2, 12, 4), (-5, 4, 16), (2**40, 2**40 + 9, 4)]:
        _expect_loader(student, start, end, "wrong ints through a DataLoader with num_workers=0",
                       batch_size=batch_size, num_workers=0)
    _expect_generated_loaders(student, 4, (0, 0), "wrong ints through a DataLoader with num_workers=0")


@RANGE_STREAM.check(points=1)
def one_worker(student: Submission, device: torch.device) -> None:
    """One worker process (num_workers=1), batch sizes None and 3: each int once."""
    for start, end, batch_size in [(4, 11, None), (-6, 5, 3)]:
        _expect_loader(student, start, end, "wrong ints with one worker process", batch_size=batch_size, num_workers=1)
    _expect_generated(student, draw_one_worker, 60, "wrong ints with one worker")


@RANGE_STREAM.check(points=1)
def several_workers(student: Submission, device: torch.device) -> None:
    """2 to 6 worker processes, several batch sizes, negative starts and large ints: each int once, none twice."""
    for start, end, workers, batch_size in [(5, 15, 4, 2), (0, 10, 3, None), (-3, 8, 3, 2), (-50, 251, 2, 16),
                                            (3_000_000_000, 3_000_000_021, 6, 3)]:
        _expect_loader(student, start, end, f"wrong ints with {workers} worker processes", batch_size=batch_size,
                       num_workers=workers)
    _expect_generated(student, draw_several, 150, "wrong ints with several workers")
    _expect_generated_loaders(student, 1, (2, 4), "wrong ints with several worker processes")


@RANGE_STREAM.check(points=1)
def more_workers_than_items(student: Submission, device: torch.device) -> None:
    """8 workers over 3 ints and 3 workers over an empty range: each int once, nothing invented."""
    _expect_loader(student, 10, 13, "wrong ints with more workers (8) than items (3)", batch_size=2, num_workers=8)
    _expect_loader(student, 6, 6, "an empty range with 3 workers must give nothing", batch_size=None, num_workers=3)
    _expect_generated(student, draw_crowded, 60, "wrong ints with more workers than items")


# ==================================================================================================
# Generated cases: the specification's whole domain (issue 32)
# ==================================================================================================
# A DataLoader worker calls iter() once on its own copy of the dataset, with get_worker_info() describing it:
# under fork the copy is the parent's object as it was when the workers started; under spawn (the default on
# macOS and Windows) and forkserver it is the dataset pickled and unpickled. Both are cheap to reproduce in the
# runner's own process, for hundreds of (start, end, num_workers) cases in one request: each simulated worker
# gets its copy (copy.deepcopy, or a pickle round trip for "spawn") and iterates it with torch's worker info set
# as a worker has it. A few real DataLoaders of generated configurations run beside them.
@dataclasses.dataclass(frozen=True)
class Case:
    start: int
    end: int
    workers: int  # 0: iterated in the main process (no worker info)
    start_method: str = "fork"  # how each worker's copy is made: "fork" (a copy) or "spawn" (pickled)
    passes: int = 1  # passes over the same copies (persistent workers keep theirs)

    @property
    def call(self) -> str:
        if not self.workers:
            return f"iter(RangeStream({self.start}, {self.end}))" + (f", {self.passes} passes" if self.passes > 1 else "")
        persistent = ", persistent_workers=True" if self.passes > 1 else ""
        passes = f", {self.passes} passes" if self.passes > 1 else ""
        return (f"DataLoader(RangeStream({self.start}, {self.end}), num_workers={self.workers}, "
                f"multiprocessing_context={self.start_method!r}{persistent}){passes}")


def case_size(case: Case) -> tuple:
    return (max(case.end - case.start, 0), case.workers, case.passes, abs(case.start) > 1000, abs(case.start))


def _draw_start(rng: random.Random) -> int:
    return domain.pick(rng, [0, 1, domain.small_int(rng, -20, 20), rng.randint(-1000, 1000), 2**31 - 3,
                             3_000_000_000 + rng.randint(0, 99), -2**40, 2**62], weights=[3, 1, 6, 2, 0.5, 0.5, 0.5, 0.5])


def _draw_size(rng: random.Random, workers: int) -> int:
    """The number of ints, in every relation to the number of workers: none, fewer, as many, a multiple and one
    more or less, many more."""
    w = max(workers, 1)
    return domain.pick(rng, [0, 1, domain.small_int(rng, 0, w), w, w * rng.randint(1, 4) + rng.choice([-1, 0, 1]),
                             domain.small_int(rng, 0, 40), rng.randint(41, 300)], weights=[1, 1, 3, 1, 3, 4, 1])


def draw_case(rng: random.Random, *, workers: tuple[int, int] = (0, 8), passes: bool = True,
              spawn: float = 0.5) -> Case:
    """A (start, end) pair with num_workers in ``workers`` (0 to 8), copies made as fork or spawn makes them, one
    pass or several over the same copies."""
    count = domain.small_int(rng, *workers)
    start = _draw_start(rng)
    end = max(min(start + _draw_size(rng, count), 2**63 - 1), start)
    method = "spawn" if count and rng.random() < spawn else "fork"
    return Case(start, end, count, method, rng.choice([1, 1, 2, 3]) if passes else 1)


def _pack_items(items: list) -> Any:
    """A pass's items as one int64 tensor when they are all plain ints (cheap to send back), else as they are."""
    if all(type(v) is int and -2**63 <= v < 2**63 for v in items):
        return torch.tensor(items, dtype=torch.long)
    return items


def _spawned(stream: Any) -> Any:
    """``stream`` pickled and unpickled as spawn sends a dataset to a worker (multiprocessing's ForkingPickler),
    except the class itself, which is passed by identity: under spawn a worker imports it from its module, and a
    class defined in a notebook cannot be imported there at all (the notebook's limitation, not the answer's).
    What is the answer's is the instance's state: a lambda, a generator or a lock on it cannot be pickled."""
    import io
    from multiprocessing.reduction import ForkingPickler

    cls = type(stream)

    class Pickler(ForkingPickler):
        def persistent_id(self, obj: Any) -> Any:
            return "the dataset's class" if obj is cls else None

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            return cls

    buffer = io.BytesIO()
    Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump(stream)
    buffer.seek(0)
    return Unpickler(buffer).load()


def _worker_copy(student: RunnerStudent, stream: Any, method: str) -> Any:
    if method == "spawn":
        return student.run(_spawned, stream)
    return student.run(copy.deepcopy, stream)


def simulated_workers(student: RunnerStudent, cases: list[Case]) -> list[dict]:
    """Each case's passes as its workers make them (see above): per pass, each worker's items; or the error."""
    from torch.utils.data._utils import worker as worker_module

    cls = student.get("RangeStream")
    seen: list[dict] = []
    for case in cases:
        try:
            stream = student.run(cls, case.start, case.end)
            if not isinstance(stream, IterableDataset):
                seen.append({"facts": _stream_facts(stream)})
                continue
            limit = 2 * (case.end - case.start) + 10
            def one_pass(dataset: Any = stream, limit: int = limit) -> list:
                return list(itertools.islice(iter(dataset), limit))  # at most limit items: an endless stream stops

            one_pass.__qualname__ = "RangeStream.__iter__"
            if not case.workers:
                runs = [[_pack_items(student.run(one_pass))] for _ in range(case.passes)]
                seen.append({"runs": runs})
                continue
            try:
                copies = [_worker_copy(student, stream, case.start_method) for _ in range(case.workers)]
            except StudentRaised as exc:
                seen.append({"copy_failed": dataclasses.asdict(exc.error)})
                continue
            runs = []
            for _ in range(case.passes):
                shards = []
                for k, worker_copy in enumerate(copies):
                    worker_module._worker_info = worker_module.WorkerInfo(
                        id=k, num_workers=case.workers, seed=1000 + k, dataset=worker_copy)
                    try:
                        shards.append(_pack_items(student.run(one_pass, worker_copy)))
                    finally:
                        worker_module._worker_info = None
                runs.append(shards)
            seen.append({"runs": runs})
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
    return seen


def _stream_facts(stream: Any) -> dict:
    cls = type(stream)
    return {"iterable": isinstance(stream, IterableDataset), "type": cls.__name__,
            "getitem": hasattr(cls, "__getitem__"), "len": hasattr(cls, "__len__")}


def _values_of(items: Any, where: str) -> list[int]:
    if isinstance(items, torch.Tensor):
        return items.tolist()
    return [_as_int(v, where) for v in items]


def _int_or_none(value: Any) -> int | None:
    """An item as the int it stands for (what :func:`_as_int` accepts), or None."""
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool:
            return int(value.item())
        return None
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return None


def _shard_ints(shard: Any) -> list[int] | None:
    if isinstance(shard, torch.Tensor):
        return shard.tolist()
    if not isinstance(shard, list):
        return None
    values = [_int_or_none(v) for v in shard]
    return None if None in values else values


@judge_only
def _case_verdict(case: Case, seen: dict) -> bool:
    """True when the case came out as the specification says: every pass gives each int once (start > end: no int,
    or an error, which the specification does not forbid there)."""
    if case.start > case.end and "raised" in seen:
        return True
    if "runs" not in seen:
        return False
    expected = list(range(case.start, case.end))
    for shards in seen["runs"]:
        values = []
        for shard in shards:
            ints = _shard_ints(shard)
            if ints is None:
                return False
            values.extend(ints)
        if sorted(values) != expected:
            return False
    return True


def _expect_generated(student: Submission, generate: Callable[[random.Random], Case], count: int, what: str) -> None:
    """``count`` generated cases in one request; the smallest failing one is reported, with a likely cause only
    when every failing case gives the same one."""
    cases = domain.draw(generate, count, size=case_size)
    seen = [s for first in range(0, len(cases), 50)  # a request each 50: each stays far within its time limit
            for s in student.scenario(simulated_workers, cases[first:first + 50])]
    verdicts = [_case_verdict(case, s) for case, s in zip(cases, seen)]
    case = domain.smallest(cases, [not v for v in verdicts], case_size)
    if case is None:
        return
    observed = seen[cases.index(case)]
    failing = [(c, s) for c, s, v in zip(cases, seen, verdicts) if not v]
    heading = f"{what} (the smallest of {len(failing)} failing generated cases, out of {len(cases)})"
    if "facts" in observed:
        _expect_iterable(observed["facts"], case.start, case.end)
    if "raised" in observed:
        raise _with_iter_hint(StudentCodeError(StudentError(**observed["raised"])), case.call) from None
    if "copy_failed" in observed:
        error = StudentError(**observed["copy_failed"])
        fail(f"{heading}: {case.call}: each worker gets its own copy of the dataset"
             + (", pickled (spawn, the default start method on macOS and Windows, and forkserver send the dataset "
                "to each worker that way)" if case.start_method == "spawn" else " (copy.deepcopy)")
             + f", and copying RangeStream({case.start}, {case.end}) failed: {error.describe()}\n  keep only plain "
               "data on the dataset (start and end); make iterators and generators inside __iter__")
    causes = set()
    for other, other_seen in failing:
        values = _flat(other, other_seen)
        cause = None if values is None else _coverage_cause(values, other.start, other.end, other.workers)
        if cause and cause.startswith(("nothing came out", "nothing was yielded")):
            cause = None  # a fact about the failing case, not a catalogued mistake that explains it
        causes.add(re.sub(r"-?\d+", "#", cause) if cause else None)
    named = len(causes) == 1 and None not in causes
    for number, shards in enumerate(observed["runs"]):
        values = [v for k, shard in enumerate(shards) for v in _values_of(
            shard, case.call if not case.workers else f"worker {k} of {case.call}")]
        label = case.call if case.passes == 1 else f"pass {number + 1} of {case.call}"
        if sorted(values) != list(range(case.start, case.end)):
            _expect_exactly_once(values, case.start, case.end, label, case.workers, heading, causes=named)
    fail(f"{heading}: {case.call} gave a wrong answer (a grader error if you read this; please report it)")


def _flat(case: Case, seen: dict) -> list[int] | None:
    """The ints of the first wrong pass (all workers together), or None when they are not all ints."""
    if "runs" not in seen:
        return None
    for shards in seen["runs"]:
        ints = [_shard_ints(shard) for shard in shards]
        if None in ints:
            return None
        values = [v for shard in ints for v in shard]
        if sorted(values) != list(range(case.start, case.end)):
            return values
    return None


def draw_direct(rng: random.Random) -> Case:
    """Iterated in the main process: any start (negative, past int32, near int64's end), any size."""
    return draw_case(rng, workers=(0, 0), passes=False)


def draw_empty(rng: random.Random) -> Case:
    """start == end (or one int, or start > end: no int either), in the main process or with 1 to 8 workers."""
    case = draw_case(rng)
    return dataclasses.replace(case, end=case.start + domain.pick(rng, [0, 0, 1, -1, -domain.small_int(rng, 2, 9)]))


def draw_passes(rng: random.Random) -> Case:
    """Two or three passes over the same copies (the stream itself, or persistent workers' copies)."""
    return dataclasses.replace(draw_case(rng), passes=rng.choice([2, 3]))


def draw_one_worker(rng: random.Random) -> Case:
    return draw_case(rng, workers=(1, 1), passes=False)


def draw_several(rng: random.Random) -> Case:
    return draw_case(rng, workers=(2, 8))


def draw_crowded(rng: random.Random) -> Case:
    """More workers than items."""
    case = draw_case(rng, workers=(2, 8))
    return dataclasses.replace(case, end=case.start + rng.randint(0, case.workers - 1))


def draw_loader(rng: random.Random, workers: tuple[int, int]) -> tuple[int, int, dict]:
    """A real DataLoader's configuration: (start, end, options) with a batch size None, 1, or up to past the size."""
    case = draw_case(rng, workers=workers, passes=False)
    size = case.end - case.start
    batch_size = domain.pick(rng, [None, 1, rng.randint(1, max(size, 1) + 3)])
    options: dict = {"batch_size": batch_size, "num_workers": case.workers}
    if case.workers and rng.random() < 0.3:
        options["persistent_workers"] = True
    return case.start, min(case.end, case.start + 60), options


def _expect_generated_loaders(student: Submission, count: int, workers: tuple[int, int], what: str) -> None:
    """``count`` real DataLoaders of generated configurations (each starts its own worker processes)."""
    for start, end, options in domain.draw(lambda rng: draw_loader(rng, workers), count,
                                           size=lambda c: (c[1] - c[0], c[2]["num_workers"])):
        _expect_loader(student, start, end, what, passes=2 if options.get("persistent_workers") else 1, **options)
