"""is_contiguous(shape, strides) -> PyTorch's contiguity rule, for any sequences of ints.

Every check sends layouts as tuples, lists, ranges and torch.Size, collects every answer, then reports
the first wrong one. After its hand-written layouts, each check draws layouts from its part of the
specification's domain (``generate_layout``: C order edited the way real views are, permuted, sliced, stepped,
expanded, gapped, Fortran, size-1 noise, random strides; sizes and strides past 256 and 2**31; any Sequence type
for each; ``generate_mismatch`` for lengths that differ) in one request, and reports the smallest failing one,
shrunk further. A likely cause is named only when one known wrong rule gives *every* answer the
check collected (and differs from PyTorch's rule on at least one of them); for a length check, only when
exactly one catalogued misplaced or partial check raises on exactly the layouts the student's code raised on.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from graders import domain
from graders.ch01_tensors.contiguous_strides import _torch_strides
from graders.compare import show, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission

IS_CONTIGUOUS = exercise("is_contiguous", chapter="01_tensors", names=["is_contiguous"])


@judge_only
def _torch_is_contiguous(shape, strides) -> bool:
    return _torch_is_contiguous_of(tuple(shape), tuple(strides))


@judge_only
@functools.lru_cache(maxsize=16384)
def _torch_is_contiguous_of(shape: tuple, strides: tuple) -> bool:
    """Ask PyTorch: a view with this shape and these strides over a storage large enough for it."""
    needed = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) if 0 not in shape else 0
    return torch.empty(max(needed, 1), device="meta").as_strided(shape, strides).is_contiguous()


# -- known wrong rules: (shape, strides) -> the answer a particular mistake gives -------------------
def _walk(shape, strides, *, last_first=True, skip_size_one=True, empty_is_contiguous=True, skip_stride_zero=False,
          scalar=True, same: Callable[[int, int], bool] = lambda stride, expected: stride == expected) -> bool:
    if empty_is_contiguous and 0 in shape:
        return True
    if not shape:
        return scalar
    pairs = zip(reversed(shape), reversed(strides)) if last_first else zip(shape, strides)
    expected = 1
    for size, stride in pairs:
        if (skip_size_one and size == 1) or (skip_stride_zero and stride == 0):
            continue
        if not same(stride, expected):
            return False
        expected *= size
    return True


def _decreasing(shape, strides) -> bool:
    if 0 in shape or not shape:
        return True
    kept = [stride for size, stride in zip(shape, strides) if size != 1]
    return not kept or (kept[-1] == 1 and all(a >= b for a, b in zip(kept, kept[1:])))


_RULES: list[tuple[Callable[[tuple, tuple], bool], str]] = [
    (functools.partial(_walk, last_first=False),
     "walk from the LAST dim to the first: in C order the last dim has stride 1 and each earlier stride is the product "
     "of the sizes after it; walking from the first dim checks Fortran (column-major) order"),
    (functools.partial(_walk, skip_size_one=False),
     "size-1 dims must be skipped: stepping along them never happens, so their stride does not matter"),
    (functools.partial(_walk, empty_is_contiguous=False),
     "a tensor with no elements (a size-0 dim) is contiguous whatever its strides: return True before looking at any "
     "stride"),
    (functools.partial(_walk, skip_stride_zero=True),
     "an expanded dim (stride 0, size > 1) shows the same elements again and again; only size-1 dims may be skipped: "
     "a stride of 0 on a dim of size > 1 makes the layout non-contiguous"),
    (_decreasing,
     "strides that merely decrease (and end in 1) are not enough: each stride must EQUAL the product of the sizes "
     "after it, or there are gaps or overlaps"),
    (functools.partial(_walk, same=lambda stride, expected: stride >= expected),
     "a stride larger than the product of the sizes after it leaves gaps; each stride must EQUAL that product, not "
     "exceed it"),
    (functools.partial(_walk, same=lambda stride, expected: stride == expected and expected <= 256),
     "`is` compares object identity, not value: Python keeps one object per int only from -5 to 256, so "
     "`stride is expected` is False for equal values past 256; compare with =="),
    (functools.partial(_walk, scalar=False),
     "a 0-d shape () has no dims to check: a scalar tensor is contiguous"),
    (lambda shape, strides: 0 in shape or _walk(shape[1:], strides[1:]),
     "dim 0 is never checked: range(len(shape) - 1, 0, -1) stops before index 0; use range(len(shape) - 1, -1, -1) "
     "(or walk zip(reversed(shape), reversed(strides)))"),
    (lambda shape, strides: 0 in shape or not shape or strides[-1] == 1,
     "looking only at the last stride is not the rule: every dim of size > 1 must have a stride equal to the "
     "product of the sizes after it (a slice of columns ends in stride 1 too, and a size-1 last dim may have any "
     "stride)"),
]

_SEQUENCE_CAUSE = ("your function answers right for the same layout given as tuples, {tuples}; shape and strides can "
                   "be any Sequence[int] (a list, a tuple, a range, torch.Size): convert them first with "
                   "tuple(shape), tuple(strides) (a list never equals a tuple)")


@dataclasses.dataclass
class _Answer:
    shape: Any
    strides: Any
    got: Any = None
    error: StudentError | None = None
    changed: str | None = None  # what the student's code did to a list it was given

    @property
    def key(self) -> tuple[tuple, tuple]:
        return tuple(self.shape), tuple(self.strides)

    def answer(self) -> bool | None:
        if self.error is None and isinstance(self.got, (bool, np.bool_)):  # a numpy bool is a fine bool too
            return bool(self.got)
        return None

    def call(self) -> str:
        return f"is_contiguous(shape={self.shape!r}, strides={self.strides!r})"


def _changed(shape, strides, shape_after, strides_after) -> str | None:
    for name, before, after in (("shape", shape, shape_after), ("strides", strides, strides_after)):
        if isinstance(before, list) and after != before:
            return f"{name} was {before!r} before the call and {show(after)} after it"
    return None


def _contiguity_of_each(student: RunnerStudent, layouts: list) -> list:
    """In the student's process: is_contiguous on each layout; what it returned or raised, and the inputs after."""
    seen = []
    for shape, strides in layouts:
        try:
            seen.append({"got": student.call("is_contiguous", shape, strides)})
        except StudentRaised as exc:
            seen.append({"error": dataclasses.asdict(exc.error)})
        seen[-1]["after"] = [shape if isinstance(shape, list) else None, strides if isinstance(strides, list) else None]
    return seen


