"""contiguous_strides(shape) -> the strides of a new C-ordered tensor of that shape, in pure Python.

Every check sends shapes of every Sequence type the specification allows (tuples, lists, ranges,
torch.Size), collects every answer, then reports the first wrong one. A likely cause is named only when
one known wrong rule explains *every* answer the check collected (and the right rule does not).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import random
from collections.abc import Callable
from typing import Any

import torch

from graders.compare import show, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission
from graders.watch import torch_calls

CONTIGUOUS_STRIDES = exercise("contiguous_strides", chapter="01_tensors", names=["contiguous_strides"])


def _torch_strides(shape) -> tuple[int, ...]:
    return _torch_strides_of(tuple(shape))


@functools.lru_cache(maxsize=4096)
def _torch_strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    # The meta device lays out strides exactly like a real allocation, without allocating; strides do
    # not depend on the dtype, and one-byte elements keep even a huge shape's byte count representable.
    return tuple(torch.empty(tuple(shape), device="meta", dtype=torch.uint8).stride())


# -- known wrong rules: shape -> the strides a particular mistake gives ------------------------------
def _reversed(shape):
    return tuple(reversed(_torch_strides(shape)))


def _fortran(shape):
    return tuple(math.prod(max(s, 1) for s in shape[:i]) for i in range(len(shape)))


def _own_size_included(shape):
    return tuple(math.prod(max(s, 1) for s in shape[i:]) for i in range(len(shape)))


def _unclamped(shape):
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def _product_or_one(shape):
    return tuple(math.prod(shape[i + 1:]) or 1 for i in range(len(shape)))


def _restarts_after_zero(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step = 1 if size == 0 else step * size
    return tuple(reversed(strides))


def _size_one_gets_one(shape):
    return tuple(1 if size == 1 else stride for size, stride in zip(shape, _torch_strides(shape)))


def _size_one_skipped(shape):
    return tuple(stride for size, stride in zip(shape, _torch_strides(shape)) if size != 1)


def _scalar_gets_one(shape):
    return (1,) if not shape else _torch_strides(shape)


def _constant_when_empty(value: int):
    def rule(shape):
        return (value,) * len(shape) if 0 in shape else _torch_strides(shape)
    return rule


def _times(factor: int):
    def rule(shape):
        return tuple(factor * s for s in _torch_strides(shape))
    return rule


def _int32(shape):
    return tuple((s + 2**31) % 2**32 - 2**31 for s in _torch_strides(shape))


_RULES: list[tuple[Callable[[tuple], tuple], str]] = [
    (_reversed, "the strides are in reverse order: the LAST dim has stride 1 and the first dim the largest "
                "stride (build them from the last dim, then reverse the list)"),
    (_fortran, "this is column-major (Fortran) order, stride[i] = product of the sizes BEFORE dim i; PyTorch is "
               "row-major (C order): stride[i] is the product of the sizes AFTER dim i"),
    (_own_size_included, "off by one dim: stride[i] is the product of the sizes AFTER dim i, not from dim i on"),
    (_unclamped, "a size-0 dim zeroes the product; PyTorch multiplies by max(size, 1) so strides stay positive"),
    (_product_or_one, "a size-0 dim must count as 1 INSIDE the product (multiply by max(size, 1)); replacing a zero "
                      "product by 1 afterwards loses the other sizes"),
    (_restarts_after_zero, "the running product starts again from 1 after a size-0 dim, which forgets the sizes "
                           "already multiplied; a size-0 dim counts as 1, so keep multiplying: step *= max(size, 1)"),
    (_size_one_gets_one, "a size-1 dim still gets the product of the sizes after it, like any other dim"),
    (_size_one_skipped, "a size-1 dim was left out, but every dim has a stride (the product of the sizes after it); "
                        "size-1 dims are only skipped when CHECKING contiguity"),
    (_scalar_gets_one, "there must be one stride per dim: a 0-d shape () has no dims, so its strides are the empty "
                       "tuple ()"),
    (_constant_when_empty(1), "a shape with a size-0 dim was given strides of all ones; PyTorch lays it out like "
                              "any other shape, counting a size-0 dim as 1: (2, 0, 3) -> (3, 3, 1)"),
    (_constant_when_empty(0), "a shape with a size-0 dim was given strides of all zeros; PyTorch lays it out like "
                              "any other shape, counting a size-0 dim as 1: (2, 0, 3) -> (3, 3, 1)"),
    *[(_times(k), f"every stride is {k} times too large: strides count elements, not bytes (the last dim has "
                  "stride 1)") for k in (2, 4, 8, 16)],
    (_int32, "a stride is off by a multiple of 2**32: the products overflowed 32-bit integers (numpy with "
             "dtype=np.int32, or numpy's default int on Windows); Python ints never overflow"),
]

_SEQUENCE_CAUSE = ("your function gives the right strides for the tuple {tuple_shape!r} but not for the same shape "
                   "as a {kind}; shape can be any Sequence[int] (a list, a tuple, a range, torch.Size): convert it "
                   "first with shape = tuple(shape) (a list never equals a tuple, and list + tuple or range + tuple "
                   "raise TypeError)")
_NO_TENSOR_RULE = ("the exercise asks for pure Python arithmetic on the sizes, without creating a tensor of that shape "
                   "(not even on the meta device)")


@dataclasses.dataclass
class _Answer:
    shape: Any  # as sent: a tuple, list, range or torch.Size
    got: Any = None
    error: StudentError | None = None
    changed_to: Any = None  # the list the student's code left behind, when it changed the list it was given

    @property
    def key(self) -> tuple:
        return tuple(self.shape)

    def strides(self) -> tuple[int, ...] | None:
        """The answer as a tuple of ints, or None when it is not a tuple (or list) of ints."""
        if self.error is None and isinstance(self.got, (tuple, list)) and all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in self.got):
            return tuple(int(v) for v in self.got)
        return None


def _strides_of_each(student: RunnerStudent, shapes: list) -> list:
    """In the student's process: call contiguous_strides on each shape; what it returned or raised."""
    seen = []
    for shape in shapes:
        try:
            seen.append({"got": student.call("contiguous_strides", shape)})
        except StudentRaised as exc:
            seen.append({"error": dataclasses.asdict(exc.error)})
        seen[-1]["after"] = shape if isinstance(shape, list) else None  # a list the student's code may have changed
    return seen


