"""Chapter 04 (data): checks for pad_collate, range_stream and lr_range_test.

Where the expected values come from:

- ``pad_collate``: plain Python lists built from the inputs (``seq.tolist() + [0] * pad``), before the
  student's code runs, then ``torch.tensor(..., dtype=torch.long)``;
- ``range_stream``: ``range(start, end)`` itself; the student's class is run by real ``DataLoader``
  worker processes (``fork``, so a class defined in a notebook works too);
- ``lr_range_test``: the grader's own scripted run of the specification on a deep copy of the very
  model, optimizer and data the student gets, run first and seeded identically (Dropout draws random
  numbers); ``suggest_lr``: ``numpy.gradient`` on the given lists.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import math
import multiprocessing
import numbers
import os
import random
import re
import signal
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from graders.core import (
    CheckFailed,
    StudentCodeError,
    Submission,
    dtype_name,
    exercise,
    expect_error,
    fail,
    mismatch,
    one_torch_thread,
)


def _short(values: Sequence[Any], limit: int = 8) -> str:
    """A list shown in a failure message, cut short when long."""
    values = list(values)
    shown = ", ".join(_number(v) for v in values[:limit])
    more = f", ... ({len(values)} values)" if len(values) > limit else ""
    return f"[{shown}{more}]"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


# ==================================================================================================
# pad_collate
# ==================================================================================================
PAD_COLLATE = exercise("pad_collate", chapter="04_data", names=["pad_collate"])

Batch = list[tuple[torch.Tensor, int]]


def _sequence_batch(lengths: Sequence[int], device: torch.device, *, zeros: bool = True) -> Batch:
    """(sequence, label) pairs; tokens are 0..9 when ``zeros`` (a token may be 0, even the last one)."""
    low = 0 if zeros else 1
    batch = []
    for length in lengths:
        tokens = torch.randint(low, 10, (length,), dtype=torch.long)
        if zeros and length >= 2:
            tokens[-1] = 0  # a real token 0 at the end: the padding must not be mistaken for it
        batch.append((tokens.to(device), random.randint(0, 4)))
    return batch


def _expected_collate(batch: Batch) -> tuple[list[list[int]], list[int], list[int]]:
    """The specification, on plain Python lists: the sequence, then zeros up to the longest."""
    rows = [seq.tolist() for seq, _ in batch]
    width = max((len(r) for r in rows), default=0)
    return [r + [0] * (width - len(r)) for r in rows], [len(r) for r in rows], [int(label) for _, label in batch]


def _describe_batch(batch: Batch) -> str:
    shown = ", ".join(f"({seq.tolist()}, {label})" for seq, label in batch[:6])
    more = f", ... ({len(batch)} items)" if len(batch) > 6 else ""
    return f"batch = [{shown}{more}]"


def _unpack_collate(got: Any, batch: Batch) -> tuple[Any, Any, Any]:
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        what = f"a {type(got).__name__}" + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "")
        fail(f"pad_collate({_describe_batch(batch)}) returned {what}; it must return the tuple "
             "(padded, lengths, labels)")
    return tuple(got)


def _as_values(value: Any, name: str, batch: Batch) -> torch.Tensor:
    """The student's output as a CPU tensor, to compare values (types and dtypes have their own check)."""
    try:
        return torch.as_tensor(value.detach() if isinstance(value, torch.Tensor) else value).cpu()
    except Exception:  # noqa: BLE001 - anything that is not a tensor or a list of numbers
        fail(f"pad_collate({_describe_batch(batch)}) returned {name} = {value!r}, which is not a tensor of numbers")


