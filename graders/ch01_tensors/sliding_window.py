"""sliding_window(x, size, step=1) -> a view of 1-D x whose rows are its windows, built with as_strided.

Inputs cover every layout the specification allows: contiguous, strided (x = base[::k], a column of a
matrix), with a storage offset, expanded (stride 0), length 1 and long, every dtype. Two checks also draw
from the specification's domain: ``random_layouts_and_dtypes`` valid calls (``generate_window``: 12 dtypes,
strides 0, 1, >1 and past 256, offsets past 256, x requiring grad, every relation of size and step to len(x),
step left out or by name; x is built in the runner from the case, as in the judge) and ``validation``
invalid ones (``generate_bad_call``: rules broken alone and together), each batch in one request, the smallest
failing call reported (valid calls shrunk further). Each result is compared with ``x.unfold`` computed in the
judge, then checked to be a view: every element must be the
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

from graders import domain, wire
from graders.compare import dtype_name, show, show_number, show_tensor, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
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
            f"and storage offset {x.storage_offset()}" + (" that requires grad" if x.requires_grad else ""))


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
        seen.append({"got": got, "x": x})
    try:  # the whole batch at once first (one encoding, as it will travel); case by case only when it fails
        wire.to_bytes(wire.encode(seen))
        return seen
    except Exception:  # noqa: BLE001 - some pair cannot travel: find which
        pass
    for index, one in enumerate(seen):
        if "got" not in one:
            continue
        try:
            wire.to_bytes(wire.encode(one))
        except Exception as exc:  # noqa: BLE001 - torch.save refused the pair: say what it was instead
            got = one["got"]
            seen[index] = {"unsendable": f"{type(exc).__name__}: {exc}", "x": one["x"],
                           "dtype": dtype_name(got.dtype) if isinstance(got, torch.Tensor) else None,
                           "type": type(got).__qualname__}
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


@judge_only
def _judge_window(x: torch.Tensor, size: int, step: int | None, got: object, student_x: torch.Tensor | None,
                  what: str) -> None:
    """Compare with ``x.unfold`` (x is the judge's own copy: the student's code never touched it)."""
    given, shown_x = _described(x, size, step), _layout(x)
    x_requires_grad = x.requires_grad
    x = x.detach()  # (the description says whether it requires grad; the values are what is compared)
    step = 1 if step is None else step
    expected = x.unfold(0, size, step)
    if not isinstance(got, torch.Tensor):
        if isinstance(got, Foreign) and type_name(got) == "Tensor":
            fail(f"sliding_window({shown_x}, size={size}, step={step}) returned a tensor that is not a plain "
                 f"(strided) tensor: {show(got)}; it must return a view of x, as x.as_strided(...) makes")
        cause = " (None is what a function returns when it ends without a return statement)" if got is None else ""
        fail(f"sliding_window({shown_x}, size={size}, step={step}) returned {show(got)}, a {type_name(got)}; "
             f"it must return a tensor (one view, not a list of row tensors){cause}")
    if x_requires_grad and not wire.tensor_facts(got)["requires_grad"]:
        fail(f"{what}\n  input: {given}\n  x requires grad and the result does not, so no gradient flows from the "
             "windows back to x, as it does through x.unfold(0, size, step) (whose result has a grad_fn); a view "
             "made with x.as_strided(...) keeps x's graph, one made from x.detach(), x.data, under torch.no_grad() "
             "or with set_() on x's storage does not")
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
                    student: Submission | None = None, sent: torch.Tensor | None = None) -> None:
    """Every element of ``got`` must be the storage element of x that it shows (a view, not a copy). ``x`` is the
    student's x as it came back with ``got``; ``sent`` the x the call was given, when it differs (it came back
    detached: one that requires grad is asked about as it was sent)."""
    sent = x if sent is None else sent
    given = _described(sent, size, step)
    if got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        # Memory shared outside PyTorch's view machinery is lost on the way back: ask in the student's process.
        try:
            inside = student is not None and student.scenario(_memory_of_result, sent, size, step)["inside"]
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
        if label == "0-d" and raised["2-D"] and error is not None:
            cause = ("on a 0-d x, len(x), x.stride(0) or x.shape[0] raise before any ValueError, while a 2-D x is "
                     "rejected: they come before the dim check, or the check lets a 0-d x through (x.dim() > 1 does); "
                     "check the number of dims first, with x.dim() != 1")
        elif label in ("size < 0", "step < 0") and raised[label.replace("< 0", "0")]:
            name = label.split()[0]
            cause = f"the check catches {name} == 0 but not a negative {name}: test {name} < 1"
        elif label == "size > len, strided" and raised["size > len"]:
            cause = ("size was compared with something other than len(x), such as the number of elements in x's "
                     "storage: x = base[::2] has 5 elements in a longer storage; compare size with len(x)")
        if error is None:
            shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
            fail(f"{call} returned {shown}; it must raise ValueError because {why}"
                 + (f" (likely cause: {cause})" if cause else ""))
        if cause is None:
            cause = ("assert raises AssertionError; raise ValueError(...) instead" if error.exception_type ==
                     "AssertionError" else "the specification asks for ValueError; raise ValueError(...) there")
        fail(f"{call} must raise ValueError because {why}, but it {error.describe()}\n  likely cause: {cause}")
    # Valid arguments next to the invalid ones must not raise: raising every time is not validation.
    _expect_window(student, x, 6, 1, "wrong windows for valid arguments", view=False)
    _expect_window(student, x, 1, 7, "wrong windows for valid arguments", view=False)
    _expect_generated_errors(student, device, 100)


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


# ==================================================================================================
# The input domain: "a 1-D tensor x of any stride and storage offset" (and any dtype, length, requires_grad), any
# valid size and step (1 <= size <= len(x), step >= 1, step left out or passed by name), and every invalid call
# ==================================================================================================
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)
CALLS = ("positional", "step left out", "by name")


@dataclasses.dataclass(frozen=True)
class Window:
    """One call: x = every ``stride``-th element of a storage from ``offset`` (stride 0: one element expanded)."""
    length: int
    stride: int
    offset: int
    dtype: torch.dtype
    size: int
    step: int
    call: str = "positional"
    requires_grad: bool = False

    @property
    def given_step(self) -> int | None:
        return None if self.call == "step left out" else self.step

    def valid(self) -> bool:
        return 1 <= self.size <= self.length and self.step >= 1 and self.stride >= 0 and self.offset >= 0 and (
            self.call != "step left out" or self.step == 1) and (
            not self.requires_grad or self.dtype.is_floating_point or self.dtype.is_complex)


def window_input(case: Window, device: torch.device) -> torch.Tensor:
    """The x of a case, built the same way in the judge every time."""
    if case.stride == 0:
        x = _expanded_input(case.length, case.offset, device, case.dtype)
    else:
        x = _strided_input(case.length, case.stride, case.offset, device, case.dtype)
    return x.detach().requires_grad_() if case.requires_grad else x


def generate_window(rng: random.Random) -> Window:
    """A valid call of the domain, with the relations between length, size and step no fixed input has: size ==
    len(x), size 1, step 1, step == size (tiling), step > size (skipping), step > len(x) (one window), windows that
    end exactly at the end of x or leave a remainder; every dtype; strides 0, 1, >1 and past 256; storage offsets
    0, small and past 256; step left out or passed by name; x requiring grad."""
    length = domain.pick(rng, [1, 2, rng.randint(3, 12), rng.randint(3, 12), rng.randint(257, 600)])
    stride = domain.pick(rng, [0, 1, 1, 2, 3, 5, domain.pick(rng, [257, 300])], weights=[1, 3, 3, 2, 1, 1, 1])
    if stride > 5:
        length = min(length, 12)
    offset = domain.pick(rng, [0, 0, rng.randint(1, 7), domain.pick(rng, [257, 300])])
    size = domain.pick(rng, [1, length, rng.randint(1, length), rng.randint(1, length), max(1, length - 1)])
    room = length - size
    step = domain.pick(rng, [1, 1, size, size + 1, rng.randint(1, length + 2), length + rng.randint(1, 3),
                             max(room, 1), rng.randint(1, max(room, 1))])
    call = domain.pick(rng, CALLS, weights=[4, 1, 1]) if step == 1 else domain.pick(rng, ["positional", "by name"],
                                                                                      weights=[4, 1])
    dtype = domain.pick(rng, DTYPES)
    requires_grad = (dtype.is_floating_point or dtype.is_complex) and rng.random() < 0.15
    return Window(length, stride, offset, dtype, size, step, call, requires_grad)


def window_size(case: Window) -> tuple:
    """Shorter x first, then smaller windows and steps, simpler layouts: the first failure reported is small."""
    return (case.length, case.size, case.step, case.stride, case.offset, DTYPES.index(case.dtype),
            CALLS.index(case.call), case.requires_grad)


def window_candidates(case: Window) -> list[Window]:
    """Smaller valid calls: a shorter x, a smaller size, step, stride or offset, float32, step by position."""
    found = []
    for length in dict.fromkeys((case.length - 1, case.length // 2, case.size)):
        found.append(dataclasses.replace(case, length=length, size=min(case.size, max(length, 1))))
    found += [dataclasses.replace(case, size=n) for n in dict.fromkeys((case.size - 1, 1, case.size // 2))]
    found += [dataclasses.replace(case, step=n) for n in dict.fromkeys((case.step - 1, 1, case.size, case.step // 2))]
    found += [dataclasses.replace(case, stride=n) for n in dict.fromkeys((1, case.stride - 1, case.stride // 2))]
    found += [dataclasses.replace(case, offset=n) for n in dict.fromkeys((0, case.offset - 1, case.offset // 2))]
    found += [dataclasses.replace(case, dtype=torch.float32), dataclasses.replace(case, call="positional"),
              dataclasses.replace(case, requires_grad=False)]
    return [c for c in dict.fromkeys(found) if c.valid() and c != case and window_size(c) < window_size(case)]


@judge_only
def _window_right(x: torch.Tensor, case: Window, seen: dict) -> bool:
    """The judge's one verdict on a valid call: exactly what _judge_window and _expect_view_of accept."""
    if "got" not in seen or not isinstance(seen["got"], torch.Tensor) or not isinstance(seen["x"], torch.Tensor):
        return False
    got, student_x = seen["got"], seen["x"]
    if ((tuple(student_x.shape), student_x.stride(), student_x.storage_offset())
            != (tuple(x.shape), x.stride(), x.storage_offset())):
        return False
    if student_x.dtype != x.dtype or not torch.equal(student_x, x.detach()):
        return False
    if x.requires_grad and not wire.tensor_facts(got)["requires_grad"]:
        return False
    expected = x.detach().unfold(0, case.size, case.step)
    if (tuple(got.shape) != tuple(expected.shape) or got.device != x.device or got.dtype != x.dtype
            or not torch.equal(got, expected)):
        return False
    if got.untyped_storage().data_ptr() != student_x.untyped_storage().data_ptr() or got.dim() != 2:
        return False
    # Element [i, j] must be storage element offset + (i * step + j) * stride of x, for every i and j: both sides are
    # linear in i and j, so they agree on the whole grid when they agree at [0, 0] and in each direction that has
    # more than one element (what _expect_view_of checks element by element).
    rows, cols = got.shape
    s = student_x.stride(0)
    return (got.storage_offset() == student_x.storage_offset() and (rows == 1 or got.stride(0) == case.step * s)
            and (cols == 1 or got.stride(1) == s))


