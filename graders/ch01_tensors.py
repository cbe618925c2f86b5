"""Chapter 01 (tensors): checks for contiguous_strides, is_contiguous and sliding_window.

Every expected value comes from PyTorch itself (``torch.empty(shape).stride()``,
``Tensor.is_contiguous()``, ``Tensor.unfold``) and is computed before the student's code runs.
"""

from __future__ import annotations

import math
import numbers
import random
import re

import numpy as np
import torch

from graders.core import (
    CheckFailed,
    StudentCodeError,
    Submission,
    dtype_name,
    exercise,
    expect_error,
    fail,
    mismatch,
)
from graders.watch import torch_calls

# ==================================================================================================
# contiguous_strides
# ==================================================================================================
CONTIGUOUS_STRIDES = exercise("contiguous_strides", chapter="01_tensors", names=["contiguous_strides"])


def _torch_strides(shape) -> tuple[int, ...]:
    # The meta device lays out strides exactly like a real allocation, without allocating; strides do
    # not depend on the dtype, and one-byte elements keep even a huge shape's byte count representable.
    return tuple(torch.empty(tuple(shape), device="meta", dtype=torch.uint8).stride())


def _strides_cause(shape: tuple[int, ...], got: tuple) -> str | None:
    """Name the mistake when ``got`` equals what a known wrong computation gives for ``shape``."""
    right = _torch_strides(shape)
    suffix_products = tuple(math.prod(max(s, 1) for s in shape[i:]) for i in range(len(shape)))
    unclamped = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    product_or_one = tuple(math.prod(shape[i + 1:]) or 1 for i in range(len(shape)))
    size_one_gets_one = tuple(1 if size == 1 else stride for size, stride in zip(shape, right))
    fortran = tuple(math.prod(max(s, 1) for s in shape[:i]) for i in range(len(shape)))
    known = [
        (tuple(reversed(right)), "the strides are in reverse order: the LAST dim has stride 1 and the "
                                 "first dim the largest stride"),
        (fortran, "this is column-major (Fortran) order, stride[i] = product of the sizes BEFORE dim i; "
                  "PyTorch is row-major (C order): stride[i] is the product of the sizes AFTER dim i"),
        (suffix_products, "off by one dim: stride[i] is the product of the sizes AFTER dim i, not from dim i on"),
        (unclamped, "a size-0 dim zeroes the product; PyTorch multiplies by max(size, 1) so strides stay positive"),
        (product_or_one, "a size-0 dim must count as 1 INSIDE the product (multiply by max(size, 1)); replacing "
                         "a zero product by 1 afterwards loses the other sizes"),
        (size_one_gets_one, "a size-1 dim still gets the product of the sizes after it, like any other dim"),
    ]
    for wrong, cause in known:
        if got == wrong and wrong != right:
            return cause
    if len(got) != len(shape):
        return f"there must be one stride per dim: {len(shape)} for this shape, and you returned {len(got)}"
    if right and all(r > 0 for r in right) and got[-1] != 1 and all(
            isinstance(g, numbers.Integral) and g == got[-1] * r for g, r in zip(got, right)):
        return (f"every stride is {got[-1]} times too large: strides count elements, not bytes (the last dim "
                "has stride 1)")
    return None


_FLOAT_STRIDES_CAUSE = ("a float in the strides: '/' instead of '//', math with floats, or numpy.prod of an empty "
                        "list (which is 1.0, a float); strides are ints")