def _collate(student: Submission, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    got = _unpack_collate(student.call("pad_collate", batch), batch)
    return tuple(_as_values(v, n, batch) for v, n in zip(got, ("padded", "lengths", "labels")))


def _padding_cause(batch: Batch, got: torch.Tensor) -> str | None:
    rows, lengths, _ = _expected_collate(batch)
    width = len(rows[0]) if rows else 0
    seqs = [seq.tolist() for seq, _ in batch]
    if got.dim() == 2 and tuple(got.shape) == (width, len(batch)) and width != len(batch):
        return ("the result is (max_len, B), time first: rows must be the sequences (pad_sequence needs "
                "batch_first=True)")
    if got.dim() == 1 and len(batch) == 1 and got.tolist() == rows[0]:
        return "the batch dim was dropped (squeeze() on a batch of one?): padded must be (B, max_len) even for B = 1"
    if got.dim() != 2 or got.shape[0] != len(batch):
        return None
    shortest = min(lengths)
    if got.shape[1] == shortest and got.tolist() == [s[:shortest] for s in seqs]:
        return "the sequences were cut to the shortest one; pad every sequence up to the longest instead"
    if got.shape[1] > width and got[:, width:].eq(0).all() and got[:, :width].tolist() == rows:
        return (f"padded is {got.shape[1]} wide, with extra columns of 0s: pad up to the longest sequence of THIS "
                f"batch (here {width}), not to a fixed or larger width")
    if got.shape[1] != width:
        return None
    left = [[0] * (width - len(s)) + s for s in seqs]
    if got.tolist() == left and left != rows:
        return "the padding is on the left (before each sequence); the spec puts the 0s AFTER each sequence"
    pads = {v for i, n in enumerate(lengths) for v in got[i, n:].tolist()}
    if len(pads) == 1 and 0 not in pads:
        (value,) = pads
        same = all(got[i, :n].tolist() == s for i, (n, s) in enumerate(zip(lengths, seqs)))
        if same:
            return f"the padding value is {value:g}; the spec pads with 0"
    return None


@PAD_COLLATE.check(points=1)
def returns_int64_tensors(student: Submission, device: torch.device) -> None:
    """Returns (padded, lengths, labels): int64 tensors of shapes (B, max_len), (B,), (B,)."""
    batch = _sequence_batch([3, 5, 1, 4], device)
    rows, lengths, labels = _expected_collate(batch)
    got = _unpack_collate(student.call("pad_collate", batch), batch)
    shapes = {"padded": (len(rows), len(rows[0])), "lengths": (len(lengths),), "labels": (len(labels),)}
    given = _describe_batch(batch)
    for value, (name, shape) in zip(got, shapes.items()):
        if not isinstance(value, torch.Tensor):
            fail(f"pad_collate({given}) returned {name} as a {type(value).__name__} ({value!r}); it must be a "
                 f"tensor (likely cause: return torch.tensor({name}, dtype=torch.long), not the Python list)")
        if value.dtype != torch.long:
            cause = {
                "padded": "torch.zeros/torch.full/torch.empty make float32 by default; pass dtype=torch.long",
                "lengths": "lengths count tokens: build them with dtype=torch.long",
                "labels": "labels are class indices (what CrossEntropyLoss wants): build them with dtype=torch.long",
            }[name]
            if not value.is_floating_point() and value.dtype != torch.bool:
                cause = (f"{dtype_name(value.dtype)} is an integer type, but not int64: pass "
                         "dtype=torch.long (torch.int64), or convert with .long()")
            fail(f"pad_collate({given}) returned {name} of dtype {dtype_name(value.dtype)}; the "
                 f"spec asks for int64 (likely cause: {cause})")
        if tuple(value.shape) != shape:
            cause = _padding_cause(batch, value.detach().cpu()) if name == "padded" else None
            raise mismatch(f"{name} has the wrong shape", given=given, expected=f"shape {shape}",
                           got=f"shape {tuple(value.shape)}", cause=cause)


def _lengths_cause(batch: Batch, got_list: list, labels_list: list) -> str | None:
    """Name a known mistake in the lengths the student returned."""
    _, lengths, _ = _expected_collate(batch)
    cause = None
    nonzero = [sum(1 for t in seq.tolist() if t != 0) for seq, _ in batch]
    one_short = [n - 1 for n in lengths]
    sorted_lengths = sorted(lengths, reverse=True)
    width = max(lengths, default=0)
    if got_list == nonzero and got_list == one_short:
        cause = ("each length is one short of len(sequence) here (counting the non-zero tokens? the index of the "
                 "last token?); a token can be 0 too: record len(sequence) itself")
    elif got_list == nonzero:
        cause = ("the lengths count the non-zero tokens, but a token can be 0 too; record len(sequence) "
                 "before padding")
    elif got_list == one_short:
        cause = "each length is len(sequence) - 1 (the index of the last token?); record len(sequence) itself"
    elif got_list == [width] * len(lengths) and len(set(lengths)) > 1:
        cause = ("every length is max_len: they were measured after padding (len of a padded row); record "
                 "len(sequence) of each input sequence")
    elif got_list == [int(label) for _, label in batch] and labels_list == lengths:
        cause = "lengths and labels are swapped: return (padded, lengths, labels) in that order"
    elif got_list in (sorted_lengths, sorted(lengths)):
        cause = "the lengths are sorted; keep them in the order of batch"
    return cause


def _expect_collate(student: Submission, batch: Batch, what: str, *, parts=("padded", "lengths", "labels")) -> None:
    rows, lengths, labels = _expected_collate(batch)
    padded_got, lengths_got, labels_got = _collate(student, batch)
    given = _describe_batch(batch)
    if "padded" in parts:
        width = len(rows[0]) if rows else 0
        if tuple(padded_got.shape) != (len(rows), width) or padded_got.tolist() != rows:
            shown = f"{padded_got.tolist()}  " if padded_got.numel() else "an empty tensor of "
            raise mismatch(f"{what}: wrong padded", given=given,
                           expected=f"{rows}  (shape {(len(rows), width)})" if width else f"shape {(len(rows), 0)}",
                           got=f"{shown}(shape {tuple(padded_got.shape)})", cause=_collate_cause(batch, padded_got))
    if "lengths" in parts and lengths_got.tolist() != lengths:
        cause = _lengths_cause(batch, lengths_got.tolist(), labels_got.tolist())
        raise mismatch(f"{what}: wrong lengths", given=given, expected=str(lengths), got=str(lengths_got.tolist()),
                       cause=cause)
    if "labels" in parts and labels_got.tolist() != labels:
        raise mismatch(f"{what}: wrong labels", given=given, expected=str(labels), got=str(labels_got.tolist()))


def _order_cause(batch: Batch, padded_got: torch.Tensor) -> str | None:
    rows, lengths, _ = _expected_collate(batch)
    for reverse, how in ((True, "longest first"), (False, "shortest first")):
        order = sorted(range(len(batch)), key=lambda i: lengths[i], reverse=reverse)
        if padded_got.tolist() == [rows[i] for i in order]:
            return (f"the batch was sorted by length ({how}), as pack_padded_sequence(enforce_sorted=True) "
                    "wants; the spec keeps the order of batch (padded, lengths and labels row i = batch[i])")
    return None


def _collate_cause(batch: Batch, padded_got: torch.Tensor) -> str | None:
    return _padding_cause(batch, padded_got) or _order_cause(batch, padded_got)


@PAD_COLLATE.check(points=1)
def right_padding_with_zero(student: Submission, device: torch.device) -> None:
    """Each row is its sequence followed by 0s up to the longest sequence."""
    for lengths in ([2, 4, 3], [1, 6], [5, 5, 2, 1], [3, 3]):
        _expect_collate(student, _sequence_batch(lengths, device, zeros=False), "padding", parts=("padded",))


@PAD_COLLATE.check(points=1)
def lengths_and_labels(student: Submission, device: torch.device) -> None:
    """lengths are the true sequence lengths (a token may be 0) and labels the given labels."""
    for lengths in ([4, 2, 6], [3, 1, 5, 2]):
        batch = _sequence_batch(lengths, device)
        _expect_collate(student, batch, "lengths and labels", parts=("lengths", "labels"))


@PAD_COLLATE.check(points=1)
def keeps_batch_order(student: Submission, device: torch.device) -> None:
    """Rows, lengths and labels stay in the order of batch (no sorting by length)."""
    for lengths in ([2, 5, 1, 4, 3], [1, 2, 3, 4], [4, 1, 3]):
        batch = _sequence_batch(lengths, device, zeros=False)
        rows, length_list, labels = _expected_collate(batch)
        padded_got, lengths_got, labels_got = _collate(student, batch)
        if padded_got.tolist() != rows or lengths_got.tolist() != length_list or labels_got.tolist() != labels:
            cause = _collate_cause(batch, padded_got)
            what = "the rows are not in the order of batch"
            if padded_got.tolist() == rows and lengths_got.tolist() != length_list and (
                    sorted(lengths_got.tolist()) != sorted(length_list)):
                what = "the lengths are wrong, not only out of order (see lengths_and_labels)"
                cause = _lengths_cause(batch, lengths_got.tolist(), labels_got.tolist())
            elif padded_got.tolist() == rows and lengths_got.tolist() == length_list and (
                    sorted(labels_got.tolist()) != sorted(labels)):
                what = "the labels are wrong, not only out of order (see lengths_and_labels)"
            raise mismatch(what, given=_describe_batch(batch),
                           expected=f"padded {rows}, lengths {length_list}, labels {labels}",
                           got=f"padded {padded_got.tolist()}, lengths {lengths_got.tolist()}, "
                               f"labels {labels_got.tolist()}", cause=cause)


@PAD_COLLATE.check(points=1)
def empty_sequences(student: Submission, device: torch.device) -> None:
    """Length-0 sequences give all-0 rows and length 0; an all-empty batch gives an int64 (B, 0) tensor."""
    empty = torch.zeros(0, dtype=torch.long, device=device)
    for lengths in ([0, 3, 2], [2, 0, 0, 1]):
        _expect_collate(student, _sequence_batch(lengths, device), "a batch with empty sequences")
    normal = _sequence_batch([2, 1], device)
    normal_dtype = _unpack_collate(student.call("pad_collate", normal), normal)[0]
    batch = [(empty.clone(), 3), (empty.clone(), 1), (empty.clone(), 0)]
    _expect_collate(student, batch, "a batch whose sequences are all empty")
    padded = _unpack_collate(student.call("pad_collate", batch), batch)[0]
    if isinstance(normal_dtype, torch.Tensor) and normal_dtype.dtype == torch.long and padded.dtype != torch.long:
        fail(f"pad_collate({_describe_batch(batch)}) returned padded of dtype "
             f"{dtype_name(padded.dtype)} when every sequence is empty (int64 otherwise); the spec "
             "asks for int64 always (likely cause: torch.tensor of a list of empty lists is float32; pass "
             "dtype=torch.long)")


@PAD_COLLATE.check(points=1)
def batch_of_one(student: Submission, device: torch.device) -> None:
    """A batch of one item still gives a 2-D padded (1, len) and 1-D lengths and labels."""
    for lengths in ([4], [1], [0]):
        batch = _sequence_batch(lengths, device)
        _expect_collate(student, batch, "a batch of one")
        got = _unpack_collate(student.call("pad_collate", batch), batch)
        for value, name, shape in zip(got, ("padded", "lengths", "labels"), ((1, lengths[0]), (1,), (1,))):
            if isinstance(value, torch.Tensor) and tuple(value.shape) != shape:
                raise mismatch(f"{name} has the wrong shape for a batch of one", given=_describe_batch(batch),
                               expected=f"shape {shape}", got=f"shape {tuple(value.shape)}",
                               cause="squeeze() dropped the batch dim; keep it, even for B = 1")


@PAD_COLLATE.check(points=1)
def works_in_dataloader(student: Submission, device: torch.device) -> None:
    """DataLoader(dataset, batch_size=4, collate_fn=pad_collate) gives the right batches."""
    items = _sequence_batch([3, 1, 4, 1, 5, 0, 2, 6, 5, 3], device)
    expected = [_expected_collate(items[i:i + 4]) for i in range(0, len(items), 4)]
    loader = DataLoader(copy.deepcopy(items), batch_size=4, shuffle=False, collate_fn=student.get("pad_collate"))
    batches = student.run(lambda: list(loader), _label="pad_collate in DataLoader(..., collate_fn=pad_collate)")
    if len(batches) != len(expected):
        fail(f"DataLoader(10 items, batch_size=4, collate_fn=pad_collate) gave {len(batches)} batches; expected 3")
    for number, (got, (rows, lengths, labels)) in enumerate(zip(batches, expected)):
        chunk = items[number * 4:(number + 1) * 4]
        got = tuple(_as_values(v, n, chunk) for v, n in zip(_unpack_collate(got, chunk), ("padded", "lengths", "labels")))
        if got[0].tolist() != rows or got[1].tolist() != lengths or got[2].tolist() != labels:
            raise mismatch(f"batch {number} of DataLoader(dataset, batch_size=4, collate_fn=pad_collate) is wrong",
                           given=_describe_batch(chunk), expected=f"padded {rows}, lengths {lengths}, labels {labels}",
                           got=f"padded {got[0].tolist()}, lengths {got[1].tolist()}, labels {got[2].tolist()}",
                           cause=_collate_cause(chunk, got[0]) or (
                               _lengths_cause(chunk, got[1].tolist(), got[2].tolist())
                               if got[1].tolist() != lengths else None))


@PAD_COLLATE.check(points=1)
def does_not_modify_inputs(student: Submission, device: torch.device) -> None:
    """The batch list and its sequences are left as they were."""
    batch = _sequence_batch([2, 5, 3, 0], device)
    saved = [(seq.clone(), label) for seq, label in batch]
    items = list(batch)
    student.run(student.get("pad_collate"), batch, _label="pad_collate")
    if len(batch) != len(saved) or any(a is not b for a, b in zip(batch, items)):
        if len(batch) != len(saved):
            how, cause = "items were added or removed", "batch.pop(...), batch.append(...) or del batch[i]"
        elif sorted(map(id, batch)) == sorted(map(id, items)):
            how, cause = "items were reordered", "batch.sort(...) or batch.reverse()"
        else:
            how, cause = "items were replaced by new ones", "batch[i] = (padded_sequence, label)"
        fail(f"pad_collate changed the list it was given ({_describe_batch(saved)}): its {how} (likely cause: "
             f"{cause}; leave the caller's list alone: use sorted(...) or build a new list)")
    for (seq, _), (before, label) in zip(batch, saved):
        if seq.shape != before.shape or not torch.equal(seq, before):
            fail(f"pad_collate changed an input sequence in place: {before.tolist()} became {seq.tolist()} "
                 "(likely cause: resize_(), an in-place cat or a write into the sequence; build the padded "
                 "tensor in new memory and copy the sequences into it)")


# ==================================================================================================
# range_stream
# ==================================================================================================
RANGE_STREAM = exercise("range_stream", chapter="04_data", names=["RangeStream"])

# Workers are started by fork: no pickling, so a class defined in a notebook (__main__) works as well
# as one loaded from a file, whatever Python's default start method is.
_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else None

_ITEM_TYPES = ("yield each value as a Python int (a 0-d integer tensor is fine too: the DataLoader "
               "collates both the same way)")


def _make_stream(student: Submission, start: int, end: int) -> Any:
    cls = student.get("RangeStream")
    stream = student.run(cls, start, end, _label=f"RangeStream({start}, {end})")
    if not isinstance(stream, IterableDataset):
        if hasattr(stream, "__getitem__"):
            cause = ("it is map-style (it has __getitem__), and the exercise asks for a "
                     "torch.utils.data.IterableDataset that yields its items from __iter__")
        else:
            cause = ("subclass torch.utils.data.IterableDataset: a DataLoader treats any other object as a "
                     "map-style dataset and asks it for len() and [index]")
        fail(f"RangeStream({start}, {end}) is a {type(stream).__name__}, not an IterableDataset: {cause}")
    return stream


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_floating_point() and value.dtype != torch.bool:
            return int(value.item())
        kind = "a float tensor" if value.is_floating_point() else f"a tensor of shape {tuple(value.shape)}"
        fail(f"{where} yielded {kind} ({value.tolist()}); {_ITEM_TYPES}, not a 1-element or float tensor")
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    fail(f"{where} yielded {value!r} (a {type(value).__name__}); {_ITEM_TYPES}")


def _at_most(iterable: Any, limit: int) -> list:
    """The first ``limit`` items: a stream that never ends must not fill the memory before the time limit."""
    return list(itertools.islice(iterable, limit))


_NOT_AN_ITERATOR = ("__iter__ must return an ITERATOR: return iter(range(...)) (a list or a range is iterable, "
                    "but not an iterator), or make __iter__ a generator with yield")


def _with_iter_hint(exc: StudentCodeError) -> StudentCodeError:
    """The student's error, with the likely cause when __iter__ returned a list or a range."""
    if "returned non-iterator" in str(exc):
        return StudentCodeError(f"{exc}\n  likely cause: {_NOT_AN_ITERATOR}", exc.exception)
    return exc


def _direct_values(student: Submission, stream: Any, label: str, size: int) -> list[int]:
    try:
        items = student.run(lambda: _at_most(iter(stream), 2 * size + 10), _label=label)
    except StudentCodeError as exc:
        raise _with_iter_hint(exc) from None
    return [_as_int(v, label) for v in items]


def _loader_label(start: int, end: int, num_workers: int, batch_size: int | None) -> str:
    return f"DataLoader(RangeStream({start}, {end}), batch_size={batch_size}, num_workers={num_workers})"


def _stop_workers(iterator: Any) -> None:
    """End a DataLoader iterator's worker processes now (they may be stuck in a student's loop).

    Left to the garbage collector, the DataLoader waits 5 s for each worker, and a worker killed
    meanwhile (by its deadline) makes the DataLoader's SIGCHLD handler raise into whatever runs then,
    printed to stderr. So the workers are unregistered from that handler first, then terminated.
    """
    workers = getattr(iterator, "_workers", None)
    if not workers:
        return
    try:
        from torch.utils.data import _utils

        if getattr(iterator, "_worker_pids_set", False):
            _utils.signal_handling._remove_worker_pids(id(iterator))
            iterator._worker_pids_set = False
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
        for worker in workers:
            worker.join(timeout=1.0)
        iterator._shutdown_workers()
    except Exception:  # noqa: BLE001 - torch internals changed: fall back to the DataLoader's own clean-up
        pass


def _loader_values(student: Submission, stream: Any, loader: DataLoader, label: str, size: int,
                   passes: int = 1) -> list[list[int]]:
    """Iterate ``loader`` (real worker processes when num_workers > 0) ``passes`` times, flattened."""
    limit = (2 * size + 10) * max(1, loader.num_workers)  # batches; each holds at least one item

    def collect() -> list[list]:
        with warnings.catch_warnings():
            # The grader's own notices (more workers than cores; fork in a threaded process) are not the
            # student's: keep them out of the report's notes.
            warnings.filterwarnings("ignore", message=".*worker.*")
            warnings.filterwarnings("ignore", message=".*fork.*")
            runs = []
            for _ in range(passes):
                iterators.append(iter(loader))
                runs.append(_at_most(iterators[-1], limit))
            return runs

    iterators: list[Any] = []
    try:
        runs = student.run(collect, _label=label)
    except StudentCodeError as exc:
        text = str(exc)
        if "DataLoader worker process" in text and "Original Traceback" in text:
            # The worker's traceback comes as text: keep its last line and the student's innermost frame.
            lines = [line for line in text.splitlines() if line.strip()]
            frames = [(i, re.match(r'\s*File "(.+)", line (\d+), in (.+)', line)) for i, line in enumerate(lines)]
            own = [(i, m) for i, m in frames if m and "site-packages" not in m.group(1)
                   and not m.group(1).startswith(sys.prefix) and not m.group(1).startswith(sys.base_prefix)]
            where = ""
            if own:
                i, m = own[-1]
                code = lines[i + 1].strip() if i + 1 < len(lines) - 1 else ""
                where = f"\n    at {os.path.basename(m.group(1))}, line {m.group(2)}, in {m.group(3)}: {code}"
            raise _with_iter_hint(StudentCodeError(f"{label}: a worker process raised {lines[-1].strip()}{where}")) \
                from None
        raise _with_iter_hint(exc) from None
    finally:
        for iterator in iterators:  # here, outside the time limit, which could interrupt the clean-up
            _stop_workers(iterator)
    out = []
    for batches in runs:
        values: list[int] = []
        for batch in batches:
            if loader.batch_size is None:
                values.append(_as_int(batch, label))
                continue
            if not isinstance(batch, torch.Tensor) or batch.dim() != 1:
                shape = f"shape {tuple(batch.shape)}" if isinstance(batch, torch.Tensor) else type(batch).__name__
                fail(f"{label} gave a batch of {shape} ({batch!r}); ints collate into a 1-D tensor, so "
                     f"{_ITEM_TYPES}; a 1-element tensor per item makes batches of shape (batch_size, 1)")
            if batch.is_floating_point():
                fail(f"{label} gave a float batch {batch.tolist()}; {_ITEM_TYPES}, not floats")
            values.extend(int(v) for v in batch.tolist())
        out.append(values)
    return out


def _coverage_cause(values: list[int], start: int, end: int, num_workers: int) -> str | None:
    counts = Counter(values)
    expected = range(start, end)
    extra = sorted(v for v in counts if not start <= v < end)
    missing = [v for v in expected if v not in counts]
    duplicated = [v for v in expected if counts.get(v, 0) > 1]
    if num_workers > 1 and len(expected) and not extra and all(counts.get(v, 0) == num_workers for v in expected):
        return (f"each int came once from every one of the {num_workers} workers: the items are duplicated across "
                "workers. Every worker runs __iter__ on its own copy of the dataset; shard by get_worker_info() "
                "(its id and num_workers) inside __iter__ (it is None in __init__ and in the main process)")
    if duplicated:
        return ("some ints came from more than one worker (duplicated across workers): the workers' shards "
                "overlap; shard by get_worker_info() so that each int belongs to exactly one worker (use both "
                "info.id and info.num_workers)")
    if extra and all(v < start for v in extra):
        return f"ints below start ({extra[:5]}): the shards must begin at start, e.g. range(start + info.id, end, info.num_workers)"
    if extra and min(extra) >= end:
        if extra == [end]:
            return "end itself was yielded: end is exclusive (like range(start, end))"
        return (f"ints at or past end ({extra[:5]}): end is exclusive; the stream must stop there, and no "
                "worker's shard may reach past it (clamp the last chunk to end)")
    if extra:
        return None
    if missing and not values and num_workers > len(expected):
        return ("nothing came out of the workers: with more workers than items, chunks of (end - start) // "
                "num_workers are empty and drop the remainder; shard with range(start + info.id, end, "
                "info.num_workers), which gives the extra workers nothing and the others one int each")
    if missing and not values:
        where = "in worker processes" if num_workers else "at all"
        return (f"nothing was yielded {where}" + (": get_worker_info() is not None in a worker, and each worker "
                                                   "must yield its own share" if num_workers else ""))
    if missing and num_workers and missing == list(range(end - len(missing), end)):
        return (f"the last {len(missing)} int(s) are missing: contiguous chunks of (end - start) // num_workers "
                "drop the remainder (and give nothing at all when there are more workers than items); give the "
                "leftover ints to some worker, or shard with range(start + info.id, end, info.num_workers)")
    if missing and num_workers > 1 and sorted(values) == list(range(start, end, num_workers)):
        return ("only worker 0's share came out: the other workers yielded nothing (look at the condition on "
                "info.id); together the shards of workers 0 .. num_workers - 1 must cover the whole range")
    if missing and num_workers:
        return ("some workers' shares are missing: together the shards of workers 0 .. num_workers - 1 must cover "
                "the whole range")
    return None


def _expect_exactly_once(values: list[int], start: int, end: int, label: str, num_workers: int, what: str) -> None:
    if sorted(values) == list(range(start, end)):
        return
    counts = Counter(values)
    missing = [v for v in range(start, end) if v not in counts]
    duplicated = sorted(v for v, c in counts.items() if c > 1)
    extra = sorted(v for v in counts if not start <= v < end)
    problems = []
    if missing:
        problems.append(f"missing {missing[:10]}")
    if duplicated:
        problems.append(f"more than once: {duplicated[:10]}")
    if extra:
        problems.append(f"outside the range: {extra[:10]}")
    raise mismatch(what, given=label, expected=f"each of {start}, ..., {end - 1} exactly once" if end > start else
                   "nothing (start == end is an empty range)",
                   got=f"{_short(sorted(values), 12)} ({'; '.join(problems)})",
                   cause=_coverage_cause(values, start, end, num_workers))


def _worker_deadline(seconds: float) -> Callable[[int], None]:
    """A worker_init_fn that ends the worker process after ``seconds``.

    The time limit on student code (SIGALRM) stops the main process only. A worker stuck in a loop
    would then hold up the DataLoader's shutdown (it waits 5 s for each worker before killing it), so
    each worker gets its own alarm, with the default action (end the process), a little after the
    main process's limit.
    """

    def start(worker_id: int) -> None:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    return start


def _loader(student: Submission, stream: Any, num_workers: int, batch_size: int | None) -> DataLoader:
    deadline = None
    if num_workers and student.timeout and _START_METHOD == "fork" and hasattr(signal, "setitimer"):
        deadline = _worker_deadline(student.timeout + 1.0)
    return DataLoader(stream, batch_size=batch_size, num_workers=num_workers, worker_init_fn=deadline,
                      multiprocessing_context=_START_METHOD if num_workers else None)


def _expect_loader(student: Submission, start: int, end: int, num_workers: int, batch_size: int | None,
                   what: str, passes: int = 1) -> None:
    stream = _make_stream(student, start, end)
    label = _loader_label(start, end, num_workers, batch_size)
    loader = _loader(student, stream, num_workers, batch_size)
    for number, values in enumerate(_loader_values(student, stream, loader, label, end - start, passes)):
        shown = label if passes == 1 else f"pass {number + 1} over the same {label}"
        _expect_exactly_once(values, start, end, shown, num_workers, what)


@RANGE_STREAM.check(points=1)
def is_an_iterable_dataset(student: Submission, device: torch.device) -> None:
    """RangeStream(start, end) is a torch.utils.data.IterableDataset."""
    _make_stream(student, 0, 4)


@RANGE_STREAM.check(points=1)
def yields_the_range(student: Submission, device: torch.device) -> None:
    """Iterated in the main process it yields the ints start, ..., end - 1, each once."""
    for start, end in [(0, 5), (3, 9), (-4, 2), (7, 8)]:
        stream = _make_stream(student, start, end)
        label = f"iter(RangeStream({start}, {end}))"
        _expect_exactly_once(_direct_values(student, stream, label, end - start), start, end, label, 0,
                             "wrong ints from the stream")


@RANGE_STREAM.check(points=1)
def empty_range(student: Submission, device: torch.device) -> None:
    """start == end yields nothing, directly and through a DataLoader."""
    for start in (5, 0, -3):
        stream = _make_stream(student, start, start)
        values = _direct_values(student, stream, f"iter(RangeStream({start}, {start}))", 0)
        _expect_exactly_once(values, start, start, f"iter(RangeStream({start}, {start}))", 0, "an empty range")
    _expect_loader(student, 2, 2, 0, 2, "an empty range through a DataLoader")


@RANGE_STREAM.check(points=1)
def fresh_pass_each_time(student: Submission, device: torch.device) -> None:
    """Every pass over the same stream (or the same DataLoader) yields the whole range again."""
    stream = _make_stream(student, 1, 7)
    for number in range(3):
        label = f"pass {number + 1} of iter(...) over the same RangeStream(1, 7)"
        values = _direct_values(student, stream, label, 6)
        if sorted(values) != list(range(1, 7)) and number > 0:
            fail(f"{label} gave {values}; expected [1, 2, 3, 4, 5, 6] again (likely cause: the stream is used up "
                 "after one pass: __iter__ must return a new iterator each time, so do not create the "
                 "iterator or generator in __init__, and reset any counter in __iter__)")
        _expect_exactly_once(values, 1, 7, label, 0, "wrong ints from the stream")
    _expect_loader(student, 1, 7, 0, 2, "every pass over a DataLoader must give the whole range", passes=2)


@RANGE_STREAM.check(points=1)
def single_process_loader(student: Submission, device: torch.device) -> None:
    """DataLoader(num_workers=0) with batch sizes None, 1 and 4 gives each int once."""
    for batch_size in (None, 1, 4):
        _expect_loader(student, 2, 12, 0, batch_size, "wrong ints through a DataLoader with num_workers=0")


@RANGE_STREAM.check(points=1)
def one_worker(student: Submission, device: torch.device) -> None:
    """One worker process (num_workers=1), batch sizes None and 3: each int once."""
    for batch_size in (None, 3):
        _expect_loader(student, 4, 11, 1, batch_size, "wrong ints with one worker process")


@RANGE_STREAM.check(points=1)
def several_workers(student: Submission, device: torch.device) -> None:
    """Several worker processes (3 and 4), batch sizes None and 2: each int once, nothing duplicated."""
    for start, end, num_workers, batch_size in [(0, 10, 3, None), (5, 15, 4, 2), (-3, 8, 3, 2)]:
        _expect_loader(student, start, end, num_workers, batch_size, f"wrong ints with {num_workers} worker processes")


@RANGE_STREAM.check(points=1)
def more_workers_than_items(student: Submission, device: torch.device) -> None:
    """8 workers over 3 ints, and 3 workers over an empty range: each int once, nothing invented."""
    _expect_loader(student, 10, 13, 8, 2, "wrong ints with more workers (8) than items (3)")
    _expect_loader(student, 6, 6, 3, None, "an empty range with 3 workers must give nothing")


# ==================================================================================================
# lr_range_test
# ==================================================================================================
LR_RANGE_TEST = exercise("lr_range_test", chapter="04_data", names=["lr_range_test", "suggest_lr"])



def _single_threaded(check: Callable[[Submission, torch.device], None]) -> Callable[[Submission, torch.device], None]:
    """Run a check with one intra-op thread (the grader's run and the student's alike).

    The models here are tiny: a thread pool's synchronisation costs more than it saves, and on a busy
    machine (a notebook server, a grading host) much more: 10x slower has been measured on 2 cores.
    """

    @functools.wraps(check)
    def run(student: Submission, device: torch.device) -> None:
        with one_torch_thread():
            check(student, device)

    return run


_RUN_SEED = 20240404  # torch.manual_seed right before the grader's scripted run and the student's call
_LOSS_RTOL, _LOSS_ATOL = 1e-5, 1e-7
_LR_RTOL = 1e-12


@dataclasses.dataclass
class _Run:
    """What the scripted run recorded (``raw`` are the unsmoothed batch losses)."""

    lrs: list[float]
    losses: list[float]
    raw: list[float]


def _spec_lr(i: int, start_lr: float, end_lr: float, num_iter: int) -> float:
    return start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))


