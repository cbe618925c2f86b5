"""sliding_window(x, size, step=1) -> a view of 1-D x whose rows are its windows, built with as_strided."""

from __future__ import annotations

import random
import re

import torch

from graders.compare import dtype_name, show, type_name
from graders.isolation import RunnerStudent
from graders.outcomes import StudentCodeError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission, expect_error
from graders.watch import torch_calls

SLIDING_WINDOW = exercise("sliding_window", chapter="01_tensors", names=["sliding_window"])


def _layout(x: torch.Tensor) -> str:
    return (f"a 1-D {dtype_name(x.dtype)} tensor of length {len(x)} with stride {x.stride(0)} "
            f"and storage offset {x.storage_offset()}")


def _strided_input(length: int, stride: int, offset: int, device: torch.device, dtype=torch.float32) -> torch.Tensor:
    """A 1-D view of length ``length`` taking every ``stride``-th element of a larger storage from ``offset``."""
    base = torch.arange(offset + max(length - 1, 0) * stride + 1 + 2, dtype=torch.float64)
    base = (base * 1.5 - 3).to(dtype) if dtype != torch.bool else (base.long() % 3 == 0)
    return base.to(device)[offset::stride][:length]


def _window_cause(x: torch.Tensor, size: int, step: int, got: torch.Tensor, expected: torch.Tensor) -> str | None:
    """Name the mistake when the student's view matches a known wrong construction."""
    if got.shape != expected.shape:
        if got.dim() == 2 and got.shape[1] == size and got.shape[0] == expected.shape[0] - 1:
            return "one row short: the number of windows is (len(x) - size) // step + 1"
        if got.dim() == 2 and got.shape[1] == size and got.shape[0] > expected.shape[0]:
            return ("too many rows: windows that would run past the end of x do not exist; the count is "
                    "(len(x) - size) // step + 1")
        if got.dim() == 2 and tuple(got.shape) == tuple(reversed(expected.shape)):
            return "shape is swapped: rows are windows, so the shape is (number of windows, size)"
        return None
    stride, offset = x.stride(0), x.storage_offset()
    wrong = {
        "x's storage offset was ignored (the view starts at storage element 0, not at x.storage_offset())":
            ((step * stride, stride), 0),
        "x's own stride was ignored: one element of x is x.stride(0) storage elements apart, so the strides "
        "are (step * x.stride(0), x.stride(0))": ((step, 1), offset),
        "both x's stride and its storage offset were ignored": ((step, 1), 0),
        "the stride along a window is 1, but consecutive elements of x are x.stride(0) storage elements apart: "
        "the strides are (step * x.stride(0), x.stride(0))": ((step * stride, 1), offset),
        "the storage offset was multiplied by x.stride(0); x.storage_offset() already counts storage elements, "
        "pass it as it is": ((step * stride, stride), offset * stride),
        "the row stride uses size instead of step: the next window starts step elements later, so the strides "
        "are (step * x.stride(0), x.stride(0))": ((size * stride, stride), offset),
        "the two strides are swapped: moving to the next window moves step elements, along a window 1 element":
            ((stride, step * stride), offset),
    }
    for cause, (strides, offset) in wrong.items():
        try:
            candidate = x.as_strided(expected.shape, strides, offset)
        except RuntimeError:  # that wrong view would run past the storage, so it cannot be what they built
            continue
        if not torch.equal(candidate, expected) and torch.equal(got, candidate):
            return cause
    return None


