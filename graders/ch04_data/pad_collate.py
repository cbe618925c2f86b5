"""pad_collate(batch) -> (padded, lengths, labels): (sequence, label) pairs right-padded with 0 into int64 tensors.

Expected values are plain Python lists built from the inputs before the student's code runs
(``seq.tolist() + [0] * pad``). The sequences are CPU tensors whatever the grading device: a collate function
works on the items a Dataset gives, on the CPU (in DataLoader workers too), and the specification names no
device, so an answer that goes through NumPy is as valid as one that stays in torch.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from graders import domain
from graders.ch04_data.range_stream import run_loader
from graders.compare import difference, dtype_name, show, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

PAD_COLLATE = exercise("pad_collate", chapter="04_data", names=["pad_collate"])

Batch = list  # of (sequence, label) tuples (or [sequence, label] lists)
NAMES = ("padded", "lengths", "labels")


# ==================================================================================================
# Inputs
# ==================================================================================================
def _tokens(length: int, low: int, high: int, layout: str) -> torch.Tensor:
    """A 1-D int64 sequence with the given layout: contiguous, strided (every 2nd element of a larger tensor,
    from an offset), a column of a matrix, or expanded (one token repeated, stride 0)."""
    if layout == "expanded":
        return torch.randint(low, high, (1,), dtype=torch.long).expand(length)
    if layout == "strided":
        return torch.randint(low, high, (2 * length + 3,), dtype=torch.long)[3::2][:length]
    if layout == "column":
        return torch.randint(low, high, (length, 3), dtype=torch.long)[:, 1]
    return torch.randint(low, high, (length,), dtype=torch.long)


def _sequence_batch(lengths: Sequence[int], *, zeros: bool = True, big: bool = False, layouts: Sequence[str] = (),
                    as_lists: bool = False, labels: Sequence[int] | None = None) -> Batch:
    """(sequence, label) pairs. Tokens are 0..9 when ``zeros`` (a token may be 0, even the last one), 1..9
    otherwise; ``big``: token ids and labels past 2**31 (a float32 or int32 on the way loses them)."""
    low = 0 if zeros else 1
    batch = []
    for i, length in enumerate(lengths):
        layout = layouts[i % len(layouts)] if layouts else "contiguous"
        tokens = _tokens(length, low, 10, layout)
        if big:
            tokens = tokens + (2**33 + 2**20 * torch.arange(length))  # distinct, past int32 and float32's 2**24
            if layout != "contiguous":
                tokens = _relayout(tokens, layout)
        elif zeros and length >= 2 and layout in ("contiguous", "strided", "column"):
            tokens[-1] = 0  # a real token 0 at the end: the padding must not be mistaken for it
        label = labels[i] if labels is not None else random.randint(0, 4)
        batch.append([tokens, label] if as_lists else (tokens, label))
    return batch


def _relayout(tokens: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values, laid out as ``layout`` (non-contiguous) again."""
    n = len(tokens)
    if layout == "strided":
        base = torch.zeros(2 * n + 3, dtype=torch.long)
        base[3::2][:n] = tokens
        return base[3::2][:n]
    base = torch.zeros(n, 3, dtype=torch.long)
    base[:, 1] = tokens
    return base[:, 1]


@judge_only
def _expected(batch: Batch) -> tuple[list[list[int]], list[int], list[int]]:
    """The specification, on plain Python lists: the sequence, then zeros up to the longest."""
    rows = [item[0].tolist() for item in batch]
    width = max((len(r) for r in rows), default=0)
    return [r + [0] * (width - len(r)) for r in rows], [len(r) for r in rows], [int(item[1]) for item in batch]


def _layout_words(seq: torch.Tensor) -> str:
    if seq.is_contiguous() and not seq.storage_offset():
        return ""
    if seq.is_contiguous():
        return f" (a view at storage offset {seq.storage_offset()})"
    if len(seq) > 1 and seq.stride(0) == 0:
        return " (expanded: stride 0)"
    return f" (non-contiguous: stride {seq.stride(0)}, storage offset {seq.storage_offset()})"


def _short(values: list, limit: int = 12) -> str:
    """A list of ints as Python prints it, cut after ``limit`` values (with the count)."""
    if len(values) <= limit:
        return str(values)
    return f"{values[:limit]}"[:-1] + f", ... ({len(values)} values)]"


def _show_rows(rows: list) -> str:
    """A (B, L) table as nested lists, each row cut after 12 values, at most 8 rows."""
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return show(rows)
    shown = ", ".join(_short(r) for r in rows[:8])
    return f"[{shown}" + (f", ... ({len(rows)} rows)]" if len(rows) > 8 else "]")


def _describe(batch: Batch) -> str:
    def item(entry) -> str:
        seq, label = entry[0], entry[1]
        body = f"{_short(seq.tolist())}{_layout_words(seq)}, {label}"
        return f"[{body}]" if isinstance(entry, list) else f"({body})"

    shown = ", ".join(item(entry) for entry in batch[:6])
    more = f", ... ({len(batch)} items)" if len(batch) > 6 else ""
    return f"batch = [{shown}{more}]"


# ==================================================================================================
# Calling the student's pad_collate, and reading what it returned
# ==================================================================================================
def _call(student: Submission, batch: Batch) -> Any:
    try:
        return student.call("pad_collate", batch)
    except StudentCodeError as exc:
        raise exc.within(f"pad_collate({_describe(batch)})") from None