def _ema(raw: Sequence[float], smooth: float) -> list[float]:
    out: list[float] = []
    for loss in raw:
        out.append(loss if not out else smooth * loss + (1 - smooth) * out[-1])
    return out


def _bias_corrected(raw: Sequence[float], smooth: float) -> list[float]:
    average, out = 0.0, []
    for i, loss in enumerate(raw):
        average = (1 - smooth) * average + smooth * loss
        out.append(average / (1 - (1 - smooth) ** (i + 1)))
    return out


def _ema_from_zero(raw: Sequence[float], smooth: float) -> list[float]:
    out: list[float] = []
    for loss in raw:
        out.append(smooth * loss + (1 - smooth) * (out[-1] if out else 0.0))
    return out


def _swapped(raw: Sequence[float], smooth: float) -> list[float]:
    out: list[float] = []
    for loss in raw:
        out.append(loss if not out else (1 - smooth) * loss + smooth * out[-1])
    return out


def _first_over(values: Sequence[float], threshold: float, reference: str = "min") -> int | None:
    """The first i where values[i] > threshold * (min(values[:i+1]) or values[0]), else None."""
    lowest = math.inf
    for i, v in enumerate(values):
        lowest = min(lowest, v)
        if v > threshold * (lowest if reference == "min" else values[0]):
            return i
    return None