def _windows_of_cases(student: RunnerStudent, cases: list[Window], device: str) -> list:
    """In the student's process: build each case's x (as the judge builds its own: sending hundreds of tensors
    costs more than making them), then what _windows_of_each observes."""
    return _windows_of_each(student, [(window_input(c, torch.device(device)), c.size, c.given_step,
                                       c.call == "by name") for c in cases])


CHUNK = 100  # calls per request: the results' decoding grows faster than linearly with the size of one message


def _observe_windows(student: Submission, cases: list[Window], device: torch.device) -> tuple[list, list]:
    inputs = [window_input(case, device) for case in cases]
    try:
        seen = [one for start in range(0, len(cases), CHUNK)
                for one in student.scenario(_windows_of_cases, cases[start:start + CHUNK], str(device))]
    except StudentCodeError as exc:
        if len(cases) == 1:
            raise exc.within(_call_text(inputs[0], cases[0].size, cases[0].given_step, cases[0].call == "by name")) \
                from None
        raise exc.within(f"sliding_window on {len(cases)} generated inputs") from None
    return inputs, seen


def _expect_generated_windows(student: Submission, device: torch.device, count: int) -> None:
    """Generated valid calls in one request; the smallest failing one (shrunk further) is judged in full."""
    cases = domain.draw(generate_window, count, size=window_size)
    inputs, seen = _observe_windows(student, cases, device)
    failing = [not _window_right(x, c, one) for x, c, one in zip(inputs, cases, seen)]
    if not any(failing):
        return
    first = domain.smallest(cases, failing, window_size)

    def fails(candidates: list[Window]) -> list[bool]:
        try:
            xs, observed = _observe_windows(student, candidates, device)
        except StudentCodeError:  # a candidate the runner did not come back from: not a smaller failure to report
            return [False] * len(candidates)
        return [not _window_right(x, c, one) for x, c, one in zip(xs, candidates, observed)]

    shrunk = domain.shrink(first, window_candidates, fails)
    (x,), (one,) = _observe_windows(student, [shrunk], device)
    if _window_right(x, shrunk, one):  # the runner answered otherwise this time: judge the case as drawn
        shrunk, x, one = first, inputs[cases.index(first)], seen[cases.index(first)]
    note = f"({sum(failing)} of {len(cases)} generated calls failed; this is the smallest failing call found)"
    got, student_x = _result_of(student, x, shrunk.size, shrunk.given_step, shrunk.call == "by name", one)
    _judge_window(x, shrunk.size, shrunk.given_step, got, student_x, f"wrong windows for a generated input {note}")
    _expect_view_of(student_x, got, shrunk.size, shrunk.step,
                    f"the result must be a view of x (sharing its storage) {note}", student, sent=x)
    what = f"wrong windows for a generated input {note}"
    fail(f"{what}: {_call_text(x, shrunk.size, shrunk.given_step, shrunk.call == 'by name')} (a grader error if you "
         "read this: please report it)")