def _said(call: str, batch: Batch) -> str:
    """``pad_collate(batch = ...)``, or a DataLoader's batch: the call whose return value is judged."""
    return f"{call}({_describe(batch)})" if call == "pad_collate" else f"{call} (its items: {_describe(batch)})"


def _unpack(got: Any, batch: Batch, call: str = "pad_collate") -> tuple[Any, Any, Any]:
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        what = f"{show(got)}, a {type_name(got)}" + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "")
        fail(f"{_said(call, batch)} returned {what}; it must return the tuple (padded, lengths, labels)")
    return tuple(got)


def _as_values(value: Any, name: str, batch: Batch, call: str = "pad_collate") -> torch.Tensor:
    """The student's output as a CPU tensor, to compare values (types and dtypes have their own check)."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            fail(f"{_said(call, batch)} returned {name} = {show(value)}, a complex tensor; it must be int64")
        return value.detach().cpu()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, (list, tuple)):
        try:
            return torch.tensor(value)
        except Exception:  # noqa: BLE001 - ragged lists, lists of tensors, strings: not a tensor of numbers
            pass
    fail(f"{_said(call, batch)} returned {name} = {show(value)} (a {type_name(value)}), which is not a "
         "tensor of numbers")


def _values(got: Any, batch: Batch, call: str = "pad_collate") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(_as_values(v, n, batch, call) for v, n in zip(_unpack(got, batch, call), NAMES))


def _collate(student: Submission, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _values(_call(student, batch), batch)


def _same(got: torch.Tensor, expected: list) -> bool:
    """Equal values, compared as Python numbers (the dtype has its own check; shapes must agree)."""
    return got.tolist() == expected


# ==================================================================================================
# Likely causes
# ==================================================================================================
def _padding_cause(batch: Batch, got: torch.Tensor) -> str | None:
    rows, lengths, _ = _expected(batch)
    width = len(rows[0]) if rows else 0
    seqs = [item[0].tolist() for item in batch]
    if got.dim() == 2 and tuple(got.shape) == (width, len(batch)) and width != len(batch):
        return ("the result is (max_len, B), time first: rows must be the sequences (pad_sequence needs "
                "batch_first=True)")
    if got.dim() == 1 and len(batch) == 1 and got.tolist() == rows[0]:
        return "the batch dim was dropped (squeeze() on a batch of one?): padded must be (B, max_len) even for B = 1"
    nonempty = [i for i, n in enumerate(lengths) if n]
    if got.dim() == 2 and got.shape[0] == len(nonempty) < len(batch) and got.tolist() == [
            rows[i][:got.shape[1]] for i in nonempty]:
        return ("the rows of the empty sequences were dropped: every item of the batch gets a row (all 0s for a "
                "length-0 sequence), so that padded, lengths and labels keep B rows")
    if got.dim() != 2 or got.shape[0] != len(batch):
        return None
    shortest = min(lengths)
    first = lengths[0]
    if got.shape[1] == shortest and shortest < width and got.tolist() == [s[:shortest] for s in seqs]:
        also = " (here also the length of the first one)" if first == shortest else ""
        return f"the sequences were cut to the shortest one{also}; pad every sequence up to the longest instead"
    if first != width and got.shape[1] == first and got.tolist() == [r[:first] for r in rows]:
        return (f"padded is {first} wide, the length of the FIRST sequence: max_len is the length of the longest "
                f"sequence of the batch (here {width}), max(len(s) for s in the sequences)")
    if got.shape[1] > width and got[:, width:].eq(0).all() and got[:, :width].tolist() == rows:
        return (f"padded is {got.shape[1]} wide, with extra columns of 0s: pad up to the longest sequence of THIS "
                f"batch (here {width}), not to a fixed or larger width")
    if got.shape[1] != width:
        return None
    left = [[0] * (width - len(s)) + s for s in seqs]
    if got.tolist() == left and left != rows:
        return "the padding is on the left (before each sequence); the spec puts the 0s AFTER each sequence"
    rounded = torch.tensor(rows, dtype=torch.long).reshape(len(rows), width)
    through32 = not torch.equal(rounded.float().long(), rounded) and torch.equal(got.double(), rounded.float().double())
    through64 = not torch.equal(rounded.double().long(), rounded) and (
        torch.equal(got, rounded.double().long()) if not got.is_floating_point() else torch.equal(got.double(), rounded.double()))
    if through32 and through64:  # ids near 2**62 round alike in both: the evidence does not tell which
        return ("the tokens went through a floating-point type on the way (float32 holds integers exactly only up to "
                "2**24, float64 up to 2**53), so large token ids are rounded; build padded as int64 from the start")
    if through32:
        return ("the tokens went through float32 on the way (torch.zeros / torch.Tensor without dtype=torch.long, "
                "with or without a .long() afterwards): float32 holds integers exactly only up to 2**24, so large "
                "token ids are rounded; build padded as int64 from the start")
    if through64:
        return ("the tokens went through float64 on the way: float64 holds integers exactly only up to 2**53, so "
                "token ids near the ends of int64 are rounded; build padded as int64 from the start")
    pads = {v for i, n in enumerate(lengths) for v in got[i, n:].tolist()}
    if len(pads) == 1 and 0 not in pads:
        (value,) = pads
        if all(got[i, :n].tolist() == s for i, (n, s) in enumerate(zip(lengths, seqs))):
            return f"the padding value is {show(value)}; the spec pads with 0"
    return None


def _order_cause(batch: Batch, padded: torch.Tensor) -> str | None:
    rows, lengths, _ = _expected(batch)
    for reverse, how in ((True, "longest first"), (False, "shortest first")):
        order = sorted(range(len(batch)), key=lambda i: lengths[i], reverse=reverse)
        if order != list(range(len(batch))) and padded.tolist() == [rows[i] for i in order]:
            return (f"the batch was sorted by length ({how}), as pack_padded_sequence(enforce_sorted=True) "
                    "wants; the spec keeps the order of batch (padded, lengths and labels row i = batch[i])")
    return None


def _collate_cause(batch: Batch, padded: torch.Tensor) -> str | None:
    return _padding_cause(batch, padded) or _order_cause(batch, padded)


def _lengths_cause(batch: Batch, got: list, got_labels: list) -> str | None:
    """Name a known mistake in the lengths the student returned."""
    _, lengths, labels = _expected(batch)
    nonzero = [sum(1 for t in item[0].tolist() if t != 0) for item in batch]
    one_short = [n - 1 for n in lengths]
    width = max(lengths, default=0)
    if got == nonzero and got == one_short:
        return ("each length is one short of len(sequence) here (counting the non-zero tokens? the index of the "
                "last token?); a token can be 0 too: record len(sequence) itself")
    if got == nonzero:
        return "the lengths count the non-zero tokens, but a token can be 0 too; record len(sequence) before padding"
    if got == one_short:
        return "each length is len(sequence) - 1 (the index of the last token?); record len(sequence) itself"
    if got == [width] * len(lengths) and len(set(lengths)) > 1:
        return ("every length is max_len: they were measured after padding (len of a padded row); record "
                "len(sequence) of each input sequence")
    if got == labels and got_labels == lengths and labels != lengths:
        return "lengths and labels are swapped: return (padded, lengths, labels) in that order"
    if got != lengths and got in (sorted(lengths, reverse=True), sorted(lengths)):
        return "the lengths are sorted; keep them in the order of batch"
    return None


def _where(got: torch.Tensor, expected: list) -> str | None:
    """Where the values differ (same shape only): how many, and the first one, by position."""
    want = torch.tensor(expected, dtype=torch.long)
    if got.shape != want.shape or not got.numel():
        return None
    if got.is_floating_point():
        return difference(got, want)
    bad = (got.long() != want).nonzero().tolist()
    if not bad:
        return None
    first = tuple(bad[0])
    return (f"{len(bad)} of {want.numel()} elements differ; the first at index {list(first)}: expected "
            f"{show(want[first].item())}, returned {show(got[first].item())}")


# ==================================================================================================
# Expectations
# ==================================================================================================
def _expect_collate(batch: Batch, got: Any, what: str, *, parts: Sequence[str] = NAMES,
                    call: str = "pad_collate", causes: bool = True) -> None:
    """Compare the values of ``got`` (the student's return value for ``batch``) with the specification;
    ``causes``: name a likely cause (False when the evidence of other cases does not single one out)."""
    rows, lengths, labels = _expected(batch)
    padded_got, lengths_got, labels_got = _values(got, batch, call)
    given = _describe(batch) if call == "pad_collate" else f"{call}, whose items are {_describe(batch)}"
    width = len(rows[0]) if rows else 0
    if "padded" in parts and (tuple(padded_got.shape) != (len(rows), width) or not _same(padded_got, rows)):
        shown = f"{_show_rows(padded_got.tolist())}  " if padded_got.numel() else "an empty tensor of "
        fail_mismatch(f"{what}: wrong padded", given=given,
                      expected=f"{_show_rows(rows)}  (shape {(len(rows), width)})" if width else
                      f"shape {(len(rows), 0)}",
                      got=f"{shown}(shape {tuple(padded_got.shape)})", where=_where(padded_got, rows),
                      cause=_collate_cause(batch, padded_got) if causes else None)
    if "lengths" in parts and not _same(lengths_got, lengths):
        fail_mismatch(f"{what}: wrong lengths", given=given, expected=str(lengths),
                      got=f"{lengths_got.tolist()} (shape {tuple(lengths_got.shape)})",
                      cause=_lengths_cause(batch, lengths_got.tolist(), labels_got.tolist()) if causes else None)
    if "labels" in parts and not _same(labels_got, labels):
        cause = None
        if labels_got.dim() == 2 and labels_got.shape[0] == len(labels) and labels_got.shape[1] > 1 and \
                labels_got.long().argmax(1).tolist() == labels and labels_got.long().sum().item() == len(labels):
            cause = "the labels are one-hot encoded; return the class indices themselves, shape (B,)"
        fail_mismatch(f"{what}: wrong labels", given=given, expected=str(labels),
                      got=f"{labels_got.tolist()} (shape {tuple(labels_got.shape)})", where=_where(labels_got, labels),
                      cause=cause if causes else None)


_DTYPE_CAUSES = {
    "padded": "torch.zeros/torch.full/torch.empty/torch.Tensor make float32 by default; pass dtype=torch.long",
    "lengths": "lengths count tokens: build them with dtype=torch.long (torch.Tensor(...) and torch.FloatTensor make "
               "float32)",
    "labels": "labels are class indices (what CrossEntropyLoss wants): build them with dtype=torch.long",
}


def _expect_types(batch: Batch, got: Any, what: str, *, causes: bool = True) -> None:
    """Three int64 tensors of shapes (B, max_len), (B,), (B,)."""
    rows, lengths, labels = _expected(batch)
    given = _describe(batch)
    shapes = {"padded": (len(rows), len(rows[0]) if rows else 0), "lengths": (len(lengths),), "labels": (len(labels),)}
    for value, (name, shape) in zip(_unpack(got, batch), shapes.items()):
        if not isinstance(value, torch.Tensor):
            fail(f"pad_collate({given}) returned {name} as a {type_name(value)} ({show(value)}); it must be a tensor "
                 f"(likely cause: return torch.tensor({name}, dtype=torch.long), not the Python "
                 f"{'list' if isinstance(value, list) else type_name(value)})")
        if value.dtype != torch.long:
            cause = _DTYPE_CAUSES[name]
            if not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool:
                cause = (f"{dtype_name(value.dtype)} is an integer type, but not int64: pass dtype=torch.long "
                         "(torch.int64), or convert with .long()")
            fail(f"{what}: pad_collate({given}) returned {name} of dtype {dtype_name(value.dtype)}; the spec asks "
                 f"for int64" + (f" (likely cause: {cause})" if causes else ""))
        if tuple(value.shape) != shape:
            cause = _padding_cause(batch, value.detach().cpu()) if name == "padded" and causes else None
            if causes and cause is None and name != "padded" and value.dim() == 2 and value.shape[0] == len(batch):
                cause = (f"{name} must be 1-D, shape (B,): build it from a flat list of ints "
                         + ("(not one-hot)" if name == "labels" and value.shape[1] > 1 else "(not [[n] for ...])"))
            fail_mismatch(f"{what}: {name} has the wrong shape", given=given, expected=f"shape {shape}",
                          got=f"shape {tuple(value.shape)}", cause=cause)


# ==================================================================================================
# Scenarios (in the runner)
# ==================================================================================================
def collate_watching(student: RunnerStudent, batch: Batch) -> dict:
    """pad_collate(batch), and what became of the caller's list, its items and their tensors afterwards."""
    items = list(batch)
    sequences = [item[0] for item in items]
    contents = [list(item) for item in items]
    result = student.call("pad_collate", batch)
    origin = [next((j for j, item in enumerate(items) if entry is item), None) for entry in batch]
    changed_items = [j for j, item in enumerate(items)
                     if len(item) != len(contents[j]) or any(a is not b for a, b in zip(item, contents[j]))]
    return {"result": result, "length": len(batch), "origin": origin, "sequences": sequences,
            "changed_items": changed_items}


class SequenceDataset(Dataset):
    """A map-style dataset of (sequence, label) pairs, as a DataLoader user would have."""

    def __init__(self, items: Batch) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index]