def _call_strides(student: Submission, shape) -> tuple:
    try:
        got = student.call("contiguous_strides", shape)
    except StudentCodeError as exc:
        # Say which shape it failed on (the exception stays, for checks that look at it).
        message = f"contiguous_strides(shape={shape!r}) failed: {exc}"
        if isinstance(exc.exception, ZeroDivisionError):
            message += ("\n  likely cause: a division by a size, which is 0 for a size-0 dim; build the strides by "
                        "multiplying max(size, 1) from the last dim instead")
        raise StudentCodeError(message, exc.exception) from None
    if isinstance(got, (list, tuple)) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in got):
        return tuple(int(v) for v in got)
    floats = isinstance(got, (list, tuple)) and any(isinstance(v, numbers.Real) and not isinstance(
        v, numbers.Integral) for v in got)
    raise mismatch(
        "contiguous_strides must return a tuple of ints",
        given=f"shape={shape!r}",
        expected=f"{_torch_strides(shape)!r}",
        got=f"{got!r} (a {type(got).__name__})",
        cause=_FLOAT_STRIDES_CAUSE if floats else None,
    )


def _expect_strides(student: Submission, shapes, what: str) -> None:
    for shape in shapes:
        expected = _torch_strides(shape)
        got = _call_strides(student, shape)
        if got != expected:
            raise mismatch(what, given=f"shape={shape!r}", expected=f"{expected!r}  (torch.empty(shape).stride())",
                           got=repr(got), cause=_strides_cause(tuple(shape), got))


@CONTIGUOUS_STRIDES.check(points=1)
def returns_tuple_of_ints(student: Submission, device: torch.device) -> None:
    """The result is a tuple of ints, one per dim."""
    for shape in [(2, 3), (4,)]:
        got = student.call("contiguous_strides", shape)
        if not isinstance(got, tuple):
            hint = " (convert at the end: return tuple(strides))" if isinstance(got, list) else ""
            fail(f"contiguous_strides({shape!r}) returned {got!r}, a {type(got).__name__}; the specification "
                 f"asks for a tuple like torch's stride(){hint}")
        bad = [v for v in got if not isinstance(v, numbers.Integral) or isinstance(v, bool)]
        if bad:
            fail(f"contiguous_strides({shape!r}) returned {got!r}; strides count elements, so each must be an "
                 f"int, not {type(bad[0]).__name__} (likely cause: {_FLOAT_STRIDES_CAUSE})")
        if len(got) != len(shape):
            fail(f"contiguous_strides({shape!r}) returned {got!r}: expected one stride per dim "
                 f"({len(shape)}), got {len(got)}")


@CONTIGUOUS_STRIDES.check(points=1)
def ordinary_shapes(student: Submission, device: torch.device) -> None:
    """Strides of 1-D to 4-D shapes with no size-0 or size-1 dims match torch."""
    _expect_strides(student, [(5,), (2, 3), (3, 2), (2, 3, 4), (4, 2, 3, 5)], "wrong strides for an ordinary shape")


@CONTIGUOUS_STRIDES.check(points=1)
def scalar_and_size_one_dims(student: Submission, device: torch.device) -> None:
    """A 0-d shape () has strides (); size-1 dims get the product of the sizes after them."""
    _expect_strides(student, [(), (1,), (1, 1), (3, 1, 4), (1, 5), (5, 1), (2, 1, 1, 3)],
                    "wrong strides for a scalar shape or one with size-1 dims")


@CONTIGUOUS_STRIDES.check(points=1)
def size_zero_dims(student: Submission, device: torch.device) -> None:
    """Shapes with a size-0 dim have the strides torch gives them (a 0 counts as 1 in the products)."""
    _expect_strides(student, [(0,), (2, 0, 3), (0, 4), (3, 0), (0, 0, 2)], "wrong strides for a shape with a size-0 dim")


@CONTIGUOUS_STRIDES.check(points=1)
def any_sequence_and_random_shapes(student: Submission, device: torch.device) -> None:
    """Lists, tuples and torch.Size are accepted; random shapes up to 6-D match torch."""
    shapes: list = [[2, 3, 4], torch.Size([3, 4]), (6, 1, 2)]
    for _ in range(40):
        ndim = random.randint(0, 6)
        shapes.append(tuple(random.choice([0, 1, 1, 2, 3, 5, 7]) for _ in range(ndim)))
    _expect_strides(student, shapes, "wrong strides")