def _out_of_bounds_cause(error: str, x: torch.Tensor, size: int, step: int) -> str:
    """Read the layout the student asked as_strided for out of PyTorch's error, and name what is off."""
    found = re.search(r"sizes \[([\d, ]*)\], strides \[([\d, ]*)\], storage offset (\d+)", error)
    rows = (len(x) - size) // step + 1
    right = (step * x.stride(0), x.stride(0))
    if found:
        sizes = tuple(int(v) for v in found.group(1).split(",") if v.strip())
        strides = tuple(int(v) for v in found.group(2).split(",") if v.strip())
        if sizes == (rows, size) and strides == tuple(reversed(right)):
            return "the two strides are swapped: moving to the next window moves step elements, along a window 1"
        if sizes == (rows, size) and strides == (size * x.stride(0), x.stride(0)) and size != step:
            return ("the row stride uses size instead of step: the next window starts step elements later, so the "
                    f"strides are (step * x.stride(0), x.stride(0)) = {right}")
        if len(sizes) == 2 and sizes[0] > rows:
            return (f"too many rows ({sizes[0]}): windows that would run past the end of x do not exist; the count "
                    f"is (len(x) - size) // step + 1 = {rows}")
        if strides != right:
            return f"the strides {strides} reach past x; they should be (step * x.stride(0), x.stride(0)) = {right}"
    return "the view reaches past the end of x's storage: check the number of rows and the strides"