def _ask(student: Submission, layouts: list, *, batch: bool = False) -> list[_Answer]:
    """Every layout's answer: one request per layout (an endless loop is pinned on its layout), or one for all."""
    answers = []
    if batch:
        try:
            seen = student.scenario(_contiguity_of_each, list(layouts))
        except StudentCodeError as exc:
            raise exc.within(f"is_contiguous on {len(layouts)} random layouts") from None
        for (shape, strides), one in zip(layouts, seen):
            error = StudentError(**one["error"]) if "error" in one else None
            answers.append(_Answer(shape, strides, one.get("got"), error, _changed(shape, strides, *one["after"])))
        return answers
    for shape, strides in layouts:
        try:
            got, args, _ = student.call_with_inputs("is_contiguous", shape, strides)
        except StudentCodeError as exc:
            if exc.error.kind != "raised":  # the runner is gone (timeout, crash): nothing more can be asked
                raise exc.within(_Answer(shape, strides).call()) from None
            answers.append(_Answer(shape, strides, error=exc.error))
            continue
        answers.append(_Answer(shape, strides, got, None, _changed(shape, strides, *args)))
    return answers


def _right_as_tuples(student: Submission, answer: _Answer) -> bool:
    """Whether the student's function answers right when the same layout comes as plain tuples."""
    if type(answer.shape) is tuple and type(answer.strides) is tuple:
        return False
    shape, strides = answer.key
    try:
        got = student.call("is_contiguous", shape, strides)
    except StudentCodeError as exc:
        if exc.error.kind != "raised":
            raise exc.within(f"is_contiguous(shape={shape!r}, strides={strides!r})") from None
        return False
    return _Answer(shape, strides, got).answer() == _torch_is_contiguous(shape, strides)


def _rule_cause(answers: list[_Answer]) -> str | None:
    """The cause of the one known wrong rule that gives every answer collected, if exactly one does."""
    valid = [(a.key, a.answer()) for a in answers if a.answer() is not None]
    explaining = [cause for rule, cause in _RULES
                  if all(rule(*key) == got for key, got in valid)
                  and any(rule(*key) != _torch_is_contiguous(*key) for key, _ in valid)]
    return explaining[0] if len(explaining) == 1 else None