def _ask(student: Submission, shapes: list, *, batch: bool = False) -> list[_Answer]:
    """Every shape's answer. One request per shape (so an endless loop is pinned on its shape), or one
    request for all of them (``batch``: many random shapes)."""
    answers = []
    if batch:
        try:
            seen = student.scenario(_strides_of_each, list(shapes))
        except StudentCodeError as exc:  # it never came back: an endless loop or a crash on one of them
            raise exc.within(f"contiguous_strides on one of the shapes {', '.join(map(repr, shapes))}") from None
        for shape, one in zip(shapes, seen):
            error = StudentError(**one["error"]) if "error" in one else None
            after = one["after"]
            answers.append(_Answer(shape, one.get("got"), error, after if isinstance(shape, list) and after != shape
                                   else None))
        return answers
    for shape in shapes:
        try:
            got, args, _ = student.call_with_inputs("contiguous_strides", shape)
        except StudentCodeError as exc:
            if exc.error.kind != "raised":  # the runner is gone (timeout, crash): nothing more can be asked
                raise exc.within(f"contiguous_strides(shape={shape!r})") from None
            answers.append(_Answer(shape, error=exc.error))
            continue
        after = args[0]
        answers.append(_Answer(shape, got, None, after if isinstance(shape, list) and after != shape else None))
    return answers


def _right_for_tuple(student: Submission, shape) -> bool:
    """Whether the student's function gets ``tuple(shape)`` right (evidence that only the type is the problem)."""
    if type(shape) is tuple:
        return False
    try:
        got = student.call("contiguous_strides", tuple(shape))
    except StudentCodeError as exc:
        if exc.error.kind != "raised":
            raise exc.within(f"contiguous_strides(shape={tuple(shape)!r})") from None
        return False
    answer = _Answer(tuple(shape), got)
    return isinstance(got, tuple) and answer.strides() == _torch_strides(shape)


def _sequence_cause(shape) -> str:
    return _SEQUENCE_CAUSE.format(tuple_shape=tuple(shape), kind=type(shape).__name__)


def _rule_cause(answers: list[_Answer]) -> str | None:
    """The cause of the one known wrong rule that gives every answer collected, if exactly one does."""
    valid = [(a.key, a.strides()) for a in answers if a.strides() is not None]
    explaining = [cause for rule, cause in _RULES
                  if all(rule(shape) == got for shape, got in valid)
                  and any(rule(shape) != _torch_strides(shape) for shape, _ in valid)]
    return explaining[0] if len(explaining) == 1 else None