@CONTIGUOUS_STRIDES.check(points=1)
def pure_python(student: Submission, device: torch.device) -> None:
    """Works without creating a tensor (even for a shape far too large to allocate)."""
    shape = (2**20, 2**20, 2**20)  # 2**60 elements: no machine can allocate torch.empty(shape)
    expected = _torch_strides(shape)
    rule = ("the exercise asks for pure Python arithmetic on the sizes, without creating a tensor of "
            "that shape (not even on the meta device)")
    with torch_calls() as calls:
        try:
            got = _call_strides(student, shape)
        except StudentCodeError as exc:
            if calls.created_tensors:
                fail(f"contiguous_strides({shape!r}) called {calls.describe()} and failed: {exc}\n  {rule}")
            raise
    if calls.created_tensors:
        fail(f"contiguous_strides({shape!r}) called {calls.describe()}; {rule}")
    if got != expected:
        raise mismatch("wrong strides for a very large shape", given=f"shape={shape!r}", expected=repr(expected),
                       got=repr(got), cause=_strides_cause(shape, got))


# ==================================================================================================
# is_contiguous
# ==================================================================================================
IS_CONTIGUOUS = exercise("is_contiguous", chapter="01_tensors", names=["is_contiguous"])


def _torch_is_contiguous(shape, strides) -> bool:
    """Ask PyTorch: a view with this shape and these strides over a storage large enough for it."""
    shape, strides = tuple(shape), tuple(strides)
    needed = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) if 0 not in shape else 0
    return torch.empty(max(needed, 1), device="meta").as_strided(shape, strides).is_contiguous()


def _call_is_contiguous(student: Submission, shape, strides) -> bool:
    try:
        got = student.call("is_contiguous", shape, strides)
    except StudentCodeError as exc:
        raise StudentCodeError(f"is_contiguous(shape={shape!r}, strides={strides!r}) failed: {exc}",
                               exc.exception) from None
    if isinstance(got, (bool, np.bool_)):  # a numpy bool (numpy.bool_ / numpy.bool) is a fine bool too
        return bool(got)
    if got is None:
        cause = "the function ended without a return statement on this path (it returns None): return True at the end"
    elif isinstance(got, torch.Tensor):
        cause = "a tensor is not a bool: return a Python bool (bool(t), or t.item() for a 0-d bool tensor)"
    elif isinstance(got, numbers.Number):
        cause = "return True or False (the result of a comparison or of all(...)), not a number"
    else:
        cause = "return the result of a comparison or all(...), not a number or a list"
    raise mismatch("is_contiguous must return True or False", given=f"shape={shape!r}, strides={strides!r}",
                   expected=repr(_torch_is_contiguous(shape, strides)), got=f"{got!r} (a {type(got).__name__})",
                   cause=cause)


def _expect_contiguity(student: Submission, cases, what: str, cause: str | None = None) -> None:
    for shape, strides in cases:
        expected = _torch_is_contiguous(shape, strides)
        got = _call_is_contiguous(student, shape, strides)
        if got != expected:
            raise mismatch(what, given=f"shape={shape!r}, strides={strides!r}",
                           expected=f"{expected}  (torch's is_contiguous() for that view)", got=repr(got),
                           cause=cause)


@IS_CONTIGUOUS.check(points=1)
def contiguous_layouts(student: Submission, device: torch.device) -> None:
    """C-ordered layouts (the strides torch.empty gives) are contiguous."""
    cases = [((5,), (1,)), ((2, 3), (3, 1)), ((2, 3, 4), (12, 4, 1)), ((4, 2, 3, 5), (30, 15, 5, 1))]
    _expect_contiguity(student, cases, "a C-ordered layout was judged non-contiguous",
                       cause="walk from the LAST dim to the first; the expected stride starts at 1 and is "
                             "multiplied by each size after it is checked")