def _type_problem(answer: _Answer, answers: list[_Answer]) -> str | None:
    got = answer.got
    if answer.answer() is not None:
        return None
    if got is None:
        cause = None
        # When it answers False exactly for the non-contiguous layouts and None for all the others, the missing
        # return is the one for a contiguous layout.
        answered = [a for a in answers if a.error is None]
        if any(a.answer() is False for a in answered) and all(
                (a.got is None) if _torch_is_contiguous(a.shape, a.strides) else (a.answer() is False)
                for a in answered):
            cause = ("it answers False for some layouts and None for every layout it should call contiguous: "
                     "return True at the end, after the loop")
    elif isinstance(got, torch.Tensor):
        cause = "a tensor is not a bool: return a Python bool (bool(t), or t.item() for a 0-d bool tensor)"
    elif isinstance(got, numbers.Number):
        cause = "return True or False (the result of a comparison or of all(...)), not a number"
    else:
        cause = None
    lines = ["is_contiguous must return True or False",
             f"  input:    shape={answer.shape!r}, strides={answer.strides!r}",
             f"  expected: {_torch_is_contiguous(answer.shape, answer.strides)!r}",
             f"  returned: {show(got)} (a {type_name(got)})"]
    if cause:
        lines.append(f"  likely cause: {cause}")
    return "\n".join(lines)


def _expect_contiguity(student: Submission, layouts: list, what: str, *, batch: bool = False) -> None:
    """Ask for every layout, then report the first wrong answer, naming a cause the answers single out."""
    _judge_answers(student, _ask(student, layouts, batch=batch), what)


@judge_only
def _right(answer: _Answer) -> bool:
    """Whether an answer is exactly what the specification asks for (the judge's one verdict on a case)."""
    return (answer.error is None and not answer.changed
            and answer.answer() == _torch_is_contiguous(answer.shape, answer.strides))


def _judge_answers(student: Submission, answers: list[_Answer], what: str) -> None:
    """Report the first wrong answer, naming a cause the answers single out."""
    for answer in answers:
        if answer.error is not None:
            error = StudentCodeError(answer.error, answer.call())
            if _right_as_tuples(student, answer):
                fail(f"{error.describe()}\n  likely cause: {_SEQUENCE_CAUSE.format(tuples=answer.key)}")
            if answer.error.is_instance(ValueError):
                n = len(answer.key[0])
                fail(f"{error.describe()}\n  likely cause: these lengths agree ({n} and {n}): ValueError is for "
                     "len(shape) != len(strides) only; every layout whose lengths agree gets True or False")
            raise error
        problem = _type_problem(answer, answers)
        if problem:
            fail(problem)
        if answer.changed:
            fail(f"is_contiguous changed a list it was given: {answer.changed}; a function that answers a question "
                 "must leave its inputs as they were (likely cause: an in-place list operation such as reverse(), "
                 "pop(), sort() or an item assignment on the caller's list; work on copies: list(shape), "
                 "list(strides))")
        expected = _torch_is_contiguous(answer.shape, answer.strides)
        if answer.answer() != expected:
            if _right_as_tuples(student, answer):
                cause = _SEQUENCE_CAUSE.format(tuples=answer.key)
            else:
                cause = _rule_cause(answers)
            fail_mismatch(what, given=f"shape={answer.shape!r}, strides={answer.strides!r}",
                          expected=f"{expected}  (torch's is_contiguous() for that view)", got=repr(answer.answer()),
                          cause=cause)