def _type_problem(answer: _Answer, answers: list[_Answer]) -> str | None:
    """What is wrong with the type of the answer, or None when it is a tuple of ints."""
    got, shape = answer.got, answer.shape
    call = f"contiguous_strides({shape!r}) returned {show(got)}"
    if got is None:
        return (f"contiguous_strides({shape!r}) returned None: the function must return the tuple of strides "
                "(likely cause: no return statement on this path)")
    if type_name(got) == "generator":
        return (f"{call}, a generator; the specification asks for a tuple (likely cause: a generator expression "
                "(... for ... in ...) in parentheses, or a yield, makes a generator, not a tuple: write "
                "tuple(... for ... in ...))")
    if not isinstance(got, tuple):
        # The hint is given when every list answered holds the right strides (and one of them is not empty).
        lists = [a for a in answers if a.error is None and isinstance(a.got, list)]
        right = (isinstance(got, list) and any(a.got for a in lists)
                 and all(a.strides() == _torch_strides(a.shape) for a in lists))
        hint = " (likely cause: the strides were collected in a list; convert at the end: return tuple(strides))"
        hint = hint if right else ""
        return f"{call}, a {type_name(got)}; the specification asks for a tuple like torch's stride(){hint}"
    bad = [v for v in got if not isinstance(v, numbers.Integral) or isinstance(v, bool)]
    if not bad:
        return None
    return (f"{call}; strides count elements, so each must be an int, not {type_name(bad[0])}"
            + (f" (likely cause: {cause})" if (cause := _float_cause(answers)) else ""))


def _is_float(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral)


def _float_cause(answers: list[_Answer]) -> str | None:
    """Name how floats got in, when every answer of two dims or more shows the same pattern."""
    patterns = set()
    for a in answers:
        if a.error is None and isinstance(a.got, (tuple, list)) and len(a.got) >= 2:
            floats = [_is_float(v) for v in a.got]
            if all(floats):
                patterns.add("all")
            elif floats[-1] and not any(floats[:-1]):
                patterns.add("last")
            else:
                patterns.add("other")
    if patterns == {"last"}:
        return ("only the last stride is a float: numpy.prod of an empty list (the sizes after the last dim) is "
                "1.0, a float; strides are ints (start the product from the int 1, or use math.prod)")
    if patterns == {"all"}:
        return ("every stride is a float: '/' always gives a float in Python 3 (use '//'), or the products were "
                "computed with floats; strides are ints")
    return None


def _expect_strides(student: Submission, shapes: list, what: str, *, batch: bool = False) -> None:
    """Ask for every shape, then report the first wrong answer, naming a cause the answers single out."""
    answers = _ask(student, shapes, batch=batch)
    for answer in answers:
        shape, expected = answer.shape, _torch_strides(answer.shape)
        if answer.error is not None:
            error = StudentCodeError(answer.error, f"contiguous_strides(shape={shape!r})")
            if _right_for_tuple(student, shape):
                fail(f"{error.describe()}\n  likely cause: {_sequence_cause(shape)}")
            if answer.error.exception_type == "ZeroDivisionError" and 0 in tuple(shape):
                fail(f"{error.describe()}\n  likely cause: a division by a size, which is 0 for a size-0 dim; build "
                     "the strides by multiplying max(size, 1) from the last dim instead")
            raise error
        problem = _type_problem(answer, answers)
        if problem:
            if "likely cause" not in problem and len(shape) and _right_for_tuple(student, shape):
                problem += f"\n  likely cause: {_sequence_cause(shape)}"
            fail(problem)
        if answer.changed_to is not None:
            fail(f"contiguous_strides changed the list it was given: shape was {shape!r} before the call and "
                 f"{show(answer.changed_to)} after it; a function that computes strides must leave its input as it "
                 "was (likely cause: an in-place list operation such as reverse(), sort(), pop(), insert() or an "
                 "item assignment on the caller's list; work on a copy: sizes = list(shape))")
        got = answer.strides()
        if got != expected:
            cause = _sequence_cause(shape) if _right_for_tuple(student, shape) else _rule_cause(answers)
            if cause is None and len(got) != len(expected):
                cause = (f"there must be one stride per dim: {len(expected)} for this shape, and you returned "
                         f"{len(got)}")
            where = None
            if len(got) == len(expected):
                dim = next(i for i, (g, e) in enumerate(zip(got, expected)) if g != e)
                where = f"dim {dim}: expected stride {expected[dim]}, returned {got[dim]}"
            fail_mismatch(what, given=f"shape={shape!r}", expected=f"{expected!r}  (torch.empty(shape).stride())",
                          got=show(got), where=where, cause=cause)