@dataclasses.dataclass(frozen=True)
class BadCall:
    """An invalid call: x of ``shape`` (1-D: every ``stride``-th element of a storage from ``offset``)."""
    shape: tuple[int, ...]
    stride: int
    offset: int
    size: int
    step: int
    call: str = "positional"

    def reasons(self) -> list[str]:
        """Every sentence of the specification this call breaks."""
        found = []
        if len(self.shape) != 1:
            found.append(f"x is {len(self.shape)}-D" + (f" (of shape {self.shape})" if self.shape else ""))
        if self.size < 1:
            found.append("size is 0" if self.size == 0 else "size is negative")
        if self.step < 1:
            found.append("step is 0" if self.step == 0 else "step is negative")
        if len(self.shape) == 1 and self.size > self.shape[0]:
            found.append(f"size is larger than len(x) = {self.shape[0]}")
        return found


def bad_call_input(case: BadCall, device: torch.device) -> torch.Tensor:
    if len(case.shape) == 1:
        return _strided_input(case.shape[0], case.stride, case.offset, device)
    return (torch.arange(max(1, torch.Size(case.shape).numel()), dtype=torch.float32)[:torch.Size(case.shape).numel()]
            .reshape(case.shape).to(device))


def generate_bad_call(rng: random.Random) -> BadCall:
    """An invalid call breaking one or more of the rules at once: x 0-D, 2-D (also (1, n) and (n, 1)) or 3-D,
    size 0 or negative, step 0 or negative, size larger than len(x) (also for an empty x, and for a strided x
    whose storage holds more elements than len(x))."""
    broken = [r for r in ("dims", "size", "step", "length") if rng.random() < 0.35] or [
        domain.pick(rng, ["dims", "size", "step", "length"])]
    if "dims" in broken:
        shape = domain.pick(rng, [(), (2, 3), (1, rng.randint(1, 6)), (rng.randint(1, 6), 1), (2, 2, 2), (0, 3)])
        broken = [r for r in broken if r != "length"] or ["dims"]
    else:
        shape = (domain.pick(rng, [0, 1, rng.randint(2, 10), rng.randint(257, 300)]),)
    length = shape[0] if len(shape) == 1 else 3
    stride, offset = domain.pick(rng, [1, 1, 2, 3]), domain.pick(rng, [0, 0, 2, 5])
    if "length" in broken:
        size = length + domain.pick(rng, [1, 1, 2, max(length, 1)])
    elif "size" in broken:
        size = domain.pick(rng, [0, 0, -1, -2, -257])
    else:
        size = rng.randint(1, max(1, min(length, 6)))
    if "size" in broken and "length" in broken:
        size = domain.pick(rng, [0, -1])
    step = domain.pick(rng, [0, 0, -1, -3]) if "step" in broken else domain.pick(rng, [1, 1, 2, 7])
    call = domain.pick(rng, ["positional", "by name"] + ["step left out"] * (step == 1))
    return BadCall(shape, stride, offset, size, step, call)