def through_dataloader(student: RunnerStudent, items: Batch, batch_size: int, num_workers: int) -> list:
    """The batches of DataLoader(dataset, batch_size, collate_fn=pad_collate, num_workers) in the runner."""
    (batches,) = run_loader(student, SequenceDataset(items), limit=len(items) + 1, batch_size=batch_size,
                            shuffle=False, num_workers=num_workers, collate_fn=student.get("pad_collate"))
    return batches


# ==================================================================================================
# Checks
# ==================================================================================================
@PAD_COLLATE.check(points=1)
def returns_int64_tensors(student: Submission, device: torch.device) -> None:
    """Returns (padded, lengths, labels): int64 tensors of shapes (B, max_len), (B,), (B,)."""
    cases = [
        _sequence_batch([3, 5, 1, 4]),
        _sequence_batch([2, 6, 3], big=True, labels=[300, 2**33 + 7, 70_000]),
        _sequence_batch([4, 2], layouts=["strided", "expanded"], as_lists=True),
    ]
    for batch in cases:
        got = _call(student, batch)
        _expect_types(batch, got, "wrong types")
        _expect_collate(batch, got, "wrong values")
    _expect_generated(student, draw_batch, 100, "wrong answer")


@PAD_COLLATE.check(points=1)
def right_padding_with_zero(student: Submission, device: torch.device) -> None:
    """Each row is its sequence followed by 0s up to the longest sequence (any layout, large token ids too)."""
    cases = [
        _sequence_batch([2, 4, 3], zeros=False),
        _sequence_batch([1, 6], zeros=False),
        _sequence_batch([5, 5, 2, 1], zeros=False),
        _sequence_batch([3, 3], zeros=False),
        _sequence_batch([3, 7, 2], zeros=False, layouts=["strided", "column", "expanded"]),
        _sequence_batch([2, 5, 4], big=True, layouts=["contiguous", "strided"]),
        _sequence_batch([40, 300, 7], zeros=False, as_lists=True),
    ]
    for batch in cases:
        _expect_collate(batch, _call(student, batch), "padding", parts=("padded",))
    _expect_generated(student, draw_batch, 60, "padding")