# Each check's layouts (module level, so that tests can replay every known wrong rule on them). Every list
# mixes right answers (True and False), and lists, ranges and torch.Size with tuples (the spec says Sequence).
LAYOUTS: dict[str, list] = {
    # C-ordered layouts, with sizes and strides past 256 (where `is` stops working for ints) and near misses.
    "contiguous_layouts": [
        ((5,), (1,)), ((2, 3), (3, 1)), ((2, 3), (3, 2)), ([2, 3, 4], [12, 4, 1]), ((4, 2, 3, 5), (30, 15, 5, 1)),
        ([300, 400], [400, 1]), ([300, 400], [401, 1]), ((2, 300, 500), [150000, 500, 1]),
        (torch.Size([7, 9]), (9, 1)), (range(2, 5), [12, 4, 1]), ((2, 1), range(1, 3)), ((3, 2), range(3, 1, -1)),
        ((3, 4), torch.Size([4, 1])), ([6, 2], (2, 1)),
        ((3, 4), (1, 3)),  # a transpose (Fortran order): not contiguous
    ],
    "non_contiguous_layouts": [
        ((3, 4), (4, 1)),  # contiguous ones too, so that answering False every time is not enough
        ((3, 2), (1, 3)),  # transpose of (2, 3)
        ((4, 3, 2), (1, 4, 12)),  # permute(2, 1, 0) of (2, 3, 4): reversed walk order
        ((5,), (2,)),  # x[::2]
        ((2, 3), (6, 1)),  # rows of a (2, 6) tensor, first 3 columns: descending but gapped
        ((2, 3), (0, 1)),  # expand of a row
        ((3, 4), (4, 0)),  # expand along the last dim
        ((2, 2), (2, 2)),  # overlapping
        ([600, 300], [1, 600]),  # a large transpose, as lists
        ([300, 2], [2, 1]),
        ((2, 3), (2, 1)),  # rows overlap: descending, ends in 1, but smaller than the row length
    ],
    "size_one_dims_ignored": [
        ((3, 1, 4), (1, 99, 3)),  # size-1 dims do not excuse the others
        ((3, 1, 4), (4, 99, 1)), ((1,), (7,)), ((1, 5), (1, 1)), ((5, 1), (1, 0)), ((1, 1, 2), (0, 5, 1)),
        ((2, 1, 3), (3, 1, 1)), ([1, 300, 1], [5, 1, 9]), ((2, 1, 3), (1, 1, 2)), ((1, 1), [300, 257]),
        ((3, 1, 4), (4, 4, 1)), ((1, 5), (5, 1)),  # size-1 dims with the strides torch.empty gives them
    ],
    "empty_and_scalar": [
        ((0,), (5,)), ((2, 0, 3), (1, 7, 2)), ((3, 0), (0, 0)), ((0, 4), (1, 3)), ((), ()), ([], []),
        ([300, 0], [1, 300]), (torch.Size([]), ()),
        ((2, 3), (1, 2)), ((4,), (0,)),  # non-empty and not contiguous: answering True every time is not enough
        ((2, 3), (3, 1)),  # non-empty and contiguous: a rule for empty shapes only is not enough either
    ],
    # Equal lengths after the mismatched ones: they must not raise, and get the right answer.
    "length_mismatch_raises": [((2, 3), [3, 1]), ([2, 0], (1, 1)), ((), []), ((2, 3), (1, 2)), ([300, 400], [1, 300])],
}
LENGTH_MISMATCHES = [((2, 3), (3,)), ((4,), (1, 1)), ((), (1,)), ([300, 2], [2]), ((1, 1), [1]),
                     ((2, 0), (1,)), ((0, 3), (3, 1, 1))]  # with a size-0 dim last: see length_mismatch_raises


@IS_CONTIGUOUS.check(points=1)
def contiguous_layouts(student: Submission, device: torch.device) -> None:
    """C-ordered layouts (the strides torch.empty gives) are contiguous."""
    _expect_contiguity(student, LAYOUTS["contiguous_layouts"],
                       "misjudged a C-ordered (contiguous) layout or a near miss")
    _expect_generated(student, "contiguous", 70, "misjudged a generated C-ordered layout or a near miss")


@IS_CONTIGUOUS.check(points=1)
def non_contiguous_layouts(student: Submission, device: torch.device) -> None:
    """Transposed, permuted, stepped, gapped and expanded (stride 0) layouts are not contiguous."""
    _expect_contiguity(student, LAYOUTS["non_contiguous_layouts"],
                       "misjudged a non-contiguous layout (or a contiguous one next to them)")
    _expect_generated(student, "non_contiguous", 70,
                      "misjudged a generated layout (transposed, sliced, stepped, expanded or gapped, or a C-ordered "
                      "one)")


@IS_CONTIGUOUS.check(points=1)
def size_one_dims_ignored(student: Submission, device: torch.device) -> None:
    """Dims of size 1 are skipped, whatever their stride."""
    _expect_contiguity(student, LAYOUTS["size_one_dims_ignored"],
                       "misjudged a layout with size-1 dims")
    _expect_generated(student, "size_one", 70, "misjudged a generated layout with size-1 dims")


@IS_CONTIGUOUS.check(points=1)
def empty_and_scalar(student: Submission, device: torch.device) -> None:
    """A tensor with no elements is contiguous whatever its strides; a 0-d shape () is contiguous."""
    _expect_contiguity(student, LAYOUTS["empty_and_scalar"],
                       "misjudged an empty or 0-d layout (or a non-empty one next to them)")
    _expect_generated(student, "empty_and_scalar", 70, "misjudged a generated layout with a size-0 dim")


