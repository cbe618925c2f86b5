"""sliding_window(x, size, step=1) -> a view of 1-D x whose rows are its windows, built with as_strided.

Inputs cover every layout the specification allows: contiguous, strided (x = base[::k], a column of a
matrix), with a storage offset, expanded (stride 0), length 1 and long, every dtype. Each result is
compared with ``x.unfold`` computed in the judge, then checked to be a view: every element must be the
very storage element of x it shows. A likely cause is named only when the evidence singles it out: the
layout of a wrong result that is a view of x (its own strides and storage offset), or the layout the
student's code asked ``as_strided`` for when that call failed (recorded in the runner), is compared
with the right one and each difference is stated, named where it has a name; a wrong result that is a
copy is named only when its values equal what exactly one known wrong construction gives.
"""

from __future__ import annotations

import dataclasses
import random
from typing import NoReturn

import torch
from torch.overrides import TorchFunctionMode

from graders import wire
from graders.compare import dtype_name, show, show_number, show_tensor, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission
from graders.watch import torch_calls
from graders.wire import Foreign

SLIDING_WINDOW = exercise("sliding_window", chapter="01_tensors", names=["sliding_window"])

_VALID = ("these arguments are valid (1 <= size <= len(x), step >= 1; a step longer than x gives a single window, "
          "a step longer than size skips elements); raise ValueError only for a non-1-D x, size < 1, step < 1 or "
          "size > len(x)")
_COPY_CAUSE = ("torch.stack / torch.cat / clone() / contiguous() / reshape() of a non-contiguous x / a list of slices "
               "copy the data; build the result with x.as_strided(...) on x itself")


def _layout(x: torch.Tensor) -> str:
    return (f"a 1-D {dtype_name(x.dtype)} tensor of length {len(x)} with stride {x.stride(0)} "
            f"and storage offset {x.storage_offset()}")


def _strided_input(length: int, stride: int, offset: int, device: torch.device, dtype=torch.float32) -> torch.Tensor:
    """A 1-D view of length ``length`` taking every ``stride``-th element of a larger storage from ``offset``."""
    base = torch.arange(offset + max(length - 1, 0) * stride + 1 + 2, dtype=torch.float64)
    if dtype == torch.bool:
        base = base.long() % 3 == 0
    elif dtype.is_complex:
        base = torch.complex(base * 1.5 - 3, base * 0.5 + 1).to(dtype)  # conj() or .real must show
    else:
        base = (base * 1.5 - 3).to(dtype)
    return base.to(device)[offset::stride][:length]


def _expanded_input(length: int, offset: int, device: torch.device, dtype=torch.float32) -> torch.Tensor:
    """A stride-0 x: one storage element (at ``offset``) shown ``length`` times."""
    base = _strided_input(offset + 2, 1, 0, device, dtype)
    return base[offset:offset + 1].expand(length)


def _column(rows: int, cols: int, j: int, device: torch.device) -> torch.Tensor:
    """Column ``j`` of a (rows, cols) matrix: stride ``cols``, storage offset ``j``."""
    return (torch.arange(rows * cols, dtype=torch.float32) * 0.5 + 1).reshape(rows, cols).to(device)[:, j]


def _described(x: torch.Tensor, size: int, step: int | None) -> str:
    shown = "step left out (its default is 1)" if step is None else f"step={step}"
    return f"x = {_layout(x)}, size={size}, {shown}"


# -- what the student's code asked as_strided for (recorded in the runner, when a call failed) -------
def _ints(value) -> tuple[int, ...] | None:
    try:
        return tuple(int(v) for v in value)
    except Exception:  # noqa: BLE001 - an odd argument: nothing to diagnose from
        return None


def _int(value) -> int | None:
    try:
        return None if value is None else int(value)
    except Exception:  # noqa: BLE001
        return None