@IS_CONTIGUOUS.check(points=1)
def non_contiguous_layouts(student: Submission, device: torch.device) -> None:
    """Transposed, permuted, stepped, gapped and expanded (stride 0) layouts are not contiguous."""
    cases = [
        ((3, 2), (1, 3)),  # transpose of (2, 3)
        ((4, 3, 2), (1, 4, 12)),  # permute(2, 1, 0) of (2, 3, 4): reversed walk order
        ((5,), (2,)),  # x[::2]
        ((2, 3), (6, 1)),  # rows of a (2, 6) tensor, first 3 columns: descending but gapped
        ((2, 3), (0, 1)),  # expand of a row
        ((3, 4), (4, 0)),  # expand along the last dim
        ((2, 2), (2, 2)),  # overlapping
    ]
    _expect_contiguity(student, cases, "a non-contiguous layout was judged contiguous",
                       cause="each stride must EQUAL the product of the sizes after it (not just be "
                             "ordered, and not be 0); compare exactly, from the last dim to the first")


@IS_CONTIGUOUS.check(points=1)
def size_one_dims_ignored(student: Submission, device: torch.device) -> None:
    """Dims of size 1 are skipped, whatever their stride."""
    cases = [((3, 1, 4), (4, 99, 1)), ((1,), (7,)), ((1, 5), (1, 1)), ((5, 1), (1, 0)), ((1, 1, 2), (0, 5, 1)),
             ((2, 1, 3), (3, 1, 1))]
    _expect_contiguity(student, cases, "a layout whose only odd strides belong to size-1 dims was misjudged",
                       cause="size-1 dims must be skipped: stepping along them never happens, so their "
                             "stride does not matter")


@IS_CONTIGUOUS.check(points=1)
def empty_and_scalar(student: Submission, device: torch.device) -> None:
    """A tensor with no elements is contiguous whatever its strides; a 0-d shape () is contiguous."""
    cases = [((0,), (5,)), ((2, 0, 3), (1, 7, 2)), ((3, 0), (0, 0)), ((0, 4), (1, 3)), ((), ())]
    _expect_contiguity(student, cases, "an empty or 0-d layout was misjudged",
                       cause="a tensor with no elements (a size-0 dim) is contiguous before any stride is "
                             "looked at; a 0-d tensor has no dims to check")


@IS_CONTIGUOUS.check(points=1)
def length_mismatch_raises(student: Submission, device: torch.device) -> None:
    """ValueError when shape and strides have different lengths."""
    zip_cause = "zip() silently stops at the shorter sequence; compare len(shape) and len(strides) first"
    empty_cause = ("the shortcut for a tensor with no elements (a size-0 dim) returned before the lengths were "
                   "compared; check len(shape) == len(strides) first, for every input")
    for shape, strides, cause in [((2, 3), (3,), zip_cause), ((4,), (1, 1), zip_cause), ((), (1,), zip_cause),
                                  ((2, 0), (1,), empty_cause), ((0, 3), (3, 1, 1), empty_cause)]:
        try:
            expect_error(student, ValueError, student.get("is_contiguous"), (shape, strides),
                         call=f"is_contiguous(shape={shape!r}, strides={strides!r})", why="the lengths differ",
                         cause=cause)
        except CheckFailed as exc:
            raise CheckFailed(_raised_other_error_hint(str(exc))) from None


def _raised_other_error_hint(message: str) -> str:
    """Add the usual cause when a check wanted ValueError and the student's code raised something else."""
    if " but it raised AssertionError" in message:
        return message + "\n  likely cause: assert raises AssertionError; raise ValueError(...) instead"
    if " but it raised " in message and "must raise ValueError" in message:
        return message + "\n  likely cause: the specification asks for ValueError; raise ValueError(...) there"
    return message