@PAD_COLLATE.check(points=1)
def lengths_and_labels(student: Submission, device: torch.device) -> None:
    """lengths are the true sequence lengths (a token may be 0) and labels the given labels (large ones too)."""
    cases = [
        _sequence_batch([4, 2, 6]),
        _sequence_batch([3, 1, 5, 2]),
        _sequence_batch([2, 300, 4], labels=[1000, 257, 2**40 + 1], layouts=["column", "contiguous"]),
        _sequence_batch([5, 3], as_lists=True, labels=[9, 3]),
    ]
    for batch in cases:
        _expect_collate(batch, _call(student, batch), "lengths and labels", parts=("lengths", "labels"))
    _expect_generated(student, draw_batch, 60, "lengths and labels")


@PAD_COLLATE.check(points=1)
def keeps_batch_order(student: Submission, device: torch.device) -> None:
    """Rows, lengths and labels stay in the order of batch (no sorting by length)."""
    cases = [
        _sequence_batch([2, 5, 1, 4, 3], zeros=False),
        _sequence_batch([1, 2, 3, 4], zeros=False),
        _sequence_batch([4, 1, 3], zeros=False, labels=[500, 3000, 1]),
    ]
    for batch in cases:
        rows, lengths, labels = _expected(batch)
        padded_got, lengths_got, labels_got = _collate(student, batch)
        if _same(padded_got, rows) and _same(lengths_got, lengths) and _same(labels_got, labels):
            continue
        cause = _collate_cause(batch, padded_got)
        what = "the rows are not in the order of batch"
        if _same(padded_got, rows) and not _same(lengths_got, lengths):
            if sorted(lengths_got.reshape(-1).tolist()) != sorted(lengths):
                what = "the lengths are wrong, not only out of order (see lengths_and_labels)"
            else:
                what = "the lengths are not in the order of batch"
            cause = _lengths_cause(batch, lengths_got.tolist(), labels_got.tolist())
        elif _same(padded_got, rows) and _same(lengths_got, lengths):
            if sorted(labels_got.reshape(-1).tolist()) != sorted(labels):
                what = "the labels are wrong, not only out of order (see lengths_and_labels)"
            else:
                what = "the labels are not in the order of batch"
        fail_mismatch(what, given=_describe(batch),
                      expected=f"padded {_show_rows(rows)}, lengths {lengths}, labels {labels}",
                      got=f"padded {_show_rows(padded_got.tolist())}, lengths {lengths_got.tolist()}, "
                          f"labels {labels_got.tolist()}", cause=cause)
    _expect_generated(student, draw_batch, 60, "the order of batch")