def _scripted(model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn, loader, *, start_lr: float,
              end_lr: float, num_iter: int, smooth: float, diverge_threshold: float, stop: bool = True,
              zero_grad: bool = True, train: bool = True, same_batch: bool = False,
              loss_after_step: bool = False) -> _Run:
    """The specification as a script; the keyword flags give known wrong variants for diagnoses."""
    if train:
        model.train()
    raw: list[float] = []
    lrs: list[float] = []
    batches = iter(loader)
    for i in range(num_iter):
        lr = _spec_lr(i, start_lr, end_lr, num_iter)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if same_batch:
            inputs, targets = next(iter(loader))
        else:
            batch = next(batches, None)
            if batch is None:
                batches = iter(loader)
                batch = next(batches)
            inputs, targets = batch
        if zero_grad:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if loss_after_step:
            loss = loss_fn(model(inputs), targets)
        raw.append(float(loss.detach().cpu()))
        lrs.append(lr)
        if stop and _first_over(_ema(raw, smooth), diverge_threshold) == i:
            break
    return _Run(lrs, _ema(raw, smooth), raw)


def _raw_logspace(start: float, end: float, num: int, n: int) -> list[float]:
    """np.logspace(start_lr, end_lr, num_iter): the lrs taken as exponents of 10 (a known mistake)."""
    if num < 1:
        return []
    with np.errstate(all="ignore"):
        return [float(v) for v in np.logspace(start, end, num)[:n]]


def _close(got: Sequence[float], expected: Sequence[float], rtol: float = _LOSS_RTOL, atol: float = _LOSS_ATOL) -> bool:
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        if math.isnan(e) and math.isnan(g):
            continue
        if not math.isclose(g, e, rel_tol=rtol, abs_tol=atol):
            return False
    return True


def _model_and_optimizer(device: torch.device, kind: str) -> tuple[nn.Module, torch.optim.Optimizer]:
    """An MLP with BatchNorm and Dropout, and an optimizer with two param groups of different lrs."""
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 3))
    model = model.to(device)
    groups = [{"params": list(model[0].parameters()), "lr": 0.05},
              {"params": [*model[1].parameters(), *model[4].parameters()], "lr": 0.02}]
    if kind == "adam":
        optimizer: torch.optim.Optimizer = torch.optim.Adam(groups, lr=0.01)
    else:
        optimizer = torch.optim.SGD(groups, lr=0.01, momentum=0.9)
    return model, optimizer


def _data_loader(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> DataLoader:
    # Its own generator: a DataLoader draws a seed each time it is iterated, and drawing it from the
    # global generator would shift Dropout's random numbers by how often a solution restarts the loader.
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False,
                      generator=torch.Generator().manual_seed(0))


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: t.detach().clone() for name, t in [*model.named_parameters(), *model.named_buffers()]}