# Each check's shapes (module level, so that tests can replay every known wrong rule on them).
SHAPES: dict[str, list] = {
    "returns_tuple_of_ints": [(2, 3), [3, 5, 2], (4,), (300, 2), torch.Size([2, 2])],
    "ordinary_shapes": [(5,), (2, 3), (3, 2), (2, 3, 4), (4, 2, 3, 5), (300, 7), (513, 2, 600), [6, 2]],
    "scalar_and_size_one_dims": [(), [], torch.Size([]), (1,), (1, 1), (3, 1, 4), (1, 5), (5, 1), (2, 1, 1, 3),
                                 [1, 300, 1]],
    # Shapes without a size-0 dim come last: they tell a rule for size-0 dims from one applied everywhere.
    "size_zero_dims": [(0,), (2, 0, 3), (0, 4), (3, 0), (0, 0, 2), [4, 0, 5, 6], (3, 0, 2, 0, 4), torch.Size([0, 300]),
                       (2, 3), [3, 4, 5]],
    "any_sequence_and_random_shapes": [[2, 3, 4], torch.Size([3, 4]), (6, 1, 2), range(2, 5), range(0), range(1, 4),
                                       [1000, 1000, 3], [0, 5], torch.Size([5, 1, 0])],
    "pure_python": [(2**20, 2**20, 2**20)],  # 2**60 elements: no machine can allocate torch.empty(shape)
}


def _random_shapes() -> list:
    rng = random.Random(5)
    shapes: list = []
    for _ in range(40):
        shape = tuple(rng.choice([0, 1, 1, 2, 3, 5, 7, 300]) for _ in range(rng.randint(0, 6)))
        shapes.append(rng.choice([list, tuple, tuple, torch.Size])(shape))
    return shapes


@CONTIGUOUS_STRIDES.check(points=1)
def returns_tuple_of_ints(student: Submission, device: torch.device) -> None:
    """The result is a tuple of ints, one per dim."""
    _expect_strides(student, SHAPES["returns_tuple_of_ints"], "wrong strides")


@CONTIGUOUS_STRIDES.check(points=1)
def ordinary_shapes(student: Submission, device: torch.device) -> None:
    """Strides of 1-D to 4-D shapes with no size-0 or size-1 dims match torch."""
    _expect_strides(student, SHAPES["ordinary_shapes"], "wrong strides for an ordinary shape")


@CONTIGUOUS_STRIDES.check(points=1)
def scalar_and_size_one_dims(student: Submission, device: torch.device) -> None:
    """A 0-d shape () has strides (); size-1 dims get the product of the sizes after them."""
    _expect_strides(student, SHAPES["scalar_and_size_one_dims"],
                    "wrong strides for a scalar shape or one with size-1 dims")


@CONTIGUOUS_STRIDES.check(points=1)
def size_zero_dims(student: Submission, device: torch.device) -> None:
    """Shapes with a size-0 dim have the strides torch gives them (a 0 counts as 1 in the products)."""
    _expect_strides(student, SHAPES["size_zero_dims"], "wrong strides for a shape with a size-0 dim")


@CONTIGUOUS_STRIDES.check(points=1)
def any_sequence_and_random_shapes(student: Submission, device: torch.device) -> None:
    """Lists, tuples, ranges and torch.Size are accepted; random shapes up to 6-D match torch."""
    _expect_strides(student, SHAPES["any_sequence_and_random_shapes"],
                    "wrong strides for a shape given as a list, range or torch.Size")
    _expect_strides(student, _random_shapes(), "wrong strides", batch=True)


def _strides_without_tensors(student: RunnerStudent, shape: tuple) -> dict:
    """In the student's process: call contiguous_strides and note whether it created any tensor."""
    with torch_calls() as calls:
        try:
            got = student.call("contiguous_strides", shape)
            error = None
        except StudentRaised as exc:  # reported below, with what it called
            got, error = None, exc
    if calls.created_tensors:
        return {"created": calls.describe(), "failed": error.error.summary if error else ""}
    if error is not None:
        raise error
    return {"created": "", "got": got}


@CONTIGUOUS_STRIDES.check(points=1)
def pure_python(student: Submission, device: torch.device) -> None:
    """Works without creating a tensor (even for a shape far too large to allocate)."""
    (shape,) = SHAPES["pure_python"]
    try:
        seen = student.scenario(_strides_without_tensors, shape)
    except StudentCodeError as exc:
        raise exc.within(f"contiguous_strides({shape!r})") from None
    if seen["created"]:
        failed = f" and failed: it {seen['failed']}" if seen.get("failed") else ""
        fail(f"contiguous_strides({shape!r}) called {seen['created']}{failed}; {_NO_TENSOR_RULE}")
    answer = _Answer(shape, seen["got"])
    answers = [answer]
    problem = _type_problem(answer, answers)
    if problem:
        fail(problem)
    expected = _torch_strides(shape)
    if answer.strides() != expected:
        fail_mismatch("wrong strides for a very large shape", given=f"shape={shape!r}", expected=repr(expected),
                      got=show(answer.strides()), cause=_rule_cause(answers))