class _AsStridedRequests(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name not in ("as_strided", "as_strided_"):
            return func(*args, **kwargs)

        def arg(i, key):
            return kwargs[key] if key in kwargs else (args[i] if len(args) > i else None)

        request = {"size": _ints(arg(1, "size")), "stride": _ints(arg(2, "stride")),
                   "offset": _int(arg(3, "storage_offset")), "raised": True}
        self.requests.append(request)
        result = func(*args, **kwargs)
        request["raised"] = False
        return result


def _as_strided_requests(student: RunnerStudent, x: torch.Tensor, size: int, step: int) -> list[dict]:
    """In the student's process: the layouts sliding_window asks as_strided for (and which one failed)."""
    recorder = _AsStridedRequests()
    with recorder:
        try:
            student.call("sliding_window", x, size, step)
        except StudentRaised:
            pass
    return recorder.requests


def _layout_cause(sizes, strides, offset, x: torch.Tensor, size: int, step: int) -> str | None:
    """Name what differs between a layout (sizes, strides, storage offset) and the right one.

    Each part is a fact about the layout, named where it has a name; strides of size-1 dims do not count.
    """
    s, right_offset = x.stride(0), x.storage_offset()
    rows = (len(x) - size) // step + 1
    right_sizes, right_strides = (rows, size), (step * s, s)
    if sizes is None or strides is None or len(sizes) != len(strides):
        return None
    offset = right_offset if offset is None else offset  # as_strided keeps x's storage offset by default
    found = []
    if sizes != right_sizes:
        if len(sizes) == 2 and sizes[1] == size and sizes[0] > rows and step > 1 and sizes[0] == len(x) - size + 1:
            found.append(f"too many rows ({sizes[0]}): the number of windows ignores step; it is "
                         f"(len(x) - size) // step + 1 = {rows}")
        elif len(sizes) == 2 and sizes[1] == size and sizes[0] > rows:
            found.append(f"too many rows ({sizes[0]}): windows that would run past the end of x do not exist; the "
                         f"count is (len(x) - size) // step + 1 = {rows}")
        elif sizes == (rows - 1, size):
            found.append(f"one row short ({rows - 1} windows): the number of windows is (len(x) - size) // step + 1 = "
                         f"{rows}")
        elif sizes == (size, rows):
            found.append("the shape is swapped: rows are windows, so the shape is (number of windows, size)")
        else:
            found.append(f"the shape is {sizes}, but the windows make (number of windows, size) = {right_sizes}")
    elif any(n > 1 and a != b for n, a, b in zip(sizes, strides, right_strides)):
        if strides == (s, step * s):
            found.append("the two strides are swapped: moving to the next window moves step elements, along a "
                         "window 1 element")
        elif s == 0:
            found.append(f"x is expanded (stride 0: every element of x is the same storage element), so the strides "
                         f"are (step * x.stride(0), x.stride(0)) = (0, 0), not {strides}")
        elif strides == (size * s, s) and size != step:
            found.append("the row stride uses size instead of step: the next window starts step elements later, so "
                         f"the strides are (step * x.stride(0), x.stride(0)) = {right_strides}")
        elif strides == (step, 1):
            found.append("x's own stride was ignored: one element of x is x.stride(0) storage elements apart, so the "
                         f"strides are (step * x.stride(0), x.stride(0)) = {right_strides}")
        elif strides == (step * s, 1):
            found.append("the stride along a window is 1, but consecutive elements of x are x.stride(0) storage "
                         f"elements apart: the strides are (step * x.stride(0), x.stride(0)) = {right_strides}")
        else:
            found.append(f"the strides are {strides}; they should be (step * x.stride(0), x.stride(0)) = "
                         f"{right_strides}")
    if offset != right_offset:
        if offset == 0 and s != 0:  # (for an expanded x, 0 is also the offset times x.stride(0): no name)
            found.append("x's storage offset was ignored (the view starts at storage element 0, not at "
                         f"x.storage_offset() = {right_offset})")
        elif offset == right_offset * s and s not in (0, 1):
            found.append("the storage offset was multiplied by x.stride(0); x.storage_offset() already counts storage "
                         "elements, pass it as it is")
        else:
            found.append(f"the storage offset is {offset}; it should be x.storage_offset() = {right_offset}")
    return "; ".join(found) or None


# -- calling the student's function, and what a failed call tells -----------------------------------
def _call_text(x: torch.Tensor, size: int, step: int | None, keywords: bool) -> str:
    if step is None:
        return f"sliding_window(x = {_layout(x)}, size={size}) (step left out: its default is 1)"
    return (f"sliding_window(x = {_layout(x)}, size={size}, step={step})" if not keywords else
            f"sliding_window(x = {_layout(x)}, size={size}, step={step}), with size and step passed by name")


def _works(student: Submission, x: torch.Tensor, size: int, step: int) -> bool:
    """Whether the same call, with every argument given by position, returns a tensor."""
    try:
        return isinstance(student.call("sliding_window", x, size, step), torch.Tensor)
    except StudentCodeError as exc:
        if exc.error.kind != "raised":
            raise exc.within(_call_text(x, size, step, False)) from None
        return False


def _explain_error(student: Submission, x: torch.Tensor, size: int, step: int | None, keywords: bool,
                   error: StudentError) -> NoReturn:
    """Fail with the student's error on a valid call, and a cause when the evidence names one."""
    call = _call_text(x, size, step, keywords)
    described = StudentCodeError(error, call)
    if error.kind != "raised":
        raise described
    cause = None
    if step is None and error.exception_type == "TypeError" and _works(student, x, size, 1):
        cause = "step has no default value; the signature is sliding_window(x, size, step=1)"
    elif keywords and error.exception_type == "TypeError" and _works(student, x, size, step):
        cause = ("the parameters must have the names the specification gives them, sliding_window(x, size, step=1): "
                 "the same call with the arguments by position works")
    elif error.is_instance(ValueError):
        cause = _VALID
    else:
        try:
            requests = student.scenario(_as_strided_requests, x, size, 1 if step is None else step)
        except StudentCodeError:
            requests = []
        failed = [r for r in requests if r["raised"]]
        if failed:
            request = failed[-1]
            found = _layout_cause(request["size"], request["stride"], request["offset"], x, size,
                                  1 if step is None else step)
            cause = f"as_strided was asked for a view that reaches past x's storage: {found}" if found else None
    if cause is None:
        raise described
    fail(f"{described.describe()}\n  likely cause: {cause}")


def _windows_of_each(student: RunnerStudent, cases: list) -> list:
    """In the student's process: sliding_window on each case ``(x, size, step, by_name)`` (``step=None``: left
    out); what it returned or raised, with x as the call left it.

    The results and the inputs are sent back together, so a view still shares its x's storage. A result that
    cannot travel with its x (a view of x's memory as another dtype, say) is replaced by what can be said of it.
    """
    seen = []
    for x, size, step, by_name in cases:
        try:
            if by_name:
                got = student.call("sliding_window", x, size=size, step=step)
            else:
                got = student.call("sliding_window", *((x, size) if step is None else (x, size, step)))
        except StudentRaised as exc:
            seen.append({"error": dataclasses.asdict(exc.error), "x": x})
            continue
        one = {"got": got, "x": x}
        try:
            wire.to_bytes(wire.encode(one))
        except Exception as exc:  # noqa: BLE001 - torch.save refused the pair: say what it was instead
            one = {"unsendable": f"{type(exc).__name__}: {exc}", "x": x,
                   "dtype": dtype_name(got.dtype) if isinstance(got, torch.Tensor) else None,
                   "type": type(got).__qualname__}
        seen.append(one)
    return seen


def _observe(student: Submission, cases: list) -> list:
    try:
        return student.scenario(_windows_of_each, cases)
    except StudentCodeError as exc:
        if len(cases) == 1:
            x, size, step, by_name = cases[0]
            raise exc.within(_call_text(x, size, step, by_name)) from None
        raise exc.within(f"sliding_window on {len(cases)} random inputs") from None


def _result_of(student: Submission, x: torch.Tensor, size: int, step: int | None, by_name: bool,
               seen: dict) -> tuple[object, torch.Tensor]:
    """The result and the student's x from one observation; fails (with what the evidence says) otherwise."""
    if "error" in seen:
        _explain_error(student, x, size, step, by_name, StudentError(**seen["error"]))
    if "unsendable" in seen:
        if seen["dtype"] is not None and seen["dtype"] != dtype_name(x.dtype):
            fail(f"{_call_text(x, size, step, by_name)} returned a {seen['dtype']} tensor that shares x's memory; "
                 f"x is {dtype_name(x.dtype)}: a view keeps x's dtype (likely cause: .view(dtype) reinterprets "
                 "x's bytes as another type)")
        fail(f"{_call_text(x, size, step, by_name)} returned a {seen['type']} that cannot be sent back for grading "
             f"({seen['unsendable']}); it must return a tensor, a view of x")
    return seen["got"], seen["x"]


def _call_window(student: Submission, x: torch.Tensor, size: int, step: int | None,
                 keywords: bool = False) -> tuple[object, torch.Tensor]:
    """``sliding_window(x, size[, step])`` (``step=None``: left out); returns the result and the student's x.

    Both come back together, so a result that is a view of x still shares x's storage here.
    """
    (seen,) = _observe(student, [(x, size, step, keywords)])
    return _result_of(student, x, size, step, keywords, seen)


def _shares_storage(got: torch.Tensor, student_x: object) -> bool:
    return (isinstance(student_x, torch.Tensor) and got.device == student_x.device
            and got.untyped_storage().data_ptr() == student_x.untyped_storage().data_ptr())


def _window_cause(x: torch.Tensor, size: int, step: int, got: torch.Tensor, expected: torch.Tensor,
                  student_x: object) -> str | None:
    """Name the mistake: from the result's own layout when it is a view of x, else when its values equal what
    exactly one known wrong construction gives."""
    if _shares_storage(got, student_x) and got.dim() == 2:
        return _layout_cause(tuple(got.shape), got.stride(), got.storage_offset(), x, size, step)
    if got.shape != expected.shape:
        if got.dim() == 2 and got.shape[1] == size and got.shape[0] == expected.shape[0] - 1:
            return "one row short: the number of windows is (len(x) - size) // step + 1"
        if got.dim() == 2 and got.shape[1] == size and got.shape[0] > expected.shape[0]:
            return ("too many rows: windows that would run past the end of x do not exist; the count is "
                    "(len(x) - size) // step + 1")
        if got.dim() == 2 and tuple(got.shape) == tuple(reversed(expected.shape)):
            return "the shape is swapped: rows are windows, so the shape is (number of windows, size)"
        return None
    stride, offset = x.stride(0), x.storage_offset()
    candidates = [((step * stride, stride), 0), ((step, 1), offset), ((step, 1), 0), ((step * stride, 1), offset),
                  ((step * stride, stride), offset * stride), ((size * stride, stride), offset),
                  ((stride, step * stride), offset)]
    matches = set()
    for strides, start in dict.fromkeys(candidates):  # the same layout listed twice is one construction
        try:
            candidate = x.as_strided(expected.shape, strides, start)
        except RuntimeError:  # that wrong view would run past the storage, so it cannot be what they built
            continue
        if not torch.equal(candidate, expected) and torch.equal(got, candidate):
            matches.add(_layout_cause(tuple(expected.shape), strides, start, x, size, step))
    return matches.pop() if len(matches) == 1 else None


def _judge_window(x: torch.Tensor, size: int, step: int | None, got: object, student_x: torch.Tensor | None,
                  what: str) -> None:
    """Compare with ``x.unfold`` (x is the judge's own copy: the student's code never touched it)."""
    given = _described(x, size, step)
    step = 1 if step is None else step
    expected = x.unfold(0, size, step)
    if not isinstance(got, torch.Tensor):
        if isinstance(got, Foreign) and type_name(got) == "Tensor":
            fail(f"sliding_window({_layout(x)}, size={size}, step={step}) returned a tensor that is not a plain "
                 f"(strided) tensor: {show(got)}; it must return a view of x, as x.as_strided(...) makes")
        cause = " (likely cause: no return statement)" if got is None else ""
        fail(f"sliding_window({_layout(x)}, size={size}, step={step}) returned {show(got)}, a {type_name(got)}; "
             f"it must return a tensor (one view, not a list of row tensors){cause}")
    if isinstance(student_x, torch.Tensor):
        layout = (tuple(student_x.shape), student_x.stride(), student_x.storage_offset())
        if layout != (tuple(x.shape), x.stride(), x.storage_offset()):
            fail(f"{what}\n  input: {given}\n  sliding_window changed x itself: before the call x had shape "
                 f"{tuple(x.shape)}, strides {x.stride()} and storage offset {x.storage_offset()}; after it, shape "
                 f"{layout[0]}, strides {layout[1]} and storage offset {layout[2]}\n  likely cause: an in-place "
                 "method such as as_strided_(), resize_() or set_() changes x's own layout; x.as_strided(...) "
                 "returns a new view and leaves x as it was")
        if student_x.dtype == x.dtype and not torch.equal(student_x, x):
            i = int((student_x != x).nonzero()[0, 0])
            fail(f"{what}\n  input: {given}\n  sliding_window wrote into x: x[{i}] was "
                 f"{show_number(x[i].item())} before the call and {show_number(student_x[i].item())} after it; "
                 "building a view must not change any value of x")
    if tuple(got.shape) != tuple(expected.shape):
        fail_mismatch(what, given=given, expected=f"shape {tuple(expected.shape)}", got=f"shape {tuple(got.shape)}",
                      cause=_window_cause(x, size, step, got, expected, student_x))
    if got.device != x.device:
        fail(f"{what}\n  input: {given}\n  the result is on {got.device.type}, x on {x.device.type}: a view never "
             "changes device (likely cause: a copy made with .cpu() or torch.tensor(...))")
    if got.dtype != x.dtype:
        fail(f"{what}\n  input: {given}\n  the result's dtype is {dtype_name(got.dtype)}, x's is "
             f"{dtype_name(x.dtype)}: a view keeps x's dtype (likely cause: a conversion such as .float(), .long() "
             "or .to(...), which also copies the data)")
    if not torch.equal(got, expected):
        i, j = (int(v) for v in (got != expected).nonzero()[0])
        small = expected.numel() <= 24
        fail_mismatch(what, given=given,
                      expected=f"{expected.cpu().tolist()}" if small else show_tensor(expected),
                      got=f"{got.cpu().tolist()}" if small else show_tensor(got),
                      where=(f"element [{i}, {j}] (x[{i * step + j}]): expected {show_number(expected[i, j].item())}, "
                             f"returned {show_number(got[i, j].item())}"),
                      cause=_window_cause(x, size, step, got, expected, student_x))


def _memory_of_result(student: RunnerStudent, x: torch.Tensor, size: int, step: int) -> dict:
    """In the student's process: whether the result points into x's memory (the judge saw its own storage)."""
    got = student.call("sliding_window", x, size, step)
    if not isinstance(got, torch.Tensor) or got.device != x.device:
        return {"inside": False}
    start, end = x.untyped_storage().data_ptr(), x.untyped_storage().data_ptr() + x.untyped_storage().nbytes()
    return {"inside": start <= got.data_ptr() < end}


def _expect_view_of(x: torch.Tensor, got: torch.Tensor, size: int, step: int, what: str,
                    student: Submission | None = None) -> None:
    """Every element of ``got`` must be the storage element of x that it shows (a view, not a copy)."""
    given = _described(x, size, step)
    if got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        # Memory shared outside PyTorch's view machinery is lost on the way back: ask in the student's process.
        try:
            inside = student is not None and student.scenario(_memory_of_result, x, size, step)["inside"]
        except StudentCodeError:
            inside = False
        if inside:
            fail(f"{what}\n  input: {given}\n  the result points into x's memory, but through its own storage "
                 "(likely cause: it was made outside PyTorch's view machinery, e.g. numpy's as_strided and "
                 "torch.from_numpy); build it with x.as_strided(...) so that it is a view of x's storage")
        fail(f"{what}\n  input: {given}\n  the result has its own storage: it is a copy, not a view of x\n"
             f"  likely cause: {_COPY_CAUSE}")
    rows, cols = got.shape
    i, j = torch.arange(rows).unsqueeze(1), torch.arange(cols).unsqueeze(0)
    at = got.storage_offset() + i * got.stride(0) + j * got.stride(1)
    want = x.storage_offset() + (i * step + j) * x.stride(0)
    wrong = (at != want).nonzero()
    if len(wrong):
        i, j = (int(v) for v in wrong[0])
        fail(f"{what}\n  input: {given}\n  element [{i}, {j}] of the result is storage element {int(at[i, j])}, but "
             f"x[{i * step + j}] is storage element {int(want[i, j])}")


def _expect_window(student: Submission, x: torch.Tensor, size: int, step: int | None, what: str, *,
                   view: bool = True, keywords: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The result must equal ``x.unfold(0, size, step)`` (and, with ``view``, be a view of x)."""
    got, student_x = _call_window(student, x, size, step, keywords)
    _judge_window(x, size, step, got, student_x, what)
    if view:
        _expect_view_of(student_x, got, size, 1 if step is None else step,
                        "the result must be a view of x (sharing its storage)", student)
    return got, student_x


@SLIDING_WINDOW.check(points=1)
def contiguous_input(student: Submission, device: torch.device) -> None:
    """Windows of a plain contiguous tensor equal x.unfold(0, size, step)."""
    for length, size, step in [(10, 3, 1), (10, 4, 3), (9, 2, 2), (7, 7, 1), (6, 1, 1), (8, 3, None)]:
        x = torch.arange(length, dtype=torch.float32).to(device)
        _expect_window(student, x, size, step, "wrong windows for a contiguous input", view=False)
    # An int64 x, and size and step passed by name (the signature is sliding_window(x, size, step=1)).
    _expect_window(student, torch.arange(300, 311).to(device), 4, 3, "wrong windows for a contiguous input",
                   view=False)
    _expect_window(student, torch.arange(12.0).to(device), 5, 2, "wrong windows for a contiguous input",
                   view=False, keywords=True)


@SLIDING_WINDOW.check(points=1)
def is_a_view(student: Submission, device: torch.device) -> None:
    """The result shares x's storage: writing into it writes into x."""
    for x, size, step in [(torch.arange(10.0), 3, 1), (torch.arange(11.0), 4, 2), (_column(5, 3, 1, "cpu"), 2, 2)]:
        x = x.to(device)
        got, x = _expect_window(student, x, size, step, "wrong windows")
        got[-1, -1] = -100.0  # both came back from the student's process together: sharing survives
        last = (got.shape[0] - 1) * step + size - 1
        if x[last].item() != -100.0:
            fail(f"writing -100 into result[-1, -1] did not change x[{last}]; the result must be a view of x "
                 "(likely cause: a copy somewhere, e.g. clone(), contiguous() or torch.stack)")


@SLIDING_WINDOW.check(points=1)
def strided_input(student: Submission, device: torch.device) -> None:
    """Inputs with a stride other than 1 (x = base[::k], a matrix column) give the right windows, still as views."""
    for length, stride, size, step in [(6, 3, 2, 1), (8, 2, 3, 2), (5, 4, 5, 1), (9, 2, 3, 3), (7, 3, 2, 4)]:
        _expect_window(student, _strided_input(length, stride, 0, device), size, step,
                       "wrong windows for a strided input")
    _expect_window(student, _column(6, 4, 0, device), 3, 1, "wrong windows for a column of a matrix")


@SLIDING_WINDOW.check(points=1)
def validation(student: Submission, device: torch.device) -> None:
    """ValueError for a non-1-D x, size < 1, step < 1 and size > len(x)."""
    x = torch.arange(6.0).to(device)
    cases = {  # label: (x, size, step, why it must raise)
        "2-D": (torch.arange(12.0).reshape(3, 4).to(device), 2, 1, "x is 2-D"),
        "1x6": (torch.arange(6.0).reshape(1, 6).to(device), 2, 1, "x is 2-D (of shape (1, 6))"),
        "0-d": (torch.tensor(3.0).to(device), 1, 1, "x is 0-d"),
        "size 0": (x, 0, 1, "size is 0"),
        "size < 0": (x, -2, 1, "size is negative"),
        "step 0": (x, 2, 0, "step is 0"),
        "step < 0": (x, 2, -1, "step is negative"),
        "size > len": (x, 7, 1, "size is larger than len(x)"),
        "size > len, large": (torch.arange(257.0).to(device), 258, 1, "size is larger than len(x) = 257"),
        "size > len, strided": (_strided_input(5, 2, 0, device), 6, 1,
                                "size is larger than len(x) = 5 (x = base[::2]: its storage holds more elements "
                                "than x, but only len(x) count)"),
        "empty": (torch.empty(0).to(device), 1, 1, "x is empty, so any size is larger than len(x) = 0"),
    }
    outcomes = {}
    for label, (tensor, size, step, why) in cases.items():
        shown_x = _layout(tensor) if tensor.dim() == 1 else f"a tensor of shape {tuple(tensor.shape)}"
        call = f"sliding_window(x = {shown_x}, size={size}, step={step})"
        try:
            outcomes[label] = (call, why, student.call("sliding_window", tensor, size, step), None)
        except StudentCodeError as exc:
            if exc.error.kind != "raised":
                raise exc.within(call) from None
            outcomes[label] = (call, why, None, exc.error)
    raised = {label: error is not None and error.is_instance(ValueError)
              for label, (_, _, _, error) in outcomes.items()}
    for label, (call, why, got, error) in outcomes.items():
        if raised[label]:
            continue
        cause = None
        if label == "0-d" and raised["2-D"]:
            cause = ("len(x), x.stride(0) or x.shape[0] was used before checking x.dim() == 1 (they fail on a 0-d x, "
                     "while a 2-D x reaches the dim check); check the number of dims first")
        elif label in ("size < 0", "step < 0") and raised[label.replace("< 0", "0")]:
            name = label.split()[0]
            cause = f"the check catches {name} == 0 but not a negative {name}: test {name} < 1"
        elif label == "size > len, strided" and raised["size > len"]:
            cause = ("size was compared with something other than len(x), such as the number of elements in x's "
                     "storage: x = base[::2] has 5 elements in a longer storage; compare size with len(x)")
        if error is None:
            shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
            likely = cause or "a missing check at the top of the function"
            fail(f"{call} returned {shown}; it must raise ValueError because {why} (likely cause: {likely})")
        if cause is None:
            cause = ("assert raises AssertionError; raise ValueError(...) instead" if error.exception_type ==
                     "AssertionError" else "the specification asks for ValueError; raise ValueError(...) there")
        fail(f"{call} must raise ValueError because {why}, but it {error.describe()}\n  likely cause: {cause}")
    # Valid arguments next to the invalid ones must not raise: raising every time is not validation.
    _expect_window(student, x, 6, 1, "wrong windows for valid arguments", view=False)
    _expect_window(student, x, 1, 7, "wrong windows for valid arguments", view=False)


@SLIDING_WINDOW.check(points=1)
def storage_offset(student: Submission, device: torch.device) -> None:
    """Inputs that start inside their storage (x = base[k:], base[k::s], a matrix column) give the right windows."""
    for length, stride, offset, size, step in [(6, 1, 4, 2, 1), (5, 2, 3, 2, 2), (7, 3, 1, 3, 1), (4, 1, 7, 4, 1)]:
        _expect_window(student, _strided_input(length, stride, offset, device), size, step,
                       "wrong windows for an input with a storage offset")
    _expect_window(student, _column(5, 4, 3, device), 2, 1, "wrong windows for a column of a matrix")


@SLIDING_WINDOW.check(points=1)
def edge_sizes(student: Submission, device: torch.device) -> None:
    """Edge cases: size == len(x), size 1, a step longer than x, a length-1 x, a stride-0 (expanded) x."""
    cases = [
        (torch.arange(5.0).to(device), 5, 1),
        (torch.arange(5.0).to(device), 5, 3),
        (torch.arange(5.0).to(device), 1, 1),
        (torch.arange(5.0).to(device), 1, 2),
        (torch.arange(8.0).to(device), 3, 10),
        (torch.tensor([4.0]).to(device), 1, 1),
        (_expanded_input(6, 0, device), 3, 2),
        (_expanded_input(5, 2, device), 2, 1),
    ]
    for x, size, step in cases:
        _expect_window(student, x, size, step, "wrong windows at an edge case")


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
        dtype = rng.choice(dtypes)
        if rng.random() < 0.1:
            x = _expanded_input(length, rng.randint(0, 5), device, dtype=dtype)
        else:
            x = _strided_input(length, rng.randint(1, 4), rng.randint(0, 5), device, dtype=dtype)
        cases.append((x, rng.randint(1, length), rng.randint(1, length + 1), False))
    for (x, size, step, _), seen in zip(cases, _observe(student, cases)):
        got, student_x = _result_of(student, x, size, step, False, seen)
        _judge_window(x, size, step, got, student_x, "wrong windows")
        _expect_view_of(student_x, got, size, step, "the result must be a view of x (sharing its storage)", student)