class _Trial:
    """One lr_range_test scenario: the student's objects, and what the grader's scripted run expects.

    Everything expected (the run, the state the run leaves before any restore) is computed in the
    constructor, on deep copies, before the student's code is called.
    """

    def __init__(self, device: torch.device, *, kind: str = "sgd", batches: int = 16, batch_size: int = 8,
                 mode: str = "train", learnable: bool = False, **params: Any) -> None:
        self.params = params
        self.kind, self.mode, self.learnable = kind, mode, learnable
        self.model, self.optimizer = _model_and_optimizer(device, kind)
        self.loss_fn = nn.CrossEntropyLoss()
        samples = batches * batch_size
        self.x = torch.randn(samples, 6).to(device)
        if learnable:  # labels the MLP can learn, so the loss first falls well below its start, then diverges
            self.y = (self.x.cpu() @ torch.randn(6, 3)).argmax(1).to(device)
        else:
            self.y = torch.randint(0, 3, (samples,)).to(device)
        self.batch_size = batch_size
        # Two real steps first: the optimizer has state (momentum buffers, Adam's moments and step) and
        # BatchNorm's running statistics have moved, so a restore that resets them is seen.
        for first in (0, batch_size):
            self.optimizer.zero_grad()
            self.loss_fn(self.model(self.x[first:first + batch_size]),
                         self.y[first:first + batch_size]).backward()
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.model.train()
        if mode == "eval":
            self.model.eval()
        elif mode == "mixed":  # frozen BatchNorm inside a model in training mode, as in fine-tuning
            self.model[1].eval()

        self.pristine = copy.deepcopy((self.model, self.optimizer))
        self.run_seed = _RUN_SEED
        self._expect_run()
        self.reseeded_during_run = False

        self.before = _snapshot(self.model)
        self.before_modes = {name: m.training for name, m in self.model.named_modules()}
        self.before_optimizer = copy.deepcopy(self.optimizer.state_dict())
        self.loader = self._loader()
        self.applied: list[list[float]] = []  # each group's lr at each optimizer.step()
        self.forward_modes: list[tuple[str, bool]] = []  # (module, its .training) at each module's forward

    def _expect_run(self) -> None:
        """The scripted run (seeded with ``run_seed``) on copies of the pristine model and optimizer."""
        model, optimizer = copy.deepcopy(self.pristine)
        torch.manual_seed(self.run_seed)
        self.expected = _scripted(model, optimizer, nn.CrossEntropyLoss(), self._loader(), **self.full_params)
        self.end_state = _snapshot(model)  # what the run leaves, before any restore
        self.end_optimizer_state = copy.deepcopy(optimizer.state_dict())

    @property
    def full_params(self) -> dict[str, Any]:
        defaults = dict(start_lr=1e-7, end_lr=10.0, num_iter=100, smooth=0.05, diverge_threshold=5.0)
        return {**defaults, **self.params}

    def _loader(self) -> DataLoader:
        return _data_loader(self.x.clone(), self.y.clone(), self.batch_size)

    def variant(self, **flags: Any) -> _Run:
        """A scripted run with a known mistake, from the same starting point (only computed on failure)."""
        model, optimizer = copy.deepcopy(self.pristine)
        torch.manual_seed(self.run_seed)
        return _scripted(model, optimizer, nn.CrossEntropyLoss(), self._loader(), **self.full_params, **flags)

    def given(self) -> str:
        shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        opt = "Adam" if self.kind == "adam" else "SGD(momentum=0.9)"
        mode = {"train": "in training mode", "eval": "in eval mode",
                "mixed": "in training mode with its BatchNorm in eval mode"}[self.mode]
        loader = f"a loader of {len(self.x) // self.batch_size} batches"
        if self.learnable:
            loader += " (labels a function of the inputs, so the loss can fall before it diverges)"
        return (f"lr_range_test(model, optimizer, loss_fn, loader{', ' if shown else ''}{shown}); an MLP with "
                f"BatchNorm and Dropout {mode}, {opt} with 2 param groups, CrossEntropyLoss, {loader}")

    def call(self, student: Submission) -> tuple[list[float], list[float]]:
        # Global hooks (removed right after the call), so that they also see a solution that sweeps deep
        # copies of the model and optimizer: an optimizer's own hooks are not copied by deepcopy.
        names = {id(m): name or "the model" for name, m in self.model.named_modules()}

        def record_lrs(optimizer, args, kwargs):
            self.applied.append([group["lr"] for group in optimizer.param_groups])

        def record_modes(module, args):
            if not isinstance(module, nn.modules.loss._Loss):
                self.forward_modes.append((names.get(id(module), type(module).__name__), module.training))

        hooks = [register_optimizer_step_pre_hook(record_lrs),
                 register_module_forward_pre_hook(record_modes)]
        # A solution that seeds the generator itself (torch.manual_seed(0) "for reproducibility") draws other
        # Dropout masks than the grader's run: its seed is noted, and the expected run is made with it.
        seeds: list[tuple[int, int]] = []
        real_seed = torch.manual_seed

        def spy_seed(seed):
            seeds.append((int(seed), len(self.forward_modes)))
            return real_seed(seed)

        torch.manual_seed = torch.random.manual_seed = spy_seed
        real_seed(_RUN_SEED)
        try:
            got = student.run(student.get("lr_range_test"), self.model, self.optimizer, self.loss_fn, self.loader,
                              **self.params, _label="lr_range_test")
        except StudentCodeError as exc:
            if isinstance(exc.exception, StopIteration) or "StopIteration" in str(exc):
                raise CheckFailed(
                    f"{exc}\n  input: {self.given()}\n  likely cause: the loader ran out and was not restarted; "
                    "when next() raises StopIteration, restart it with a new iter(loader)") from None
            raise
        finally:
            torch.manual_seed = torch.random.manual_seed = real_seed
            for hook in hooks:
                hook.remove()
        if seeds:
            before_any_forward = [seed for seed, forwards in seeds if forwards == 0]
            self.reseeded_during_run = any(forwards > 0 for _, forwards in seeds)
            if before_any_forward and before_any_forward[-1] != self.run_seed:
                self.run_seed = before_any_forward[-1]
                self._expect_run()
        return self._parse(got)

    def _parse(self, got: Any) -> tuple[list[float], list[float]]:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            fail(f"lr_range_test returned {type(got).__name__} {got!r:.80}; it must return (lrs, losses), a "
                 "tuple of two lists")
        out = []
        for name, values in zip(("lrs", "losses"), got):
            if isinstance(values, (torch.Tensor, np.ndarray)) or not isinstance(values, (list, tuple)):
                fail(f"lr_range_test returned {name} as a {type(values).__name__}; it must be a list of floats")
            for v in values:
                if isinstance(v, torch.Tensor):
                    fail(f"lr_range_test returned {name} holding tensors ({v!r:.60}); record plain floats "
                         "(loss.item()): a tensor keeps its device memory, and a loss tensor keeps the graph of "
                         "its iteration alive")
                if not isinstance(v, numbers.Real) or isinstance(v, bool):
                    fail(f"lr_range_test returned {name} holding {v!r} (a {type(v).__name__}); it must be a list "
                         "of floats")
            out.append([float(v) for v in values])
        return out[0], out[1]

    # -- diagnoses ---------------------------------------------------------------------------------
    def applied_cause(self, lrs: list[float]) -> str | None:
        """Name the mistake when the param groups' lrs at optimizer.step() are not the recorded ones."""
        original = _groups_lrs(self.before_optimizer)
        steps = list(zip(self.applied, lrs))
        if not steps:
            return None

        def same(a: Sequence[float], b: Sequence[float]) -> bool:
            return len(a) == len(b) and all(math.isclose(u, v, rel_tol=1e-9) for u, v in zip(a, b))

        if all(same(at_step, original) for at_step, _ in steps):
            return ("the param groups' lrs never changed: step() reads group['lr'] of each of optimizer.param_groups; "
                    "set it there (optimizer.defaults['lr'] or a local variable is not read by step())")
        if same(steps[0][0], original):
            return (f"the first optimizer.step() ran with the optimizer's own lrs {_short(original)}: the lr is set "
                    "after the step (for the next iteration?); set the lr of iteration i on the param groups BEFORE "
                    "that iteration's optimizer.step()")
        if len(steps) >= 2 and all(same(at_step, [lrs[i + 1]] * len(at_step))
                                   for i, (at_step, _) in enumerate(steps[:-1])):
            return ("each optimizer.step() ran with the NEXT iteration's lr: record the lr that the step used, "
                    "lr_i = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))")
        for at_step, lr in steps:
            hit = [math.isclose(v, lr, rel_tol=1e-9) for v in at_step]
            if any(hit) and not all(hit):
                return ("the lr was not set on every param group (optimizer.param_groups[0] only?); loop: for group "
                        "in optimizer.param_groups: group['lr'] = lr")
        return None

    def lr_cause(self, lrs: list[float]) -> str | None:
        p = self.full_params
        n, start, end = len(lrs), p["start_lr"], p["end_lr"]
        num = p["num_iter"]
        known = [
            ([start + (end - start) * i / (num - 1) for i in range(n)],
             "the sweep is linear (np.linspace-like); the spec grows the lr geometrically: "
             "start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))"),
            ([start * (end / start) ** (i / num) for i in range(n)],
             "the exponent is i / num_iter; it must be i / (num_iter - 1), so that the last iteration reaches end_lr"),
            ([float(v) for v in np.logspace(math.log10(start), math.log10(end), num)[:n]] if num > 0 else [],
             None),
            (_raw_logspace(start, end, num, n),
             "np.logspace takes exponents of 10, not the learning rates themselves: np.logspace(math.log10(start_lr), "
             "math.log10(end_lr), num_iter), or np.geomspace(start_lr, end_lr, num_iter)"),
            ([end * (start / end) ** (i / (num - 1)) for i in range(n)],
             "the sweep runs backwards, from end_lr down to start_lr"),
            ([start * (end / start) ** ((i + 1) / (num - 1)) for i in range(n)],
             "off by one: iteration i (from 0) uses the exponent i / (num_iter - 1), so the first lr is start_lr"),
        ]
        for wrong, cause in known:
            if cause and len(wrong) == n and _close(lrs, wrong, rtol=1e-9, atol=0.0):
                return cause
        return None

    def loss_cause(self, lrs: list[float], losses: list[float]) -> str | None:
        """Name the mistake when the lrs are right and the losses match a known wrong computation."""
        expected, smooth = self.expected, self.full_params["smooth"]
        n = min(len(losses), len(expected.raw))
        if n == 0 or not _close(lrs[:n], expected.lrs[:n], rtol=1e-9, atol=0.0):
            return None
        got = losses[:n]
        raw = expected.raw[:n]
        if _close(got, raw):
            return "the losses are the raw batch losses, not smoothed: s_i = smooth * loss_i + (1 - smooth) * s_(i-1)"
        if _close(got, _bias_corrected(raw, smooth)):
            return ("the smoothed loss is bias-corrected (divided by 1 - (1 - smooth) ** (i + 1), as fastai does); "
                    "the spec's recursion starts at s_0 = loss_0 and has no correction")
        if _close(got, _swapped(raw, smooth)):
            return "smooth and 1 - smooth are swapped: s_i = smooth * loss_i + (1 - smooth) * s_(i-1)"
        if _close(got, _ema_from_zero(raw, smooth)):
            return ("the smoothed loss starts from 0 (s_0 = smooth * loss_0); the spec starts the recursion at "
                    "s_0 = loss_0")
        if self.reseeded_during_run:
            return ("your code calls torch.manual_seed during the sweep: that changes the random numbers Dropout "
                    "draws, so the losses are not those of the run the spec describes; do not reseed in lr_range_test")
        if any(not training for _, training in self.forward_modes):
            return ("the model was not in training mode during the sweep: call model.train() first (Dropout and "
                    "BatchNorm behave differently in eval mode)")
        applied = self.applied_cause(lrs)
        if applied:
            return applied
        for flags, cause in (
            ({"zero_grad": False}, "the gradients are never zeroed, so they accumulate over the iterations: call "
                                   "optimizer.zero_grad() before each backward"),
            ({"same_batch": True}, "every iteration trains on the first batch (next(iter(loader)) makes a new "
                                   "iterator each time); keep one iterator and call next() on it"),
            ({"train": False}, "the model was not put in training mode: call model.train() first"),
            ({"loss_after_step": True}, "the recorded loss was computed again AFTER optimizer.step(); the spec "
                                        "records loss_i, the loss of the forward pass that the step trained on "
                                        "(loss.item() of that same loss)"),
        ):
            if flags.get("train") is False and self.mode == "train":
                continue
            wrong = self.variant(stop=False, **flags)
            if _close(got, wrong.losses[:n], rtol=1e-4, atol=1e-6):
                return cause
        return None

    def expect_run(self, lrs: list[float], losses: list[float], what: str) -> None:
        """The recorded lrs and smoothed losses are those of the scripted run."""
        expected = self.expected
        if len(lrs) != len(losses):
            fail(f"{what}\n  input: {self.given()}\n  lrs has {len(lrs)} values but losses has {len(losses)}; "
                 "record one lr and one smoothed loss per iteration")
        n = min(len(lrs), len(expected.lrs))
        if not n or not _close(lrs[:n], expected.lrs[:n], rtol=1e-9, atol=0.0):
            raise mismatch(f"{what}: wrong learning rates", given=self.given(), expected=_short(expected.lrs),
                           got=_short(lrs), cause=self.lr_cause(lrs))
        # Compare the losses the two runs share first: a run that trains differently also stops elsewhere,
        # and its first wrong loss names the mistake better than where it stopped.
        if not _close(losses[:n], expected.losses[:n]):
            raise mismatch(f"{what}: wrong smoothed losses", given=self.given(), expected=_short(expected.losses),
                           got=_short(losses), cause=self.loss_cause(lrs, losses))
        if len(lrs) != len(expected.lrs):
            raise mismatch(f"{what}: the run stopped at the wrong iteration", given=self.given(),
                           expected=f"{len(expected.lrs)} iterations", got=f"{len(lrs)} iterations (the first "
                           f"{n} lrs and smoothed losses are right)", cause=self.stop_cause(lrs, losses))

    def stop_cause(self, lrs: list[float], losses: list[float]) -> str | None:
        expected = self.expected
        threshold = self.full_params["diverge_threshold"]
        stopped = len(expected.lrs) - 1
        if len(lrs) == stopped and _close(losses, expected.losses[:stopped]):
            return ("the run stopped before recording the iteration whose smoothed loss crossed the threshold; "
                    "record iteration i first, then stop")
        if len(lrs) == self.full_params["num_iter"] and len(lrs) > len(expected.lrs):
            return ("the run never stopped: after recording s_i, stop when s_i > diverge_threshold * "
                    "min(s_0, ..., s_i)")
        full = self.variant(stop=False)
        raw_stop = _first_over(full.raw, threshold)
        first_stop = _first_over(full.losses, threshold, reference="first")
        if raw_stop is not None and len(lrs) == raw_stop + 1 and raw_stop != stopped:
            return ("the divergence test used the raw batch loss; the spec compares the SMOOTHED loss s_i with "
                    "diverge_threshold * min(s_0, ..., s_i)")
        if first_stop is not None and len(lrs) == first_stop + 1 and first_stop != stopped:
            return ("the divergence test compared s_i with the first loss s_0; the spec compares it with the "
                    "smallest smoothed loss so far, min(s_0, ..., s_i)")
        return None

    def expect_restored_model(self, what: str) -> None:
        now = _snapshot(self.model)
        params = {name for name, _ in self.model.named_parameters()}
        wrong = [name for name, t in self.before.items() if not torch.equal(now[name], t)]
        if not wrong:
            return
        wrong_params = [n for n in wrong if n in params]
        wrong_buffers = [n for n in wrong if n not in params]
        like_end = all(now[n].shape == self.end_state[n].shape and torch.allclose(
            now[n].float(), self.end_state[n].float(), rtol=1e-4, atol=1e-6) for n in wrong)
        if not wrong_params:
            cause = ("the parameters were restored but not the buffers (BatchNorm's running_mean, running_var and "
                     "num_batches_tracked): snapshot and restore model.state_dict(), which holds both")
        elif like_end:
            cause = ("the model was left as the run ended, not restored. Either the snapshot taken before the run "
                     "shares storage with the live model (model.state_dict() returns references to the very tensors "
                     "training updates in place: take copy.deepcopy(model.state_dict()) or clone each tensor), or "
                     "the saved copy was only bound to a name (model = saved_model rebinds your local variable; the "
                     "caller's model is unchanged): copy the values back with model.load_state_dict(saved_state)")
        else:
            cause = None
        name = wrong[0]
        raise mismatch(f"{what}: the model is not exactly as before the call ({len(wrong_params)} parameter(s), "
                       f"{len(wrong_buffers)} buffer(s) differ, e.g. {name})", given=self.given(),
                       expected=f"{name} = {_short(self.before[name].flatten().tolist(), 4)}",
                       got=_short(now[name].flatten().tolist(), 4), cause=cause)