_NO_CHECK = ("no length check: zip() silently stops at the shorter sequence; compare len(shape) and len(strides) "
             "first")
_EMPTY_FIRST = ("the shortcut for a tensor with no elements (a size-0 dim) returned before the lengths were compared; "
                "check len(shape) == len(strides) first, for every input")
_TOO_LATE = ("the length check comes too late: it raises for some of these layouts, but for others the code returned "
             "first (a loop over zip(...) can return False before reaching the check); compare len(shape) and "
             "len(strides) before anything else")
_ONE_WAY = ("the length check catches only {longer} longer than {shorter}: it raises exactly when len({longer}) > "
            "len({shorter}); the lengths must be equal, so test len(shape) != len(strides)")


def _walk_reaches_the_end(shape: tuple, strides: tuple) -> bool:
    """Whether the walk over zip(reversed(shape), reversed(strides)) ends without returning False."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


# Where a misplaced or partial length check still raises: (cause, mismatched (shape, strides) -> raises?). A cause
# is named when exactly one of them raises on the very layouts the student's code raised on (and only on those).
_MISMATCH_MISTAKES: list[tuple[str, Callable[[tuple, tuple], bool]]] = [
    (_NO_CHECK, lambda shape, strides: False),
    (_EMPTY_FIRST, lambda shape, strides: 0 not in shape),
    (_TOO_LATE, lambda shape, strides: 0 not in shape and _walk_reaches_the_end(shape, strides)),
    (_TOO_LATE, _walk_reaches_the_end),
    (_ONE_WAY.format(longer="shape", shorter="strides"), lambda shape, strides: len(shape) > len(strides)),
    (_ONE_WAY.format(longer="strides", shorter="shape"), lambda shape, strides: len(strides) > len(shape)),
]


def _mismatch_cause(outcomes: list) -> str | None:
    """The one catalogued misplaced or partial length check that raises on exactly the mismatched layouts where the
    student's code raised (anything), if exactly one does."""
    raised = [error is not None for _, _, _, _, error in outcomes]
    fitting = {cause for cause, raises in _MISMATCH_MISTAKES
               if all(raises(tuple(shape), tuple(strides)) == r
                      for (_, shape, strides, _, _), r in zip(outcomes, raised))}
    return fitting.pop() if len(fitting) == 1 else None


def _mismatch_outcomes(student: Submission, layouts: list, *, batch: bool = False) -> list:
    """(call, shape, strides, what came back, the error) of each mismatched layout."""
    outcomes = []
    if batch:
        try:
            seen = student.scenario(_contiguity_of_each, list(layouts))
        except StudentCodeError as exc:
            raise exc.within(f"is_contiguous on {len(layouts)} generated layouts whose lengths differ") from None
        for (shape, strides), one in zip(layouts, seen):
            error = StudentError(**one["error"]) if "error" in one else None
            outcomes.append((_Answer(shape, strides).call(), shape, strides, one.get("got"), error))
        return outcomes
    for shape, strides in layouts:
        call = _Answer(shape, strides).call()
        try:
            outcomes.append((call, shape, strides, student.call("is_contiguous", shape, strides), None))
        except StudentCodeError as exc:
            if exc.error.kind != "raised":
                raise exc.within(call) from None
            outcomes.append((call, shape, strides, None, exc.error))
    return outcomes


def _judge_mismatches(outcomes: list, note: str = "") -> None:
    """Every mismatched layout must raise ValueError; report the first that did not."""
    right = [error is not None and error.is_instance(ValueError) for _, _, _, _, error in outcomes]
    for (call, shape, strides, got, error), ok in zip(outcomes, right):
        if ok:
            continue
        lengths = f"the lengths differ ({len(shape)} and {len(strides)})"
        if error is None:
            cause = _mismatch_cause(outcomes)
            shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
            raised = sum(1 for e in right if e)
            seen = f"; it raised ValueError for {raised} of the {len(outcomes)} layouts whose lengths differ"
            fail(f"{call} returned {shown}; it must raise ValueError because {lengths}"
                 + (f" (likely cause: {cause})" if cause else seen) + note)
        cause = ("assert raises AssertionError; raise ValueError(...) instead"
                 if error.exception_type == "AssertionError"
                 else "the specification asks for ValueError; raise ValueError(...) there")
        fail(f"{call} must raise ValueError because {lengths}, but it {error.describe()}\n"
             f"  likely cause: {cause}{note}")