def _random_layout(rng: random.Random) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ndim = rng.randint(0, 5)
    shape = [rng.choice([1, 1, 2, 3, 4]) for _ in range(ndim)]
    if ndim and rng.random() < 0.1:
        shape[rng.randrange(ndim)] = 0
    strides = list(_torch_strides(shape))
    kind = rng.choice(["as_is", "permute", "step", "expand", "size1_noise", "gap"])
    if kind == "permute" and ndim >= 2:
        order = list(range(ndim))
        rng.shuffle(order)
        shape, strides = [shape[i] for i in order], [strides[i] for i in order]
    elif kind == "step" and ndim:
        d = rng.randrange(ndim)
        strides[d] *= rng.choice([2, 3])
    elif kind == "expand" and ndim:
        strides[rng.randrange(ndim)] = 0
    elif kind == "size1_noise":
        strides = [rng.randint(0, 50) if size == 1 else s for size, s in zip(shape, strides)]
    elif kind == "gap" and ndim:
        strides = [s * 2 for s in strides]
    return tuple(shape), tuple(strides)


@IS_CONTIGUOUS.check(points=1)
def random_layouts(student: Submission, device: torch.device) -> None:
    """Random permuted, stepped, expanded and size-1-padded layouts agree with torch."""
    rng = random.Random(101)
    cases = [_random_layout(rng) for _ in range(200)]
    _expect_contiguity(student, cases, "misjudged a layout", cause=None)


# ==================================================================================================
# sliding_window
# ==================================================================================================
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


def _call_window(student: Submission, x: torch.Tensor, size: int, step: int | None) -> torch.Tensor:
    """``sliding_window(x, size, step)``; ``step=None`` calls ``sliding_window(x, size)`` (the default step)."""
    # Not copied: the check owns ``x`` and needs the student's view to be of this very tensor.
    args = (x, size) if step is None else (x, size, step)
    shown = f"size={size}" + (" (step left out: its default is 1)" if step is None else f", step={step}")
    step = 1 if step is None else step
    try:
        got = student.run(student.get("sliding_window"), *args, _label="sliding_window")
    except StudentCodeError as exc:
        if "out of bounds" in str(exc):
            fail(f"sliding_window(x = {_layout(x)}, {shown}) {str(exc).split(' ', 1)[1]}\n"
                 f"  likely cause: {_out_of_bounds_cause(str(exc), x, size, step)}")
        message = f"sliding_window(x = {_layout(x)}, {shown}) failed: {exc}"
        if len(args) == 2 and isinstance(exc.exception, TypeError) and "step" in str(exc.exception):
            message += ("\n  likely cause: step has no default value; the signature is "
                        "sliding_window(x, size, step=1)")
        elif isinstance(exc.exception, ValueError):
            message += ("\n  likely cause: these arguments are valid (1 <= size <= len(x), step >= 1; a step longer "
                        "than x gives a single window); raise ValueError only for a non-1-D x, size < 1, step < 1 "
                        "or size > len(x)")
        raise StudentCodeError(message, exc.exception) from None
    if not isinstance(got, torch.Tensor):
        fail(f"sliding_window({_layout(x)}, size={size}, step={step}) returned a {type(got).__name__}; "
             "it must return a tensor (one view, not a list of row tensors)")
    return got