def bad_call_size(case: BadCall) -> tuple:
    return (len(case.shape) != 1, torch.Size(case.shape).numel(), abs(case.size), abs(case.step), case.stride,
            case.offset)


def _bad_calls_of_each(student: RunnerStudent, cases: list[BadCall], device: str) -> list:
    """In the student's process: each invalid call; the error raised, or the type (and shape) of what came back."""
    seen = []
    for case in cases:
        x = bad_call_input(case, torch.device(device))
        try:
            if case.call == "by name":
                got = student.call("sliding_window", x, size=case.size, step=case.step)
            else:
                got = student.call("sliding_window", *((x, case.size) if case.call == "step left out" else
                                                       (x, case.size, case.step)))
        except StudentRaised as exc:
            seen.append({"error": dataclasses.asdict(exc.error)})
            continue
        seen.append({"type": type(got).__qualname__,
                     "shape": tuple(got.shape) if isinstance(got, torch.Tensor) else None})
    return seen


def _bad_call_text(case: BadCall, device: torch.device) -> str:
    x = bad_call_input(case, device)
    shown_x = _layout(x) if x.dim() == 1 else f"a tensor of shape {tuple(x.shape)}"
    if case.call == "step left out":
        return f"sliding_window(x = {shown_x}, size={case.size}) (step left out: its default is 1)"
    named = ", with size and step passed by name" if case.call == "by name" else ""
    return f"sliding_window(x = {shown_x}, size={case.size}, step={case.step}){named}"