@IS_CONTIGUOUS.check(points=1)
def length_mismatch_raises(student: Submission, device: torch.device) -> None:
    """ValueError when shape and strides have different lengths."""
    _judge_mismatches(_mismatch_outcomes(student, LENGTH_MISMATCHES))
    layouts = domain.draw(generate_mismatch, 100, size=layout_size)
    outcomes = _mismatch_outcomes(student, layouts, batch=True)
    failing = [not (error is not None and error.is_instance(ValueError)) for *_, error in outcomes]
    if any(failing):
        first = domain.smallest(outcomes, failing, lambda outcome: layout_size(outcome[1:3]))
        _judge_mismatches([first, *outcomes], f"\n  ({sum(failing)} of {len(layouts)} generated layouts whose "
                                             "lengths differ failed; this is the smallest of them)")
    # Equal lengths must not raise, and get the right answer (raising every time is not the rule either).
    _expect_contiguity(student, LAYOUTS["length_mismatch_raises"], "misjudged a layout whose lengths agree")


# ==================================================================================================
# The input domain: any shape and strides (any Sequence[int]: tuple, list, range, torch.Size) of a view that
# as_strided can make (strides >= 0), and shape and strides of different lengths
# ==================================================================================================
KINDS = ("tuple", "list", "torch.Size", "range")
SMALL, PAST_256, LARGE = (2, 3, 4, 5), (257, 300, 1000), (2**16 + 1, 2**31 + 1)
ODD_STRIDES = (0, 1, 2, 3, 7, 256, 257, 1000, 2**31 + 5, 2**32)  # what a size-1 or perturbed dim may hold
EDITS = ("c order", "size-1 noise", "permute", "one stride off", "expand", "gap", "fortran", "swap two strides",
         "sliced", "random")
THEMES = {  # each check's part of the domain: the edits it draws, and the shapes it allows
    "contiguous": dict(edits=("c order", "c order", "size-1 noise", "one stride off", "sliced")),
    "non_contiguous": dict(edits=("permute", "one stride off", "expand", "gap", "fortran", "swap two strides",
                                  "sliced", "c order")),
    "size_one": dict(ones=True, edits=("size-1 noise", "size-1 noise", "c order", "one stride off", "permute")),
    "empty_and_scalar": dict(zeros=True),
    "any": dict(),
}


def _sequence(rng: random.Random, values: list[int], kinds: tuple[str, ...] = KINDS):
    """``values`` as one of the Sequence types (a range when they make one)."""
    kind = domain.pick(rng, kinds, weights=[{"tuple": 3, "list": 3, "torch.Size": 1, "range": 2}[k] for k in kinds])
    return _retype(kind, values) or tuple(values)


def _retype(kind: str, values: list[int]):
    """``values`` as the sequence type ``kind``, or None when they cannot be one (a range needs equal steps)."""
    if kind == "range":
        if not values:
            return range(0)
        step = values[1] - values[0] if len(values) > 1 else 1
        if step == 0 or any(b - a != step for a, b in zip(values, values[1:])) or values[0] + step * len(values) < -1:
            return None
        return range(values[0], values[0] + step * len(values), step)
    return {"tuple": tuple, "list": list, "torch.Size": torch.Size}[kind](values)


def _kind(value) -> str:
    return "range" if isinstance(value, range) else "torch.Size" if isinstance(value, torch.Size) else \
        type(value).__name__


