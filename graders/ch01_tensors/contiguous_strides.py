"""contiguous_strides(shape) -> the strides of a new C-ordered tensor of that shape, in pure Python.

Every check sends shapes of every Sequence type the specification allows (tuples, lists, ranges,
torch.Size), collects every answer, then reports the first wrong one. After its hand-written shapes, each
check draws shapes from its part of the specification's domain (``generate_shape``: every Sequence type, 0 to 14
dims, sizes 0, 1, small, past 256 and past 2**31, products past 2**31, 2**32, 2**53 and near 2**62) and sends
them in one request; the judge compares each answer with torch's strides and reports the smallest failing shape,
shrunk further (one dim fewer, a smaller size, the same Sequence type). A likely cause is named only when
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

from graders import domain
from graders.compare import show, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission
from graders.watch import torch_calls

CONTIGUOUS_STRIDES = exercise("contiguous_strides", chapter="01_tensors", names=["contiguous_strides"])


@judge_only
def _torch_strides(shape) -> tuple[int, ...]:
    return _torch_strides_of(tuple(shape))


@judge_only
@functools.lru_cache(maxsize=8192)
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


def _ask(student: Submission, shapes: list, *, batch: bool = False, label: str | None = None) -> list[_Answer]:
    """Every shape's answer. One request per shape (so an endless loop is pinned on its shape), or one
    request for all of them (``batch``: many random shapes)."""
    answers = []
    if batch:
        try:
            seen = student.scenario(_strides_of_each, list(shapes))
        except StudentCodeError as exc:  # it never came back: an endless loop or a crash on one of them
            raise exc.within(label or f"contiguous_strides on one of the shapes {', '.join(map(repr, shapes))}") \
                from None
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
                "(None is what a function returns when it ends without a return statement, and what in-place list "
                "methods such as reverse() and sort() return)")
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
    _judge_answers(student, _ask(student, shapes, batch=batch), what)


@judge_only
def _right(answer: _Answer) -> bool:
    """Whether an answer is exactly what the specification asks for (the judge's one verdict on a case)."""
    return (answer.error is None and answer.changed_to is None and isinstance(answer.got, tuple)
            and answer.strides() == _torch_strides(answer.shape))


def _judge_answers(student: Submission, answers: list[_Answer], what: str) -> None:
    """Report the first wrong answer, naming a cause the answers single out."""
    for answer in answers:
        shape, expected = answer.shape, _torch_strides(answer.shape)
        if answer.error is not None:
            error = StudentCodeError(answer.error, f"contiguous_strides(shape={shape!r})")
            if _right_for_tuple(student, shape):
                fail(f"{error.describe()}\n  likely cause: {_sequence_cause(shape)}")
            if answer.error.exception_type == "ZeroDivisionError" and 0 in tuple(shape):
                fail(f"{error.describe()}\n  likely cause: a division by a size (or by a product of sizes, or a % "
                     "by one), which is 0 for a size-0 dim; build the strides by multiplying max(size, 1) from the "
                     "last dim instead")
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


# ==================================================================================================
# The input domain: every shape the specification allows ("every shape, including (), dims of size 1 and dims
# of size 0", given as any Sequence[int]: a tuple, a list, a range, torch.Size)
# ==================================================================================================
KINDS = ("tuple", "list", "torch.Size", "range")
LARGEST = 2**62  # torch.empty(shape) needs numel (counting a 0 as 1) below 2**63: strides stay int64
# Size classes besides 0 and 1 (the special dims): small, past the 256 ints Python caches, and huge (past 2**16,
# around 2**31 and past 2**32: sizes and products that overflow 32-bit ints).
SMALL, PAST_256 = (2, 3, 4, 5, 6, 7), (257, 300, 511, 1000, 4099)
HUGE = (2**16 + 1, 2**20, 2**31 - 1, 2**31 + 1, 2**32 + 3)


def _as_kind(kind: str, sizes: list[int]):
    return {"tuple": tuple, "list": list, "torch.Size": torch.Size}[kind](sizes)


def _range_shape(rng: random.Random) -> range:
    """A range of non-negative sizes: increasing, decreasing (to 0 or not), of step 1 or more, or empty."""
    length = domain.small_int(rng, 0, 5)
    step = domain.pick(rng, [1, 1, 2, 3, -1, -1, -2])
    if step > 0:
        start = domain.small_int(rng, 0, 6)
    else:
        start = rng.randint((length - 1) * -step, (length - 1) * -step + 4) if length else rng.randint(0, 4)
    return range(start, start + step * length, step)


def _size(rng: random.Random, zeros: bool, ones: bool, big: bool) -> int:
    classes = ["small"] * 4 + ["zero"] * zeros + ["one"] * (2 if ones else 0) + ["past 256", "huge"] * big
    chosen = domain.pick(rng, classes)
    return {"small": lambda: domain.pick(rng, SMALL), "zero": lambda: 0, "one": lambda: 1,
            "past 256": lambda: domain.pick(rng, PAST_256), "huge": lambda: domain.pick(rng, HUGE)}[chosen]()


def generate_shape(rng: random.Random, *, zeros: bool | None = None, ones: bool | None = None, big: bool = True,
                   kinds: tuple[str, ...] = KINDS) -> Any:
    """A shape of the specification's domain. ``zeros``/``ones``: True forces at least one size-0/size-1 dim, False
    leaves them out, None lets chance decide (each is drawn as often as an ordinary size)."""
    kind = domain.pick(rng, kinds, weights=[{"tuple": 3, "list": 3, "torch.Size": 2, "range": 1}[k] for k in kinds])
    if kind == "range":
        for _ in range(50):
            shape = _range_shape(rng)
            if (zeros is None or zeros == (0 in shape)) and (ones is None or ones == (1 in shape)):
                return shape
        kind = "tuple"
    ndim = domain.small_int(rng, 0, 8) if rng.random() < 0.9 else rng.randint(9, 14)
    want_zero, want_one = rng.random() < 0.25 if zeros is None else zeros, rng.random() < 0.5 if ones is None else ones
    if want_zero or want_one:
        ndim = max(ndim, 1 + (want_zero and want_one))
    sizes = [_size(rng, want_zero, want_one, big) for _ in range(ndim)]
    if want_zero and 0 not in sizes:
        sizes[rng.randrange(ndim)] = 0
    if want_one and 1 not in sizes:
        free = [i for i, n in enumerate(sizes) if n != 0] or [rng.randrange(ndim)]
        sizes[rng.choice(free)] = 1
    if big and rng.random() < 0.2:  # products past 32-bit ints, 2**53 (floats) or near the int64 limit
        target = domain.pick(rng, [2**31, 2**32, 2**53, 2**60])
        sizes = sizes or [domain.pick(rng, SMALL)]
        while math.prod(max(n, 1) for n in sizes) < target and len(sizes) < 16:
            grow = [i for i, n in enumerate(sizes) if n > 1]
            if grow and rng.random() < 0.5:
                i = rng.choice(grow)
                sizes[i] = min(sizes[i] * domain.pick(rng, PAST_256), 2**33)
            else:
                sizes.insert(rng.randint(0, len(sizes)), domain.pick(rng, HUGE + PAST_256))
        ndim = len(sizes)
    while math.prod(max(n, 1) for n in sizes) >= LARGEST:  # the largest size goes back to a small one
        largest = max(range(ndim), key=lambda i: sizes[i])
        sizes[largest] = domain.pick(rng, SMALL)
    return _as_kind(kind, sizes)


def shape_size(shape) -> tuple:
    """Order of shapes for reporting: fewer dims first, then smaller sizes (a huge size counts as a little more
    than a small one), so that the first failure a check reports is a small case."""
    sizes = tuple(shape)
    return len(sizes), sum(min(n, 1000) + (n > 1000) for n in sizes), sizes


def shrink_candidates(shape) -> list:
    """Smaller shapes of the same Sequence type: one dim fewer, or one size smaller (0, 1, 2 or half of it)."""
    if isinstance(shape, range):
        found = [range(shape.start, shape.stop - shape.step, shape.step),
                 range(shape.start + shape.step, shape.stop, shape.step)]
        return [r for r in found if len(r) < len(shape)]
    kind = "torch.Size" if isinstance(shape, torch.Size) else type(shape).__name__
    sizes = list(shape)
    found = [sizes[:i] + sizes[i + 1:] for i in range(len(sizes))]
    for i, n in enumerate(sizes):
        found += [sizes[:i] + [m] + sizes[i + 1:] for m in dict.fromkeys((0, 1, 2, n // 2)) if m < n]
    return [_as_kind(kind, f) for f in found]


def _in_domain(shape, *, zeros: bool | None = None, ones: bool | None = None, **_: Any) -> bool:
    return (zeros is None or zeros == (0 in tuple(shape))) and (ones is None or ones == (1 in tuple(shape)))


def _random_shapes(count: int = 300, **options: Any) -> list:
    """``count`` shapes drawn from the domain (scaled by the benchmark), smallest first."""
    return domain.draw(functools.partial(generate_shape, **options), count, size=shape_size)


def _expect_generated(student: Submission, what: str, count: int = 300, **options: Any) -> None:
    """Generated shapes in one request; the smallest failing one (shrunk further) is reported, with the
    evidence of every answer for the cause."""
    shapes = _random_shapes(count, **options)
    answers = _ask(student, shapes, batch=True,
                   label=f"contiguous_strides on one of {len(shapes)} generated shapes (from {shapes[0]!r} to "
                         f"{shapes[-1]!r})")
    failing = [not _right(a) for a in answers]
    if not any(failing):
        return
    first = domain.smallest(shapes, failing, shape_size)

    def fails(candidates: list) -> list[bool]:
        try:
            return [not _right(a) for a in _ask(student, candidates, batch=True)]
        except StudentCodeError:  # a candidate the runner did not come back from: not a smaller failure to report
            return [False] * len(candidates)

    def candidates(shape) -> list:  # smaller shapes still inside the check's part of the domain
        return [c for c in shrink_candidates(shape) if _in_domain(c, **options)]

    shrunk = domain.shrink(first, candidates, fails)
    drawn = next(a for a in answers if a.shape is first)
    answer = _ask(student, [shrunk], batch=True)[0] if shrunk is not first else drawn
    if _right(answer):  # the runner answered otherwise this time: report the failing case as drawn
        answer = drawn
    _judge_answers(student, [answer, *answers],
                   f"{what} ({sum(failing)} of {len(shapes)} generated shapes failed; this is the smallest failing "
                   "shape found)")
    fail(f"{what}: contiguous_strides({answer.shape!r}) (a grader error if you read this: please report it)")


@CONTIGUOUS_STRIDES.check(points=1)
def returns_tuple_of_ints(student: Submission, device: torch.device) -> None:
    """The result is a tuple of ints, one per dim."""
    _expect_strides(student, SHAPES["returns_tuple_of_ints"], "wrong strides")


@CONTIGUOUS_STRIDES.check(points=1)
def ordinary_shapes(student: Submission, device: torch.device) -> None:
    """Strides of shapes with no size-0 or size-1 dims (up to 14-D, sizes past 2**31) match torch."""
    _expect_strides(student, SHAPES["ordinary_shapes"], "wrong strides for an ordinary shape")
    _expect_generated(student, "wrong strides for a generated shape without size-0 or size-1 dims", 100,
                      zeros=False, ones=False)


@CONTIGUOUS_STRIDES.check(points=1)
def scalar_and_size_one_dims(student: Submission, device: torch.device) -> None:
    """A 0-d shape () has strides (); size-1 dims get the product of the sizes after them."""
    _expect_strides(student, SHAPES["scalar_and_size_one_dims"],
                    "wrong strides for a scalar shape or one with size-1 dims")
    _expect_generated(student, "wrong strides for a generated shape with size-1 dims", 100, zeros=False, ones=True)


@CONTIGUOUS_STRIDES.check(points=1)
def size_zero_dims(student: Submission, device: torch.device) -> None:
    """Shapes with a size-0 dim have the strides torch gives them (a 0 counts as 1 in the products)."""
    _expect_strides(student, SHAPES["size_zero_dims"], "wrong strides for a shape with a size-0 dim")
    _expect_generated(student, "wrong strides for a generated shape with a size-0 dim", 100, zeros=True)


@CONTIGUOUS_STRIDES.check(points=1)
def any_sequence_and_random_shapes(student: Submission, device: torch.device) -> None:
    """Lists, tuples, ranges and torch.Size are accepted; generated shapes of every kind match torch."""
    _expect_strides(student, SHAPES["any_sequence_and_random_shapes"],
                    "wrong strides for a shape given as a list, range or torch.Size")
    _expect_generated(student, "wrong strides for a generated shape", 250)


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