@PAD_COLLATE.check(points=1)
def empty_sequences(student: Submission, device: torch.device) -> None:
    """Length-0 sequences give all-0 rows and length 0; an all-empty batch gives an int64 (B, 0) tensor."""
    empty = torch.zeros(0, dtype=torch.long)
    for lengths in ([0, 3, 2], [2, 0, 0, 1], [0, 4]):
        batch = _sequence_batch(lengths)
        _expect_collate(batch, _call(student, batch), "a batch with empty sequences")
    normal = _sequence_batch([2, 1])
    normal_padded = _unpack(_call(student, normal), normal)[0]
    for batch in ([(empty.clone(), 3), (empty.clone(), 1), (empty.clone(), 0)],
                  [[torch.arange(6)[6:], 700]]):
        got = _call(student, batch)
        _expect_collate(batch, got, "a batch whose sequences are all empty")
        padded = _unpack(got, batch)[0]
        if isinstance(normal_padded, torch.Tensor) and normal_padded.dtype == torch.long and (
                not isinstance(padded, torch.Tensor) or padded.dtype != torch.long):
            shown = f"of dtype {dtype_name(padded.dtype)}" if isinstance(padded, torch.Tensor) else \
                f"as a {type_name(padded)}"
            fail(f"pad_collate({_describe(batch)}) returned padded {shown} when every sequence is empty (int64 "
                 "otherwise); the spec asks for int64 always (likely cause: torch.tensor of a list of empty lists "
                 "is float32; pass dtype=torch.long)")
    _expect_generated(student, draw_with_empty, 60, "a batch with empty sequences")


@PAD_COLLATE.check(points=1)
def batch_of_one(student: Submission, device: torch.device) -> None:
    """A batch of one item still gives a 2-D padded (1, len) and 1-D lengths and labels."""
    for lengths, labels in (([4], [3]), ([1], [2**35]), ([0], [1]), ([6], [0])):
        batch = _sequence_batch(lengths, labels=labels, layouts=["strided"] if lengths[0] == 6 else ())
        got = _call(student, batch)
        for value, name, shape in zip(_unpack(got, batch), NAMES, ((1, lengths[0]), (1,), (1,))):
            if isinstance(value, torch.Tensor) and tuple(value.shape) != shape:
                fail_mismatch(f"{name} has the wrong shape for a batch of one", given=_describe(batch),
                              expected=f"shape {shape}", got=f"shape {tuple(value.shape)}",
                              cause="squeeze() dropped the batch dim; keep it, even for B = 1"
                              if value.dim() < len(shape) else None)
        _expect_collate(batch, got, "a batch of one")
    _expect_generated(student, draw_single, 40, "a batch of one")