def _shape(rng: random.Random, zeros: bool | None, ones: bool | None) -> list[int]:
    ndim = domain.small_int(rng, 0, 6) if rng.random() < 0.95 else rng.randint(7, 10)
    want_zero = rng.random() < 0.15 if zeros is None else zeros
    want_one = rng.random() < 0.5 if ones is None else ones
    if want_zero or want_one:
        ndim = max(ndim, 1 + (want_zero and want_one))
    classes = (["small"] * 6 + ["one"] * (2 * want_one) + ["zero"] * want_zero + ["past 256"]
               + ["large"] * 2 * (ndim <= 3))
    sizes = []
    for _ in range(ndim):
        chosen = domain.pick(rng, classes)
        sizes.append({"small": lambda: domain.pick(rng, SMALL), "one": lambda: 1, "zero": lambda: 0,
                      "past 256": lambda: domain.pick(rng, PAST_256),
                      "large": lambda: domain.pick(rng, LARGE)}[chosen]())
    free = list(range(ndim))
    if want_zero and 0 not in sizes:
        sizes[i := rng.choice(free)] = 0
        free.remove(i)
    if want_one and 1 not in sizes:
        sizes[rng.choice([i for i in free if sizes[i] != 0] or free)] = 1
    if not want_zero and rng.random() < 0.08:  # C-ordered strides past 2**31 and 2**32 (32-bit ints overflow)
        sizes = [domain.pick(rng, SMALL), *[1] * want_one, *domain.pick(rng, [[2**31 + 1], [2**16 + 1, 2**16 + 1]])]
        ndim = len(sizes)
    if zeros is False:
        sizes = [n or 2 for n in sizes]
    if ones is False:
        sizes = [2 if n == 1 else n for n in sizes]
    while math.prod(max(n, 1) for n in sizes) > 2**40:  # the view's storage stays far below 2**63 elements
        sizes[max(range(ndim), key=lambda i: sizes[i])] = domain.pick(rng, SMALL)
    return sizes


def _edit(rng: random.Random, edit: str, shape: list[int], strides: list[int]) -> tuple[list[int], list[int]]:
    """One way a real view's layout differs from C order (or none, "c order")."""
    ndim = len(shape)
    big = [i for i, n in enumerate(shape) if n != 1]  # dims whose stride matters
    if edit == "size-1 noise":
        strides = [domain.pick(rng, ODD_STRIDES + (s,)) if n == 1 else s for n, s in zip(shape, strides)]
    elif edit == "permute" and ndim >= 2:
        order = list(range(ndim))
        rng.shuffle(order)
        shape, strides = [shape[i] for i in order], [strides[i] for i in order]
    elif edit == "one stride off" and big:
        i = rng.choice(big)
        strides[i] = domain.pick(rng, [strides[i] + 1, max(strides[i] - 1, 0), strides[i] * 2, strides[i] * shape[i],
                                       0, domain.pick(rng, ODD_STRIDES)])
    elif edit == "expand" and big:
        for i in rng.sample(big, rng.randint(1, len(big))):
            strides[i] = 0
    elif edit == "gap" and ndim:
        k = domain.pick(rng, [2, 3])
        strides = [s * k for s in strides]
    elif edit == "fortran":
        strides = [math.prod(max(n, 1) for n in shape[:i]) for i in range(ndim)]
    elif edit == "swap two strides" and ndim >= 2:
        i, j = rng.sample(range(ndim), 2)
        strides[i], strides[j] = strides[j], strides[i]
    elif edit == "sliced" and ndim:  # a slice of a larger C-ordered tensor: x[:, :k] or x[::k]
        wider = [n + domain.pick(rng, [0, 0, 1, 3]) for n in shape]
        strides = list(_torch_strides(wider))
        if rng.random() < 0.3:
            i = rng.randrange(ndim)
            strides[i] *= domain.pick(rng, [2, 3])
    elif edit == "random":
        strides = [domain.pick(rng, ODD_STRIDES) if rng.random() < 0.3 else rng.randint(0, 40) for _ in shape]
    return shape, strides


def generate_layout(rng: random.Random, *, edits: tuple[str, ...] = EDITS, zeros: bool | None = None,
                    ones: bool | None = None) -> tuple:
    """A (shape, strides) pair of the domain: a C-ordered layout edited the way real views are (or random
    strides), each of shape and strides given as any of the Sequence types."""
    while True:
        shape = _shape(rng, zeros, ones)
        shape, strides = _edit(rng, domain.pick(rng, edits), shape, list(_torch_strides(shape)))
        if 0 in shape or sum((n - 1) * s for n, s in zip(shape, strides)) < 2**60:  # a storage as_strided can have
            return _sequence(rng, shape), _sequence(rng, strides)