def _groups_lrs(state: dict) -> list[float]:
    return [group["lr"] for group in state["param_groups"]]


def _state_difference(before: dict, after: dict) -> str | None:
    """The first difference between two optimizer state dicts, in words, or None."""
    if set(before["state"]) != set(after["state"]):
        return f"state is kept for params {sorted(after['state'])}, before for {sorted(before['state'])}"
    for index, entries in before["state"].items():
        other = after["state"][index]
        if set(entries) != set(other):
            return f"param {index}'s state has keys {sorted(other)}, before {sorted(entries)}"
        for key, value in entries.items():
            now = other[key]
            if isinstance(value, torch.Tensor):
                if not isinstance(now, torch.Tensor) or now.shape != value.shape or not torch.equal(now, value.to(now.device)):
                    return f"param {index}'s {key} changed"
            elif now != value:
                return f"param {index}'s {key} is {now!r}, was {value!r}"
    if len(before["param_groups"]) != len(after["param_groups"]):
        return "the number of param groups changed"
    for number, (group, other) in enumerate(zip(before["param_groups"], after["param_groups"])):
        for key, value in group.items():
            if other.get(key) != value:
                return f"param group {number}'s {key} is {other.get(key)!r}, was {value!r}"
    return None


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def validates_arguments(student: Submission, device: torch.device) -> None:
    """ValueError when start_lr <= 0, end_lr <= start_lr or num_iter < 2."""
    cases = [
        (dict(start_lr=0.0, end_lr=1.0, num_iter=5), "start_lr <= 0"),
        (dict(start_lr=-1e-3, end_lr=1.0, num_iter=5), "start_lr <= 0"),
        (dict(start_lr=1e-3, end_lr=1e-3, num_iter=5), "end_lr <= start_lr"),
        (dict(start_lr=1e-2, end_lr=1e-3, num_iter=5), "end_lr <= start_lr"),
        (dict(start_lr=1e-4, end_lr=1e-2, num_iter=1), "num_iter < 2"),
        (dict(start_lr=1e-4, end_lr=1e-2, num_iter=0), "num_iter < 2"),
    ]
    function = student.get("lr_range_test")
    for kwargs, why in cases:
        model, optimizer = _model_and_optimizer(device, "sgd")
        x, y = torch.randn(16, 6).to(device), torch.randint(0, 3, (16,)).to(device)
        loader = _data_loader(x, y, 8)

        def call(model=model, optimizer=optimizer, loader=loader, kwargs=kwargs):
            return function(model, optimizer, nn.CrossEntropyLoss(), loader, **kwargs)

        call.__qualname__ = "lr_range_test"
        shown = ", ".join(f"{k}={v:g}" for k, v in kwargs.items())
        expect_error(student, ValueError, call, (), call=f"lr_range_test(model, optimizer, loss_fn, loader, {shown})",
                     why=why)


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def geometric_sweep(student: Submission, device: torch.device) -> None:
    """lr_i = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)), set on every param group."""
    trials = [
        dict(start_lr=1e-4, end_lr=1e-1, num_iter=12),
        dict(start_lr=1e-3, end_lr=1e-2, num_iter=2),
        dict(),  # every default: 1e-7 to 10 in 100 iterations (it may diverge and stop early)
    ]
    for params in trials:
        trial = _Trial(device, batches=110, batch_size=4, **params)
        lrs, losses = trial.call(student)
        expected = trial.expected.lrs
        n = min(len(lrs), len(expected))
        if not _close(lrs[:n], expected[:n], rtol=1e-9, atol=0.0) or not lrs:
            raise mismatch("wrong learning rates", given=trial.given(),
                           expected=_short(expected) + "  (start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)))",
                           got=_short(lrs), cause=trial.lr_cause(lrs))
        if len(lrs) < len(expected) and len(expected) == params.get("num_iter", 100):
            raise mismatch("the sweep stopped early, although this run does not diverge", given=trial.given(),
                           expected=f"{len(expected)} iterations", got=f"{len(lrs)} iterations",
                           cause=trial.stop_cause(lrs, losses) or trial.loss_cause(lrs, losses))
        for step, (at_step, lr) in enumerate(zip(trial.applied, lrs)):
            if not all(math.isclose(v, lr, rel_tol=1e-9) for v in at_step):
                cause = trial.applied_cause(lrs) or ("set lr_i on every param group right before iteration i's "
                                                     "optimizer.step(), and record that same lr")
                fail(f"at optimizer.step() number {step} the param groups' lrs were {_short(at_step)}, but the "
                     f"recorded lr is {lr:.6g}\n  input: {trial.given()}\n  likely cause: {cause}")
        if len(trial.applied) < len(lrs):
            fail(f"optimizer.step() ran {len(trial.applied)} times for {len(lrs)} recorded iterations\n"
                 f"  input: {trial.given()}\n  likely cause: every iteration trains one batch: zero_grad, forward, "
                 "loss, backward, step")


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def smoothed_losses(student: Submission, device: torch.device) -> None:
    """The losses are s_0 = loss_0, s_i = smooth * loss_i + (1 - smooth) * s_(i-1) of the scripted run."""
    for params in (dict(start_lr=1e-4, end_lr=1e-1, num_iter=12, smooth=0.1),
                   dict(start_lr=1e-3, end_lr=0.5, num_iter=10)):
        trial = _Trial(device, batches=14, batch_size=6, **params)
        lrs, losses = trial.call(student)
        trial.expect_run(lrs, losses, "the recorded losses differ from the scripted run's")


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def trains_in_train_mode(student: Submission, device: torch.device) -> None:
    """A model handed over in eval mode is trained in training mode (every submodule)."""
    trial = _Trial(device, mode="eval", batches=12, batch_size=6, start_lr=1e-3, end_lr=0.3, num_iter=10)
    lrs, losses = trial.call(student)
    off = list(dict.fromkeys(name for name, training in trial.forward_modes if not training))
    if off:
        fail(f"during the sweep {', '.join(off)} ran in eval mode\n"
             f"  input: {trial.given()}\n  likely cause: the spec trains in training mode: call model.train() "
             "before the sweep (and restore each module's mode afterwards); setting model.training = True "
             "changes the top module only")
    trial.expect_run(lrs, losses, "the recorded losses differ from the scripted run's")


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def restarts_short_loader(student: Submission, device: torch.device) -> None:
    """A loader shorter than num_iter is restarted when exhausted (3 batches, 10 iterations)."""
    trial = _Trial(device, batches=3, batch_size=8, start_lr=1e-4, end_lr=0.1, num_iter=10)
    lrs, losses = trial.call(student)
    trial.expect_run(lrs, losses, "the recorded losses differ from the scripted run's")