def _loader_batches(student: Submission, items: Batch, batch_size: int, num_workers: int) -> list:
    call = f"DataLoader(dataset, batch_size={batch_size}, num_workers={num_workers}, collate_fn=pad_collate)"
    try:
        batches = student.scenario(through_dataloader, items, batch_size, num_workers)
    except StudentCodeError as exc:
        raise exc.within(f"iterating {call}") from None
    expected = -(-len(items) // batch_size)
    if not isinstance(batches, list) or len(batches) != expected:
        fail(f"{call} over {len(items)} items gave {len(batches) if isinstance(batches, list) else show(batches)} "
             f"batches; expected {expected}")
    return batches


@PAD_COLLATE.check(points=1)
def works_in_dataloader(student: Submission, device: torch.device) -> None:
    """DataLoader(dataset, batch_size=4, collate_fn=pad_collate) gives the right batches, in worker processes too."""
    items = _sequence_batch([3, 1, 4, 1, 5, 0, 2, 6, 5, 3], labels=[0, 1, 2, 300, 4, 5, 6, 7, 8, 2**33])
    for batch_size, num_workers in ((4, 0), (3, 1)):
        call = f"DataLoader(dataset, batch_size={batch_size}, num_workers={num_workers}, collate_fn=pad_collate)"
        batches = _loader_batches(student, items, batch_size, num_workers)
        for number, got in enumerate(batches):
            chunk = items[number * batch_size:(number + 1) * batch_size]
            _expect_collate(chunk, got, f"batch {number} of {call} is wrong", call=f"pad_collate for batch {number}")


@PAD_COLLATE.check(points=1)
def does_not_modify_inputs(student: Submission, device: torch.device) -> None:
    """The batch list, its items and their sequences are left as they were."""
    cases = [_sequence_batch([2, 5, 3, 0]), _sequence_batch([4, 1, 6], layouts=["strided", "column", "expanded"]),
             _sequence_batch([3, 0, 2], as_lists=True)]
    for batch in cases:
        saved = [(item[0].clone(), item[1]) for item in batch]
        try:
            seen = student.scenario(collate_watching, batch)
        except StudentCodeError as exc:
            raise exc.within(f"pad_collate({_describe(batch)})") from None
        _expect_unchanged(batch, seen, saved)
        _expect_collate(batch, seen["result"], "wrong result")  # unchanged inputs count only if something was done
    _expect_generated(student, draw_batch, 60, "the inputs must be left alone")


def _expect_unchanged(batch: Batch, seen: dict, saved: list | None = None) -> None:
    """The caller's list, its items and their sequences are as they were (``saved``: (sequence, label) copies
    taken before the call; by default ``batch`` itself, which the call never reached)."""
    saved = saved if saved is not None else [(item[0], item[1]) for item in batch]
    given = _describe(batch)
    origin = seen["origin"]
    if seen["length"] != len(batch) or origin != list(range(len(batch))):
        if seen["length"] != len(batch):
            how, cause = "items were added or removed", "batch.pop(...), batch.append(...) or del batch[i]"
        elif sorted(o for o in origin if o is not None) == list(range(len(batch))):
            how, cause = "items were reordered", "batch.sort(...) or batch.reverse()"
        else:
            how, cause = "items were replaced by new ones", "batch[i] = (padded_sequence, label)"
        fail(f"pad_collate changed the list it was given ({given}): its {how} (likely cause: {cause}; leave the "
             "caller's list alone: use sorted(...) or build a new list)")
    if seen["changed_items"]:
        fail(f"pad_collate changed the items of the list it was given ({given}): item {seen['changed_items'][0]} "
             "now holds other objects (likely cause: item[0] = ... on a [sequence, label] list; build new "
             "lists instead)")
    for index, (after, (before, _)) in enumerate(zip(seen["sequences"], saved)):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or not torch.equal(after, before):
            now = after.tolist() if isinstance(after, torch.Tensor) else show(after)
            fail(f"pad_collate changed an input sequence in place: sequence {index}, {before.tolist()}, became "
                 f"{now} (likely cause: resize_(), an in-place cat or a write into the sequence; build the "
                 "padded tensor in new memory and copy the sequences into it)")


# ==================================================================================================
# Generated batches: the specification's whole domain (issue 32)
# ==================================================================================================
# Each generated batch is described by plain data (lengths, values, layouts, item types, labels) and built
# identically in the judge and in the runner from that description; the runner returns what the student's
# pad_collate gave and what became of the caller's list; the judge compares with the specification.
GENERATED_LAYOUTS = ("contiguous", "strided", "column", "expanded", "offset", "row", "shared")
_INT64_MAX = 2**63 - 1


def _draw_values(rng: random.Random, length: int, kind: str) -> list[int]:
    """Token ids of one sequence: small ones with 0 among them (often last), non-zero ones, ids past int32 and
    float32's 2**24, negative ones, or the ends of int64."""
    if kind == "small":
        values = [rng.randint(0, 9) for _ in range(length)]
        if length and rng.random() < 0.5:
            values[-1] = 0  # a real token 0 at the end: the padding must not be mistaken for it
        return values
    if kind == "nonzero":
        return [rng.randint(1, 9) for _ in range(length)]
    if kind == "big":
        return [2**33 + rng.randint(0, 2**20) * 2**10 + 1 for _ in range(length)]
    if kind == "negative":
        return [rng.randint(-2**40, 9) for _ in range(length)]
    return [rng.choice([_INT64_MAX, -_INT64_MAX - 1, 2**62 + 1, 0, 1, -1]) for _ in range(length)]


def _draw_length(rng: random.Random) -> int:
    # (past 512 and 1024 too: a cap at a "maximum sequence length" the spec does not have cuts them)
    return domain.pick(rng, [0, 1, domain.small_int(rng, 0, 8), rng.randint(9, 40), rng.randint(100, 300),
                             rng.randint(500, 1100)], weights=[2, 2, 10, 2, 0.5, 0.3])


def draw_batch(rng: random.Random) -> dict:
    """A batch as the specification allows it: 1 to 33 items, each a 1-D int64 sequence of its own length (0 to 1100;
    all of them 0 too, ties and a unique longest anywhere), of any layout (non-contiguous, expanded, a view
    at an offset, the same storage as another item's), any int64 token (0, negative, past 2**31 and 2**53, the
    ends of int64), any int label, as tuples or [sequence, label] lists."""
    size = domain.pick(rng, [1, domain.small_int(rng, 1, 6), rng.randint(2, 12), 33], weights=[2, 6, 3, 0.3])
    shape = domain.pick(rng, ["any", "all_empty", "one_longest", "equal", "one_nonempty"], weights=[8, 1, 2, 1, 1])
    lengths = [_draw_length(rng) for _ in range(size)]
    if shape == "all_empty":
        lengths = [0] * size
    elif shape == "equal":
        lengths = [lengths[0]] * size
    elif shape == "one_nonempty":
        lengths = [0] * size
        lengths[rng.randrange(size)] = rng.randint(1, 9)
    elif shape == "one_longest":
        lengths[rng.randrange(size)] = max(lengths) + rng.randint(1, 5)
    kind = domain.pick(rng, ["small", "nonzero", "big", "negative", "extreme"], weights=[6, 3, 2, 1, 1])
    values = [_draw_values(rng, n, kind) for n in lengths]
    layouts = [domain.pick(rng, GENERATED_LAYOUTS, weights=[6, 2, 1, 1, 1, 1, 1]) for _ in lengths]
    for i, (layout, row) in enumerate(zip(layouts, values)):
        if layout == "expanded" and row:
            values[i] = [row[0]] * len(row)
        if layout == "shared":  # the very tensor of the item before (a batch may hold one sequence twice)
            values[i] = list(values[i - 1]) if i else values[i]
    label_kind = domain.pick(rng, ["small", "big", "negative"], weights=[6, 2, 1])
    labels = [rng.randint(0, 9) if label_kind == "small" else rng.randint(2**31, 2**62) if label_kind == "big"
              else rng.randint(-5, 5) for _ in lengths]
    container = domain.pick(rng, ["tuple", "list", "mixed"], weights=[5, 2, 1])
    items = [container if container != "mixed" else rng.choice(["tuple", "list"]) for _ in lengths]
    return {"values": values, "layouts": layouts, "labels": labels, "items": items}


def draw_with_empty(rng: random.Random) -> dict:
    """A generated batch in which some or all sequences are empty (length 0)."""
    description = draw_batch(rng)
    values = description["values"]
    chosen = [i for i in range(len(values)) if rng.random() < 0.5] or [rng.randrange(len(values))]
    for i in chosen:
        values[i] = []
    return description


def draw_single(rng: random.Random) -> dict:
    """A generated batch of one item."""
    description = draw_batch(rng)
    return {key: value[:1] for key, value in description.items()}


def batch_size(description: dict) -> tuple[int, int, int]:
    """How big a batch is, to report the smallest failing one: items, tokens, then how odd its values are."""
    values = description["values"]
    return (len(values), sum(map(len, values)),
            sum(abs(v) > 9 for row in values for v in row) + sum(abs(v) > 9 for v in description["labels"]))


def build_batch(description: dict) -> Batch:
    """The batch a description stands for (the same in the judge and in the runner). "shared": the sequence is
    the previous item's tensor itself (a contiguous one when it is the first)."""
    batch: Batch = []
    previous: torch.Tensor | None = None
    for row, layout, label, item in zip(description["values"], description["layouts"], description["labels"],
                                        description["items"]):
        n = len(row)
        values = torch.tensor(row, dtype=torch.long).reshape(n)
        if layout == "strided":
            base = torch.full((2 * n + 3,), 7, dtype=torch.long)
            base[3::2][:n] = values
            seq = base[3::2][:n]
        elif layout == "column":
            base = torch.full((n, 3), 7, dtype=torch.long)
            base[:, 1] = values
            seq = base[:, 1]
        elif layout == "expanded":
            seq = values[:1].expand(n) if n else values
        elif layout == "offset":
            base = torch.full((n + 5,), 7, dtype=torch.long)
            base[5:] = values
            seq = base[5:]
        elif layout == "row":
            base = torch.full((3, n), 7, dtype=torch.long)
            base[1] = values
            seq = base[1]
        elif layout == "shared" and previous is not None:
            seq = previous
        else:
            seq = values
        previous = seq
        batch.append([seq, label] if item == "list" else (seq, label))
    return batch


def _PackedTensor(dtype: str, shape: list[int], offset: int | None) -> tuple:
    return ("packed tensor", dtype, shape, offset)


def _is_packed(entry: Any) -> bool:
    return isinstance(entry, tuple) and len(entry) == 4 and entry[0] == "packed tensor"


class _Packer:
    """Tensors as (dtype, shape, offset) into one flat int64 tensor: what comes back is read by a pure-Python
    unpickler, for which one large tensor costs far less than many small ones or lists of ints."""

    def __init__(self) -> None:
        self.parts: list[torch.Tensor] = []
        self.used = 0

    def pack(self, value: Any) -> Any:
        if not (type(value) is torch.Tensor and value.layout == torch.strided and value.device.type == "cpu"):
            return value
        if value.dtype != torch.long:
            return _PackedTensor(str(value.dtype), list(value.shape), None)
        self.parts.append(value.detach().reshape(-1))
        self.used += value.numel()
        return _PackedTensor("torch.int64", list(value.shape), self.used - value.numel())

    def values(self) -> torch.Tensor:
        return torch.cat(self.parts) if self.parts else torch.zeros(0, dtype=torch.long)


def collate_generated(student: RunnerStudent, descriptions: list[dict], compact: bool = True) -> Any:
    """pad_collate on every described batch (built here), and what became of the caller's list each time;
    ``compact``: every int64 tensor packed into one (see :class:`_Packer`), returned as (observations, values)."""
    seen = []
    packer = _Packer()
    for description in descriptions:
        try:
            watched = collate_watching(student, build_batch(description))
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
            continue
        if compact:
            result = watched["result"]
            watched["result"] = (tuple(packer.pack(v) for v in result) if isinstance(result, (tuple, list))
                                 and len(result) == 3 else packer.pack(result))  # a named tuple or a list too
            watched["sequences"] = [packer.pack(v) for v in watched["sequences"]]
        seen.append(watched)
    return (seen, packer.values()) if compact else seen


def _unpacked(entry: Any, values: torch.Tensor) -> list | None:
    """The values of a packed int64 tensor as nested lists, or None when it was not one."""
    if not _is_packed(entry) or entry[3] is None:
        return None
    _, _, shape, offset = entry
    return values[offset:offset + math.prod(shape)].reshape(shape).tolist()


@judge_only
def _generated_verdict(batch: Batch, seen: dict, values: torch.Tensor) -> str | None:
    """What is wrong with the student's answer to ``batch`` ("raised", "types", "padded", "lengths", "labels",
    "inputs"), or None when it is the specification's."""
    if "raised" in seen:
        return "raised"
    got = seen["result"]
    rows, lengths, labels = _expected(batch)
    if type(got) is not tuple or len(got) != 3:  # three values (a tuple, a named tuple, a list) come as a tuple
        return "types"
    shapes = ([len(rows), len(rows[0]) if rows else 0], [len(lengths)], [len(labels)])
    for value, shape in zip(got, shapes):
        if _unpacked(value, values) is None or value[2] != shape:
            return "types"
    for value, expected, name in zip(got, (rows, lengths, labels), NAMES):
        if _unpacked(value, values) != expected:
            return name
    if seen["length"] != len(batch) or seen["origin"] != list(range(len(batch))) or seen["changed_items"]:
        return "inputs"
    for after, item in zip(seen["sequences"], batch):
        if _unpacked(after, values) != item[0].tolist() or after[2] != list(item[0].shape):
            return "inputs"
    return None


@judge_only
def _plain_verdict(batch: Batch, seen: dict) -> str | None:
    """:func:`_generated_verdict` of an observation whose tensors came back as they are."""
    if "raised" in seen:
        return "raised"
    packer = _Packer()
    got = seen["result"]
    packed = dict(seen, result=tuple(packer.pack(v) for v in got) if isinstance(got, (tuple, list)) and len(got) == 3
                  else packer.pack(got),
                  sequences=[packer.pack(v) for v in seen["sequences"]])
    return _generated_verdict(batch, packed, packer.values())


def _consistent_cause(failures: list[tuple[Batch, dict, str]]) -> bool:
    """A likely cause may be named only when every failing case gives the same one (numbers aside): one batch
    alone often fits several mistakes."""
    causes = set()
    for batch, seen, verdict in failures:
        got = seen.get("result")
        if verdict == "raised" or not isinstance(got, (tuple, list)) or len(got) != 3:
            return False
        if verdict == "types":  # the same types, dtypes and dims every time, and the same padding mistake
            cause = repr([(type(v).__name__, str(getattr(v, "dtype", "")), v.dim() if isinstance(v, torch.Tensor)
                           else None) for v in got])
            if isinstance(got[0], torch.Tensor):
                cause += f" {_padding_cause(batch, got[0].detach().cpu())}"
        elif verdict == "padded" and isinstance(got[0], torch.Tensor):
            cause = _collate_cause(batch, got[0].detach().cpu())
        elif verdict == "lengths" and isinstance(got[1], torch.Tensor) and isinstance(got[2], torch.Tensor):
            cause = _lengths_cause(batch, got[1].tolist(), got[2].tolist())
        else:
            cause = verdict
        causes.add(re.sub(r"-?\d+", "#", cause) if cause else None)
    return len(causes) == 1 and None not in causes


def _expect_generated(student: Submission, generate, count: int, what: str) -> None:
    """``count`` generated batches (one scenario call); the smallest failing one is reported in the student's
    terms, with the message its hand-written equivalent would give."""
    descriptions = domain.draw(generate, count, size=batch_size)
    batches = [build_batch(d) for d in descriptions]
    verdicts = []
    for first in range(0, len(descriptions), 100):  # a request each 100: each stays far within its time limit
        seen, values = student.scenario(collate_generated, descriptions[first:first + 100])
        verdicts += [_generated_verdict(b, s, values) for b, s in zip(batches[first:first + 100], seen)]
    failing = [v is not None for v in verdicts]
    if not any(failing):
        return
    # The failing cases again, with the student's values as they are (tensors, named tuples, ...): at most 40.
    chosen = sorted((i for i, bad in enumerate(failing) if bad), key=lambda i: batch_size(descriptions[i]))[:40]
    again = student.scenario(collate_generated, [descriptions[i] for i in chosen], False)
    failures = [(batches[i], s, _plain_verdict(batches[i], s)) for i, s in zip(chosen, again)]
    failures = [f for f in failures if f[2] is not None] or failures
    batch, observed, verdict = failures[0]
    heading = f"{what} (the smallest of {len(failures)} failing generated batches, out of {len(batches)})"
    if verdict == "raised":
        raise StudentCodeError(StudentError(**observed["raised"])).within(f"pad_collate({_describe(batch)})") from None
    named = _consistent_cause(failures)
    got = observed["result"]
    if verdict == "inputs":
        _expect_unchanged(batch, observed)
    if verdict == "types":
        _expect_types(batch, got, heading, causes=named)
    _expect_collate(batch, got, heading, causes=named)
    fail(f"{heading}: pad_collate({_describe(batch)}) returned a wrong answer (a grader error if you read this; "
         "please report it)")