def generate_mismatch(rng: random.Random) -> tuple:
    """A (shape, strides) pair whose lengths differ, combined with the other classes: a size-0 dim, the 0-d shape,
    size-1 dims, strides whose common part is (or is not) C-ordered, any Sequence types."""
    shape, strides = generate_layout(rng)
    shape, strides = list(shape), list(strides)
    change = domain.pick(rng, ["drop", "add", "empty strides", "empty shape"])
    if change == "drop" and strides:
        del strides[rng.choice([0, -1, rng.randrange(len(strides))])]
    elif change == "empty strides" and shape:
        strides = []
    elif change == "empty shape":
        shape = []
        strides = strides or [1]
    else:
        for _ in range(rng.randint(1, 2)):
            strides.insert(rng.choice([0, len(strides)]), domain.pick(rng, ODD_STRIDES))
    if len(shape) == len(strides):
        strides.append(1)
    return _sequence(rng, shape), _sequence(rng, strides)


def layout_size(layout) -> tuple:
    """Fewer dims first, then smaller sizes and strides: the first failure a check reports is a small case."""
    shape, strides = (tuple(v) for v in layout)
    return (len(shape) + len(strides), sum(min(n, 1000) for n in shape) + sum(min(s, 1000) for s in strides),
            shape, strides)


def shrink_candidates(layout) -> list:
    """Smaller layouts, each sequence kept as its type: one dim fewer (from both, or from the longer of two
    different lengths), a size or a stride smaller (0, 1, 2 or half of it)."""
    shape, strides = layout
    kinds, values = (_kind(shape), _kind(strides)), (list(shape), list(strides))
    found = []
    if len(values[0]) == len(values[1]):
        found += [(values[0][:i] + values[0][i + 1:], values[1][:i] + values[1][i + 1:]) for i in range(len(values[0]))]
    else:
        longer = 0 if len(values[0]) > len(values[1]) else 1
        for i in range(len(values[longer])):
            cut = values[longer][:i] + values[longer][i + 1:]
            if len(cut) != len(values[1 - longer]):
                found.append((cut, values[1]) if longer == 0 else (values[0], cut))
    for which in (0, 1):
        for i, v in enumerate(values[which]):
            for smaller in dict.fromkeys((0, 1, 2, v // 2)):
                if smaller < v:
                    changed = list(values)
                    changed[which] = values[which][:i] + [smaller] + values[which][i + 1:]
                    found.append(tuple(changed))
    typed = [(_retype(kinds[0], a), _retype(kinds[1], b)) for a, b in found]
    return [t for t in typed if t[0] is not None and t[1] is not None]


def _in_theme(layout, *, zeros: bool | None = None, ones: bool | None = None, **_: Any) -> bool:
    shape = tuple(layout[0])
    return (zeros is None or zeros == (0 in shape)) and (ones is None or ones == (1 in shape))


def _random_layouts(count: int = 400, theme: str = "any") -> list:
    """``count`` layouts drawn from a check's part of the domain (scaled by the benchmark), smallest first."""
    return domain.draw(functools.partial(generate_layout, **THEMES[theme]), count, size=layout_size)


def _expect_generated(student: Submission, theme: str, count: int, what: str) -> None:
    """Generated layouts in one request; the smallest failing one (shrunk further, staying in the check's part of
    the domain) is reported, with every answer as the evidence for a cause."""
    layouts = _random_layouts(count, theme)
    answers = _ask(student, layouts, batch=True)
    failing = [not _right(a) for a in answers]
    if not any(failing):
        return
    first = domain.smallest(layouts, failing, layout_size)

    def fails(candidates: list) -> list[bool]:
        try:
            return [not _right(a) for a in _ask(student, candidates, batch=True)]
        except StudentCodeError:  # a candidate the runner did not come back from: not a smaller failure to report
            return [False] * len(candidates)

    shrunk = domain.shrink(first, lambda layout: [c for c in shrink_candidates(layout)
                                                  if _in_theme(c, **THEMES[theme])], fails)
    drawn = next(a for a, layout in zip(answers, layouts) if layout is first)
    answer = _ask(student, [shrunk], batch=True)[0] if shrunk is not first else drawn
    if _right(answer):  # the runner answered otherwise this time: report the failing case as drawn
        answer = drawn
    _judge_answers(student, [answer, *answers], f"{what} ({sum(failing)} of {len(layouts)} generated layouts "
                                                "failed; this is the smallest failing layout found)")
    fail(f"{what}: {answer.call()} (a grader error if you read this: please report it)")


@IS_CONTIGUOUS.check(points=1)
def random_layouts(student: Submission, device: torch.device) -> None:
    """Generated layouts of every kind (C order, permuted, sliced, stepped, expanded, gapped, size-1 noise,
    random strides; any Sequence types) agree with torch."""
    _expect_generated(student, "any", 250, "misjudged a generated layout")