def _expect_generated_errors(student: Submission, device: torch.device, count: int) -> None:
    """Generated invalid calls in one request: each must raise ValueError; the smallest that does not is reported."""
    cases = domain.draw(generate_bad_call, count, size=bad_call_size)
    try:
        seen = student.scenario(_bad_calls_of_each, cases, str(device))
    except StudentCodeError as exc:
        raise exc.within(f"sliding_window on {len(cases)} generated invalid calls") from None
    right = ["error" in one and StudentError(**one["error"]).is_instance(ValueError) for one in seen]
    if all(right):
        return
    first = domain.smallest(cases, [not r for r in right], bad_call_size)
    one = seen[cases.index(first)]
    call, why = _bad_call_text(first, device), " and ".join(first.reasons())
    note = (f"\n  ({right.count(False)} of {len(cases)} generated invalid calls did not raise ValueError; this is "
            "the smallest of them)")
    if "error" not in one:
        shown = f"a tensor of shape {one['shape']}" if one["shape"] is not None else f"a {one['type']}"
        fail(f"{call} returned {shown}; it must raise ValueError because {why}{note}")
    error = StudentError(**one["error"])
    cause = ("\n  likely cause: assert raises AssertionError; raise ValueError(...) instead"
             if error.exception_type == "AssertionError" else "")
    fail(f"{call} must raise ValueError because {why}, but it {error.describe()}{cause}{note}")


@SLIDING_WINDOW.check(points=1)
def random_layouts_and_dtypes(student: Submission, device: torch.device) -> None:
    """Generated lengths, strides (0, 1, >1), offsets, sizes, steps, dtypes and call forms agree with unfold, as
    views."""
    _expect_generated_windows(student, device, 150)
