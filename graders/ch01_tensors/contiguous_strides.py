"""contiguous_strides(shape) -> the strides of a new C-ordered tensor of that shape, in pure Python."""

from __future__ import annotations

import math
import numbers
import random

import torch

from graders.compare import show, type_name
from graders.isolation import RunnerStudent
from graders.outcomes import StudentCodeError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission
from graders.watch import torch_calls

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
    matches = [cause for wrong, cause in known if got == wrong and wrong != right]
    if len(matches) == 1:  # several wrong rules give this answer: the evidence does not single one out
        return matches[0]
    if matches:
        return None
    if len(got) != len(shape):
        return f"there must be one stride per dim: {len(shape)} for this shape, and you returned {len(got)}"
    # "Strides in bytes" is only singled out when every stride is the same multiple (> 1) of the right one
    # and the shape has no size-0 dim (there, other wrong rules give such multiples too).
    if right and 0 not in shape and got[-1] not in (0, 1) and all(
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
        error = exc.within(f"contiguous_strides(shape={shape!r})")
        if exc.error.exception_type == "ZeroDivisionError":
            fail(f"{error.describe()}\n  likely cause: a division by a size, which is 0 for a size-0 dim; build the "
                 "strides by multiplying max(size, 1) from the last dim instead")
        raise error from None
    if isinstance(got, (list, tuple)) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in got):
        return tuple(int(v) for v in got)
    floats = isinstance(got, (list, tuple)) and any(isinstance(v, numbers.Real) and not isinstance(
        v, numbers.Integral) for v in got)
    fail_mismatch("contiguous_strides must return a tuple of ints", given=f"shape={shape!r}",
                  expected=f"{_torch_strides(shape)!r}", got=f"{show(got)} (a {type_name(got)})",
                  cause=_FLOAT_STRIDES_CAUSE if floats else None)


def _expect_strides(student: Submission, shapes, what: str) -> None:
    for shape in shapes:
        expected = _torch_strides(shape)
        got = _call_strides(student, shape)
        if got != expected:
            fail_mismatch(what, given=f"shape={shape!r}", expected=f"{expected!r}  (torch.empty(shape).stride())",
                          got=repr(got), cause=_strides_cause(tuple(shape), got))


@CONTIGUOUS_STRIDES.check(points=1)
def returns_tuple_of_ints(student: Submission, device: torch.device) -> None:
    """The result is a tuple of ints, one per dim."""
    for shape in [(2, 3), (4,), [3, 5, 2]]:
        try:
            got = student.call("contiguous_strides", shape)
        except StudentCodeError as exc:
            raise exc.within(f"contiguous_strides({shape!r})") from None
        if not isinstance(got, tuple):
            hint = " (convert at the end: return tuple(strides))" if isinstance(got, list) else ""
            fail(f"contiguous_strides({shape!r}) returned {show(got)}, a {type_name(got)}; the specification "
                 f"asks for a tuple like torch's stride(){hint}")
        bad = [v for v in got if not isinstance(v, numbers.Integral) or isinstance(v, bool)]
        if bad:
            fail(f"contiguous_strides({shape!r}) returned {got!r}; strides count elements, so each must be an "
                 f"int, not {type_name(bad[0])} (likely cause: {_FLOAT_STRIDES_CAUSE})")
        if len(got) != len(shape):
            fail(f"contiguous_strides({shape!r}) returned {got!r}: expected one stride per dim "
                 f"({len(shape)}), got {len(got)}")
        expected = _torch_strides(shape)
        if tuple(got) != expected:
            fail_mismatch("wrong strides", given=f"shape={shape!r}", expected=repr(expected), got=repr(got),
                          cause=_strides_cause(tuple(shape), tuple(got)))


@CONTIGUOUS_STRIDES.check(points=1)
def ordinary_shapes(student: Submission, device: torch.device) -> None:
    """Strides of 1-D to 4-D shapes with no size-0 or size-1 dims match torch."""
    _expect_strides(student, [(5,), (2, 3), (3, 2), (2, 3, 4), (4, 2, 3, 5), (300, 7), (513, 2, 600)],
                    "wrong strides for an ordinary shape")


@CONTIGUOUS_STRIDES.check(points=1)
def scalar_and_size_one_dims(student: Submission, device: torch.device) -> None:
    """A 0-d shape () has strides (); size-1 dims get the product of the sizes after them."""
    _expect_strides(student, [(), [], (1,), (1, 1), (3, 1, 4), (1, 5), (5, 1), (2, 1, 1, 3)],
                    "wrong strides for a scalar shape or one with size-1 dims")


@CONTIGUOUS_STRIDES.check(points=1)
def size_zero_dims(student: Submission, device: torch.device) -> None:
    """Shapes with a size-0 dim have the strides torch gives them (a 0 counts as 1 in the products)."""
    _expect_strides(student, [(0,), (2, 0, 3), (0, 4), (3, 0), (0, 0, 2), [4, 0, 5, 6]],
                    "wrong strides for a shape with a size-0 dim")


@CONTIGUOUS_STRIDES.check(points=1)
def any_sequence_and_random_shapes(student: Submission, device: torch.device) -> None:
    """Lists, tuples, ranges and torch.Size are accepted; random shapes up to 6-D match torch."""
    shapes: list = [[2, 3, 4], torch.Size([3, 4]), (6, 1, 2), range(2, 5), [1000, 1000, 3]]
    for _ in range(40):
        ndim = random.randint(0, 6)
        shape = tuple(random.choice([0, 1, 1, 2, 3, 5, 7, 300]) for _ in range(ndim))
        shapes.append(list(shape) if random.random() < 0.5 else shape)
    _expect_strides(student, shapes, "wrong strides")


def _strides_without_tensors(student: RunnerStudent, shape: tuple) -> dict:
    """In the student's process: call contiguous_strides and note whether it created any tensor."""
    with torch_calls() as calls:
        try:
            got = student.call("contiguous_strides", shape)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported below, with what it called
            got, error = None, exc
    if calls.created_tensors:
        return {"created": calls.describe(), "failed": str(error) if error else ""}
    if error is not None:
        raise error
    return {"created": "", "got": got}


@CONTIGUOUS_STRIDES.check(points=1)
def pure_python(student: Submission, device: torch.device) -> None:
    """Works without creating a tensor (even for a shape far too large to allocate)."""
    shape = (2**20, 2**20, 2**20)  # 2**60 elements: no machine can allocate torch.empty(shape)
    expected = _torch_strides(shape)
    rule = ("the exercise asks for pure Python arithmetic on the sizes, without creating a tensor of "
            "that shape (not even on the meta device)")
    try:
        seen = student.scenario(_strides_without_tensors, shape)
    except StudentCodeError as exc:
        raise exc.within(f"contiguous_strides({shape!r})") from None
    if seen["created"]:
        failed = f" and failed: {seen['failed']}" if seen.get("failed") else ""
        fail(f"contiguous_strides({shape!r}) called {seen['created']}{failed}; {rule}")
    got = seen["got"]
    if not isinstance(got, (tuple, list)) or tuple(got) != expected:
        fail_mismatch("wrong strides for a very large shape", given=f"shape={shape!r}", expected=repr(expected),
                      got=show(got), cause=_strides_cause(shape, tuple(got)) if isinstance(got, (tuple, list)) else None)