def _expect_window(student: Submission, x: torch.Tensor, size: int, step: int, what: str) -> torch.Tensor:
    """Compare against ``unfold`` on an independent copy, computed before the student's code runs."""
    reference_x = x.clone()
    expected = reference_x.unfold(0, size, 1 if step is None else step).clone()
    given = f"x = {_layout(x)}, size={size}, " + ("step left out (its default is 1)" if step is None else f"step={step}")
    got = _call_window(student, x, size, step)
    if step is None:
        step = 1
    if tuple(got.shape) != tuple(expected.shape):
        raise mismatch(what, given=given, expected=f"shape {tuple(expected.shape)}", got=f"shape {tuple(got.shape)}",
                       cause=_window_cause(x, size, step, got, expected))
    if got.device != x.device:
        fail(f"{what}\n  input: {given}\n  the result is on {got.device.type}, x on {x.device.type}: a view never "
             "changes device (likely cause: a copy made with .cpu() or torch.tensor(...))")
    if got.dtype != x.dtype or not torch.equal(got, expected):
        raise mismatch(what, given=given, expected=f"{expected.cpu().tolist()}",
                       got=f"{got.detach().cpu().tolist()} ({dtype_name(got.dtype)})",
                       cause=_window_cause(x, size, step, got, expected))
    return got


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
        got = _expect_window(student, x, size, step, "wrong windows for a contiguous input")
        _expect_view_of(x, got, size, step, "the result must be a view of x")
        got[-1, -1] = -100.0
        last = (got.shape[0] - 1) * step + size - 1
        if x[last].item() != -100.0:
            fail(f"writing -100 into result[-1, -1] did not change x[{last}]; the result must be a view of x "
                 "(likely cause: a copy somewhere, e.g. clone(), contiguous() or torch.stack)")


@SLIDING_WINDOW.check(points=1)
def strided_input(student: Submission, device: torch.device) -> None:
    """Inputs with a stride other than 1 (x = base[::k]) give the right windows, still as views."""
    for length, stride, size, step in [(6, 3, 2, 1), (8, 2, 3, 2), (5, 4, 5, 1)]:
        x = _strided_input(length, stride, 0, device)
        got = _expect_window(student, x, size, step, "wrong windows for a strided input")
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
        try:
            expect_error(student, ValueError, student.get("sliding_window"), (tensor.clone(), size, step),
                         call=f"sliding_window(x of shape {tuple(tensor.shape)}, size={size}, step={step})", why=why)
        except CheckFailed as exc:
            message = str(exc)
            if tensor.dim() != 1 and " but it raised " in message and "AssertionError" not in message:
                message += ("\n  likely cause: len(x), x.stride(0) or x.shape[0] was used before checking "
                            "x.dim() == 1; check the number of dims first")
            else:
                message = _raised_other_error_hint(message)
            raise CheckFailed(message) from None


@SLIDING_WINDOW.check(points=1)
def storage_offset(student: Submission, device: torch.device) -> None:
    """Inputs that start inside their storage (x = base[k:], base[k::s]) give the right windows."""
    for length, stride, offset, size, step in [(6, 1, 4, 2, 1), (5, 2, 3, 2, 2), (7, 3, 1, 3, 1)]:
        x = _strided_input(length, stride, offset, device)
        got = _expect_window(student, x, size, step, "wrong windows for an input with a storage offset")
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
        got = _expect_window(student, x, size, step, "wrong windows at an edge case")
        _expect_view_of(x, got, size, step, "at an edge case the result must still be a view of x")


@SLIDING_WINDOW.check(points=1)
def does_not_call_unfold(student: Submission, device: torch.device) -> None:
    """The view is built with as_strided, not with unfold."""
    x = torch.arange(10.0).to(device)
    with torch_calls() as calls:
        _call_window(student, x, 3, 2)
    if "unfold" in calls.names:
        fail("sliding_window called Tensor.unfold; the exercise is to build the same view yourself with "
             "x.as_strided(size, stride, storage_offset)")


@SLIDING_WINDOW.check(points=1)
def random_layouts_and_dtypes(student: Submission, device: torch.device) -> None:
    """Random lengths, strides, offsets, sizes, steps and dtypes agree with unfold, as views."""
    rng = random.Random(7)
    dtypes = [torch.float32, torch.float64, torch.int64, torch.bool, torch.float16]
    cases = []
    for _ in range(60):
        length = rng.randint(1, 12)
        x = _strided_input(length, rng.randint(1, 4), rng.randint(0, 5), device, dtype=rng.choice(dtypes))
        size = rng.randint(1, length)
        cases.append((x, size, rng.randint(1, length + 1)))
    for x, size, step in cases:
        got = _expect_window(student, x, size, step, "wrong windows")
        _expect_view_of(x, got, size, step, "the result must be a view of x")