def _call_window(student: Submission, x: torch.Tensor, size: int, step: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``sliding_window(x, size, step)`` (``step=None``: left out); returns the result and the student's x.

    Both come back together, so a result that is a view of x still shares x's storage here.
    """
    args = (x, size) if step is None else (x, size, step)
    shown = f"size={size}" + (" (step left out: its default is 1)" if step is None else f", step={step}")
    step = 1 if step is None else step
    try:
        got, inputs, _ = student.call_with_inputs("sliding_window", *args)
    except StudentCodeError as exc:
        error = exc.error
        call = f"sliding_window(x = {_layout(x)}, {shown})"
        if error.kind == "raised" and "out of bounds" in error.exception_message:
            fail(f"{call} {error.describe()}\n"
                 f"  likely cause: {_out_of_bounds_cause(error.exception_message, x, size, step)}")
        if len(args) == 2 and error.exception_type == "TypeError" and "step" in error.exception_message:
            fail(f"{call} failed: {error.describe()}\n  likely cause: step has no default value; the signature is "
                 "sliding_window(x, size, step=1)")
        if error.is_instance(ValueError):
            fail(f"{call} failed: {error.describe()}\n  likely cause: these arguments are valid (1 <= size <= len(x), "
                 "step >= 1; a step longer than x gives a single window); raise ValueError only for a non-1-D x, "
                 "size < 1, step < 1 or size > len(x)")
        raise exc.within(call) from None
    if not isinstance(got, torch.Tensor):
        fail(f"sliding_window({_layout(x)}, size={size}, step={step}) returned {show(got)}, a {type_name(got)}; "
             "it must return a tensor (one view, not a list of row tensors)")
    return got, inputs[0]


def _expect_window(student: Submission, x: torch.Tensor, size: int, step: int | None,
                   what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Compare against ``unfold``, computed before the student's code runs; return (result, student's x)."""
    reference_x = x.clone()
    expected = reference_x.unfold(0, size, 1 if step is None else step).clone()
    given = f"x = {_layout(x)}, size={size}, " + ("step left out (its default is 1)" if step is None else f"step={step}")
    got, student_x = _call_window(student, x, size, step)
    if step is None:
        step = 1
    if tuple(got.shape) != tuple(expected.shape):
        fail_mismatch(what, given=given, expected=f"shape {tuple(expected.shape)}", got=f"shape {tuple(got.shape)}",
                       cause=_window_cause(x, size, step, got, expected))
    if got.device != x.device:
        fail(f"{what}\n  input: {given}\n  the result is on {got.device.type}, x on {x.device.type}: a view never "
             "changes device (likely cause: a copy made with .cpu() or torch.tensor(...))")
    if got.dtype != x.dtype or not torch.equal(got, expected):
        fail_mismatch(what, given=given, expected=f"{expected.cpu().tolist()}",
                       got=f"{got.detach().cpu().tolist()} ({dtype_name(got.dtype)})",
                       cause=_window_cause(x, size, step, got, expected))
    return got, student_x


def _expect_view_of(x: torch.Tensor, got: torch.Tensor, size: int, step: int, what: str) -> None:
    """Every element of ``got`` must be the storage element of x that it shows (a view, not a copy)."""
    given = f"x = {_layout(x)}, size={size}, step={step}"
    if got.numel() == 0:
        return
    if got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        start = x.untyped_storage().data_ptr()
        if got.device == x.device and start <= got.data_ptr() < start + x.untyped_storage().nbytes():
            fail(f"{what}\n  input: {given}\n  the result points into x's memory, but through its own storage "
                 "(likely cause: it was made outside PyTorch's view machinery, e.g. numpy's as_strided and "
                 "torch.from_numpy); build it with x.as_strided(...) so that it is a view of x's storage")
        fail(f"{what}\n  input: {given}\n  the result has its own storage: it is a copy, not a view of x\n"
             "  likely cause: torch.stack / torch.cat / clone() / contiguous() / a list of slices copy the data; "
             "build the result with x.as_strided(...) on x itself")
    rows, cols = got.shape
    for i in range(rows):
        for j in range(cols):
            at = got.storage_offset() + i * got.stride(0) + j * got.stride(1)
            want = x.storage_offset() + (i * step + j) * x.stride(0)
            if at != want:
                fail(f"{what}\n  input: {given}\n  element [{i}, {j}] of the result is storage element {at}, but "
                     f"x[{i * step + j}] is storage element {want}")


@SLIDING_WINDOW.check(points=1)
def contiguous_input(student: Submission, device: torch.device) -> None:
    """Windows of a plain contiguous tensor equal x.unfold(0, size, step)."""
    for length, size, step in [(10, 3, 1), (10, 4, 3), (9, 2, 2), (7, 7, 1), (6, 1, 1), (8, 3, None)]:
        x = torch.arange(length, dtype=torch.float32).to(device)
        _expect_window(student, x, size, step, "wrong windows for a contiguous input")


@SLIDING_WINDOW.check(points=1)
def is_a_view(student: Submission, device: torch.device) -> None:
    """The result shares x's storage: writing into it writes into x."""
    for length, size, step in [(10, 3, 1), (11, 4, 2)]:
        x = torch.arange(length, dtype=torch.float32).to(device)
        got, x = _expect_window(student, x, size, step, "wrong windows for a contiguous input")
        _expect_view_of(x, got, size, step, "the result must be a view of x")
        got[-1, -1] = -100.0  # both came back from the student's process together: sharing survives
        last = (got.shape[0] - 1) * step + size - 1
        if x[last].item() != -100.0:
            fail(f"writing -100 into result[-1, -1] did not change x[{last}]; the result must be a view of x "
                 "(likely cause: a copy somewhere, e.g. clone(), contiguous() or torch.stack)")


@SLIDING_WINDOW.check(points=1)
def strided_input(student: Submission, device: torch.device) -> None:
    """Inputs with a stride other than 1 (x = base[::k]) give the right windows, still as views."""
    for length, stride, size, step in [(6, 3, 2, 1), (8, 2, 3, 2), (5, 4, 5, 1)]:
        x = _strided_input(length, stride, 0, device)
        got, x = _expect_window(student, x, size, step, "wrong windows for a strided input")
        _expect_view_of(x, got, size, step, "for a strided input the result must still be a view of x")


@SLIDING_WINDOW.check(points=1)
def validation(student: Submission, device: torch.device) -> None:
    """ValueError for a non-1-D x, size < 1, step < 1 and size > len(x)."""
    x = torch.arange(6.0).to(device)
    cases = [
        (torch.arange(12.0).reshape(3, 4).to(device), 2, 1, "x is 2-D"),
        (torch.tensor(3.0).to(device), 1, 1, "x is 0-d"),
        (x, 0, 1, "size is 0"),
        (x, -2, 1, "size is negative"),
        (x, 2, 0, "step is 0"),
        (x, 2, -1, "step is negative"),
        (x, 7, 1, "size is larger than len(x)"),
    ]
    for tensor, size, step, why in cases:
        dim_cause = ("len(x), x.stride(0) or x.shape[0] was used before checking x.dim() == 1; check the number of "
                     "dims first") if tensor.dim() != 1 else None
        expect_error(student, ValueError, "sliding_window", (tensor.clone(), size, step),
                     call=f"sliding_window(x of shape {tuple(tensor.shape)}, size={size}, step={step})", why=why,
                     other_error_cause=dim_cause)
    # Valid arguments next to the invalid ones must not raise: raising every time is not validation.
    _expect_window(student, x, 6, 1, "wrong windows for valid arguments")
    _expect_window(student, x, 1, 7, "wrong windows for valid arguments")


@SLIDING_WINDOW.check(points=1)
def storage_offset(student: Submission, device: torch.device) -> None:
    """Inputs that start inside their storage (x = base[k:], base[k::s]) give the right windows."""
    for length, stride, offset, size, step in [(6, 1, 4, 2, 1), (5, 2, 3, 2, 2), (7, 3, 1, 3, 1)]:
        x = _strided_input(length, stride, offset, device)
        got, x = _expect_window(student, x, size, step, "wrong windows for an input with a storage offset")
        _expect_view_of(x, got, size, step, "for an input with a storage offset the result must be a view of x")


@SLIDING_WINDOW.check(points=1)
def edge_sizes(student: Submission, device: torch.device) -> None:
    """Edge cases: size == len(x), size 1, a step longer than x, a length-1 x, a stride-0 (expanded) x."""
    cases = [
        (torch.arange(5.0), 5, 1),
        (torch.arange(5.0), 5, 3),
        (torch.arange(5.0), 1, 1),
        (torch.arange(5.0), 1, 2),
        (torch.arange(8.0), 3, 10),
        (torch.tensor([4.0]), 1, 1),
        (torch.tensor([2.5]).expand(6), 3, 2),
    ]
    for x, size, step in cases:
        x = x.to(device)
        got, x = _expect_window(student, x, size, step, "wrong windows at an edge case")
        _expect_view_of(x, got, size, step, "at an edge case the result must still be a view of x")


def _window_calls(student: RunnerStudent, x: torch.Tensor, size: int, step: int) -> list[str]:
    """In the student's process: the torch functions sliding_window calls."""
    with torch_calls() as calls:
        student.call("sliding_window", x, size, step)
    return list(calls.names)


@SLIDING_WINDOW.check(points=1)
def does_not_call_unfold(student: Submission, device: torch.device) -> None:
    """The view is built with as_strided, not with unfold."""
    x = torch.arange(10.0).to(device)
    _expect_window(student, x, 3, 2, "wrong windows for a contiguous input")
    try:
        names = student.scenario(_window_calls, x, 3, 2)
    except StudentCodeError as exc:
        raise exc.within("sliding_window(x, 3, 2)") from None
    if "unfold" in names:
        fail("sliding_window called Tensor.unfold; the exercise is to build the same view yourself with "
             "x.as_strided(size, stride, storage_offset)")


@SLIDING_WINDOW.check(points=1)
def random_layouts_and_dtypes(student: Submission, device: torch.device) -> None:
    """Random lengths, strides, offsets, sizes, steps and dtypes agree with unfold, as views."""
    rng = random.Random(7)
    dtypes = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool,
              torch.float16, torch.bfloat16, torch.complex64]
    cases = []
    for _ in range(60):
        length = rng.randint(1, 12) if rng.random() < 0.8 else rng.randint(257, 600)
        x = _strided_input(length, rng.randint(1, 4), rng.randint(0, 5), device, dtype=rng.choice(dtypes))
        size = rng.randint(1, length)
        cases.append((x, size, rng.randint(1, length + 1)))
    for x, size, step in cases:
        got, x = _expect_window(student, x, size, step, "wrong windows")
        _expect_view_of(x, got, size, step, "the result must be a view of x")