def _diverging(device: torch.device, kind: str = "sgd", batches: int = 3, mode: str = "train") -> _Trial:
    """A run whose smoothed loss crosses the threshold clearly (far from a tie), well before num_iter."""
    params = dict(start_lr=1e-3, end_lr=100.0 if kind == "sgd" else 1e3, num_iter=30)
    for attempt in range(6):
        trial = _Trial(device, kind=kind, batches=batches, batch_size=8, mode=mode, **params)
        losses, threshold = trial.expected.losses, trial.full_params["diverge_threshold"]
        ratios = [s / min(losses[:i + 1]) for i, s in enumerate(losses)]
        if (len(losses) < params["num_iter"] and all(map(math.isfinite, losses))
                and max(ratios[:-1], default=0.0) < 0.98 * threshold and ratios[-1] > 1.02 * threshold):
            return trial
        torch.manual_seed(attempt + 1)  # other data and weights: a borderline crossing would be flaky
    raise RuntimeError("grader bug: no diverging scenario crosses the threshold clearly")


def _diverging_after_dip(device: torch.device) -> _Trial | None:
    """A run whose smoothed loss first falls well below s_0, then crosses diverge_threshold * min clearly.

    Compared with s_0 instead of the minimum, the same run stops at least two iterations later (or never),
    so a divergence test against the first loss is told apart from the spec's.
    """
    params = dict(start_lr=1e-2, end_lr=100.0, num_iter=60, smooth=0.3, diverge_threshold=2.0)
    for attempt in range(8):
        trial = _Trial(device, batches=30, batch_size=8, learnable=True, **params)
        losses, threshold = trial.expected.losses, params["diverge_threshold"]
        stop = len(losses) - 1
        ratios = [v / min(losses[:i + 1]) for i, v in enumerate(losses)]
        if (len(losses) < params["num_iter"] and all(map(math.isfinite, losses))
                and max(ratios[:-1], default=0.0) < 0.98 * threshold and ratios[-1] > 1.02 * threshold
                and max(v / losses[0] for v in losses) < 0.98 * threshold):
            later = _first_over(trial.variant(stop=False).losses, threshold, reference="first")
            if later is None or later >= stop + 2:
                return trial
        torch.manual_seed(attempt + 101)
    return None  # none found on this device's numerics: the first scenario alone is graded


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def stops_on_divergence(student: Submission, device: torch.device) -> None:
    """The run stops right after recording the first s_i > diverge_threshold * min(s_0..s_i)."""
    trial = _diverging(device)
    lrs, losses = trial.call(student)
    trial.expect_run(lrs, losses, "the diverging run differs from the scripted one")
    trial = _diverging_after_dip(device)  # min(s_0..s_i) well below s_0: comparing with s_0 stops later
    if trial is not None:
        lrs, losses = trial.call(student)
        trial.expect_run(lrs, losses, "a run whose loss falls first, then diverges, differs from the scripted one")


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def restores_parameters_and_buffers(student: Submission, device: torch.device) -> None:
    """Afterwards every parameter and buffer (BatchNorm's running stats too) equals its value before."""
    trial = _diverging(device, batches=30)
    trial.call(student)
    trial.expect_restored_model("after lr_range_test")


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def restores_training_mode(student: Submission, device: torch.device) -> None:
    """Afterwards every submodule's training flag is as before (from eval mode, and from a mixed mode)."""
    for mode in ("eval", "mixed"):
        trial = _Trial(device, mode=mode, batches=8, batch_size=6, start_lr=1e-4, end_lr=0.1, num_iter=6)
        trial.call(student)
        now = {name: m.training for name, m in trial.model.named_modules()}
        wrong = [name or "the model" for name, training in trial.before_modes.items() if now.get(name) != training]
        if not wrong:
            continue
        if mode == "eval":
            cause = ("the model was left in training mode (model.train() for the sweep, never undone); record each "
                     "module's .training before the sweep and set it back afterwards")
        elif not now[""] == trial.before_modes[""] or all(now[n] == now[""] for n in now):
            cause = ("model.train(was_training) / model.eval() set every submodule alike, but the model had its "
                     "BatchNorm in eval mode inside a model in training mode: record module.training for each of "
                     "model.modules() (every submodule) and restore each one")
        else:
            cause = None
        raise mismatch("the training mode flags are not as before the call", given=trial.given(),
                       expected=", ".join(f"{n or 'model'}.training={t}" for n, t in trial.before_modes.items()),
                       got=", ".join(f"{n or 'model'}.training={t}" for n, t in now.items()), cause=cause)


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def restores_optimizer(student: Submission, device: torch.device) -> None:
    """Afterwards the optimizer's state (Adam's moments and step) and each group's lr are as before."""
    trial = _diverging(device, kind="adam", batches=30)
    trial.call(student)
    after = trial.optimizer.state_dict()
    model_params = [p for p in trial.model.parameters()]
    for group in trial.optimizer.param_groups:
        for p in group["params"]:
            if not any(p is q for q in model_params):
                fail("after lr_range_test the optimizer holds tensors that are not the model's parameters, so it no "
                     f"longer trains the model\n  input: {trial.given()}\n  likely cause: parameters replaced by new "
                     "tensors (e.g. module.weight = nn.Parameter(...)); restore values in place with "
                     "model.load_state_dict(...)")
    before_lrs, after_lrs = _groups_lrs(trial.before_optimizer), _groups_lrs(after)
    if after_lrs != before_lrs:
        swept = set(trial.expected.lrs)
        if all(v in swept for v in after_lrs):
            cause = ("the learning rates were not restored: the param groups keep an lr of the sweep; restore them "
                     "(optimizer.load_state_dict of a deep copy of the state_dict taken before restores lrs and state)")
        elif len(set(after_lrs)) == 1:
            cause = "each param group has its own lr: restore each group's own, not one value for all"
        else:
            cause = None
        raise mismatch("the param groups' learning rates are not as before the call", given=trial.given(),
                       expected=str(before_lrs), got=str(after_lrs), cause=cause)
    difference = _state_difference(trial.before_optimizer, after)
    if difference is None:
        return
    if not after["state"]:
        cause = "the optimizer state was cleared (state.clear() or a fresh optimizer); restore the saved state"
    elif _state_difference(trial.end_optimizer_state, after) is None or all(
            _state_close(trial.end_optimizer_state["state"][i], after["state"].get(i, {}))
            for i in trial.end_optimizer_state["state"]):
        cause = ("the optimizer state (Adam's exp_avg, exp_avg_sq and step; SGD's momentum buffers) was not "
                 "restored: it is what the run left. Take copy.deepcopy(optimizer.state_dict()) before the run "
                 "(state_dict() alone shares the live state tensors) and optimizer.load_state_dict it afterwards")
    else:
        cause = None
    raise mismatch("the optimizer state is not exactly as before the call", given=trial.given(),
                   expected="the state_dict() from before the call", got=difference, cause=cause)


def _state_close(expected: dict, got: dict) -> bool:
    for key, value in expected.items():
        now = got.get(key)
        if isinstance(value, torch.Tensor):
            if not isinstance(now, torch.Tensor) or now.shape != value.shape or not torch.allclose(
                    now.float().cpu(), value.float().cpu(), rtol=1e-4, atol=1e-6):
                return False
    return True


# -- suggest_lr ------------------------------------------------------------------------------------
def _loss_curve(rng: random.Random, n: int, *, steep_at: int, noise: float = 0.02) -> tuple[list[float], list[float]]:
    """A noisy range-test-like curve on a geometric lr grid with its steepest fall near ``steep_at``."""
    lrs = [1e-6 * (1e1 / 1e-6) ** (i / (n - 1)) for i in range(n)]
    losses = []
    for i in range(n):
        fall = 1.5 / (1 + math.exp(-(i - steep_at) * 1.3))  # a sigmoid drop centred on steep_at
        rise = 0.02 * max(0, i - steep_at - 4) ** 2
        losses.append(2.5 - fall + rise + rng.uniform(-noise, noise))
    return lrs, losses


def _expected_suggestion(lrs: list[float], losses: list[float], skip_start: int, skip_end: int) -> float:
    stop = len(losses) - skip_end
    gradient = np.gradient(np.array(losses[skip_start:stop], dtype=np.float64))
    return lrs[skip_start + int(np.argmin(gradient))]


def _suggest_cause(lrs: list[float], losses: list[float], skip_start: int, skip_end: int, got: Any) -> str | None:
    stop = len(losses) - skip_end
    kept = np.array(losses[skip_start:stop], dtype=np.float64)
    k = int(np.argmin(np.gradient(kept)))
    if isinstance(got, numbers.Integral) and not isinstance(got, bool) and int(got) in (k, skip_start + k):
        return "that is the index of the steepest point; return the learning rate there, lrs[index]"
    if not isinstance(got, numbers.Real) or isinstance(got, bool):
        return None
    got = float(got)
    candidates = []
    candidates.append((lrs[int(np.argmin(kept)) + skip_start],
                       "that is the lr at the lowest loss; the spec asks for the steepest fall: the most negative "
                       "numpy.gradient of the losses"))
    candidates.append((lrs[int(np.argmin(np.gradient(np.array(losses))))],
                       "skip_start / skip_end were not applied: take numpy.gradient of "
                       "losses[skip_start : len(losses) - skip_end] only"))
    candidates.append((lrs[k], "the index found in the trimmed slice was used on the untrimmed lrs; the lr is "
                               "lrs[skip_start + index] (trim lrs the same way as losses)"))
    if len(kept) >= 2:
        candidates.append((lrs[skip_start + int(np.argmin(np.diff(kept)))],
                           "np.diff (forward differences) instead of numpy.gradient (central differences)"))
        candidates.append((lrs[skip_start + int(np.argmax(np.gradient(kept)))],
                           "that is the most POSITIVE gradient (argmax); the spec takes the most negative (argmin)"))
        lr_kept = np.array(lrs[skip_start:stop], dtype=np.float64)
        candidates.append((lrs[skip_start + int(np.argmin(np.gradient(kept, lr_kept)))],
                           "numpy.gradient(losses, lrs) differentiates with respect to the lr; the spec takes "
                           "numpy.gradient of the losses alone (unit spacing: the lrs are evenly spaced in log)"))
    matching = [cause for value, cause in candidates
                if math.isclose(got, value, rel_tol=1e-12) and not math.isclose(value, lrs[skip_start + k], rel_tol=1e-12)]
    if len(matching) > 1:  # on this input several mistakes give the same lr: name them all
        return "one of these (they give the same lr here): " + "; OR ".join(matching)
    return matching[0] if matching else None


def _call_suggest(student: Submission, lrs: list[float], losses: list[float], **skips: int) -> Any:
    got = student.call("suggest_lr", lrs, losses, **skips)
    if isinstance(got, (torch.Tensor, np.ndarray)) and not isinstance(got, np.generic):
        shown = ", ".join(f"{k}={v}" for k, v in skips.items())
        fail(f"suggest_lr(lrs, losses{', ' if shown else ''}{shown}) with {len(lrs)} points returned a "
             f"{type(got).__name__} ({got!r:.80}); it must return the learning rate as a Python float: "
             "float(lrs[index]) (the lrs are a list of floats; converting them to a float32 tensor also loses "
             "precision)")
    return got


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def suggest_lr_steepest_descent(student: Submission, device: torch.device) -> None:
    """suggest_lr returns lrs at the most negative numpy.gradient of the trimmed losses."""
    rng = random.Random(404)
    steep_in_both_skipped_ends = _loss_curve(rng, 40, steep_at=5, noise=0.01)
    steep_in_both_skipped_ends[1][-3] -= 5.0  # a sudden fall inside the last skip_end points as well
    cases = [
        (_loss_curve(rng, 40, steep_at=20), {}),  # the defaults: skip_start=10, skip_end=5
        (steep_in_both_skipped_ends, {}),
        (_loss_curve(rng, 30, steep_at=14), dict(skip_start=3, skip_end=2)),
        (_loss_curve(rng, 12, steep_at=6), dict(skip_start=0, skip_end=0)),
        (_loss_curve(rng, 25, steep_at=9, noise=0.2), dict(skip_start=2, skip_end=0)),
    ]
    for (lrs, losses), skips in cases:
        skip_start, skip_end = skips.get("skip_start", 10), skips.get("skip_end", 5)
        expected = _expected_suggestion(lrs, losses, skip_start, skip_end)
        shown = f"suggest_lr(lrs, losses{''.join(f', {k}={v}' for k, v in skips.items())}) with {len(lrs)} points"
        given = f"{shown}; lrs = {_short(lrs, 4)}, losses = {_short(losses, 4)}"
        try:
            got = _call_suggest(student, lrs, losses, **skips)
        except StudentCodeError as exc:
            if isinstance(exc.exception, ValueError) and skip_end == 0:
                fail(f"{shown} raised ValueError although {len(losses) - skip_start} points remain\n"
                     "  likely cause: losses[skip_start:-skip_end] is empty when skip_end == 0 (-0 is 0); slice up "
                     "to len(losses) - skip_end")
            raise
        if not isinstance(got, numbers.Real) or isinstance(got, bool) or not math.isclose(float(got), expected, rel_tol=1e-12):
            raise mismatch("suggest_lr picked the wrong learning rate", given=given,
                           expected=f"{expected:.6g} (lrs[{lrs.index(expected)}])",
                           got=f"{got!r}" if not isinstance(got, float) else f"{got:.6g}",
                           cause=_suggest_cause(lrs, losses, skip_start, skip_end, got))


@LR_RANGE_TEST.check(points=1)
@_single_threaded
def suggest_lr_too_few_points(student: Submission, device: torch.device) -> None:
    """suggest_lr raises ValueError when fewer than 2 points remain, and not when exactly 2 do."""
    rng = random.Random(5)
    for n, skips, why in [(16, {}, "only 1 point remains (16 - 10 - 5)"),
                          (12, {}, "no point remains (12 - 10 - 5 < 0)"),
                          (5, dict(skip_start=0, skip_end=4), "only 1 point remains"),
                          (3, dict(skip_start=2, skip_end=0), "only 1 point remains"),
                          (0, dict(skip_start=0, skip_end=0), "there are no points at all")]:
        lrs, losses = _loss_curve(rng, max(n, 2), steep_at=n // 2)
        lrs, losses = lrs[:n], losses[:n]
        _expect_error_kw(student, lrs, losses, skips, n, why)
    for n, skips in [(17, {}), (2, dict(skip_start=0, skip_end=0)), (6, dict(skip_start=4, skip_end=0))]:
        lrs, losses = _loss_curve(rng, n, steep_at=n // 2)
        expected = _expected_suggestion(lrs, losses, skips.get("skip_start", 10), skips.get("skip_end", 5))
        shown = "".join(f", {k}={v}" for k, v in skips.items())
        try:
            got = _call_suggest(student, lrs, losses, **skips)
        except StudentCodeError as exc:
            cause = ("losses[skip_start:-skip_end] is empty when skip_end == 0; slice up to len(losses) - skip_end"
                     if skips.get("skip_end") == 0 else "the check must be 'fewer than 2', not 'fewer than 3'")
            fail(f"suggest_lr(lrs, losses{shown}) with {n} points, so exactly 2 remain after trimming, "
                 f"{str(exc).split(' ', 1)[1]}; with 2 points numpy.gradient works and the answer is "
                 f"{expected:.6g}\n  likely cause: {cause}")
        if not isinstance(got, numbers.Real) or isinstance(got, bool) or not math.isclose(float(got), expected, rel_tol=1e-12):
            raise mismatch("suggest_lr picked the wrong learning rate when exactly 2 points remain",
                           given=f"suggest_lr(lrs, losses{shown}) with {n} points", expected=f"{expected:.6g}",
                           got=repr(got), cause=_suggest_cause(lrs, losses, skips.get("skip_start", 10),
                                                               skips.get("skip_end", 5), got))


def _expect_error_kw(student: Submission, lrs, losses, skips, n, why) -> None:
    function = student.get("suggest_lr")

    def call():
        return function(list(lrs), list(losses), **skips)

    call.__qualname__ = "suggest_lr"
    shown = "".join(f", {k}={v}" for k, v in skips.items())
    expect_error(student, ValueError, call, (), call=f"suggest_lr(lrs, losses{shown}) with {n} points", why=why)
