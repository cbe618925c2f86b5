"""is_contiguous(shape, strides) -> PyTorch's contiguity rule, for any sequences of ints.

Every check sends layouts as tuples, lists, ranges and torch.Size, collects every answer, then reports
the first wrong one. A likely cause is named only when one known wrong rule gives *every* answer the
check collected (and differs from PyTorch's rule on at least one of them).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from graders.ch01_tensors.contiguous_strides import _torch_strides
from graders.compare import show, type_name
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission

IS_CONTIGUOUS = exercise("is_contiguous", chapter="01_tensors", names=["is_contiguous"])


def _torch_is_contiguous(shape, strides) -> bool:
    return _torch_is_contiguous_of(tuple(shape), tuple(strides))


@functools.lru_cache(maxsize=4096)
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
        cause = "the function ended without a return statement on this path (it returns None)"
        # When it answers False elsewhere, the missing return is the one for a contiguous layout.
        if any(a.answer() is False for a in answers) and all(
                a.answer() is not True for a in answers):
            cause += ": return True at the end, after the loop"
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
    answers = _ask(student, layouts, batch=batch)
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


@IS_CONTIGUOUS.check(points=1)
def non_contiguous_layouts(student: Submission, device: torch.device) -> None:
    """Transposed, permuted, stepped, gapped and expanded (stride 0) layouts are not contiguous."""
    _expect_contiguity(student, LAYOUTS["non_contiguous_layouts"],
                       "misjudged a non-contiguous layout (or a contiguous one next to them)")


@IS_CONTIGUOUS.check(points=1)
def size_one_dims_ignored(student: Submission, device: torch.device) -> None:
    """Dims of size 1 are skipped, whatever their stride."""
    _expect_contiguity(student, LAYOUTS["size_one_dims_ignored"],
                       "misjudged a layout with size-1 dims")


@IS_CONTIGUOUS.check(points=1)
def empty_and_scalar(student: Submission, device: torch.device) -> None:
    """A tensor with no elements is contiguous whatever its strides; a 0-d shape () is contiguous."""
    _expect_contiguity(student, LAYOUTS["empty_and_scalar"],
                       "misjudged an empty or 0-d layout (or a non-empty one next to them)")


@IS_CONTIGUOUS.check(points=1)
def length_mismatch_raises(student: Submission, device: torch.device) -> None:
    """ValueError when shape and strides have different lengths."""
    outcomes = []
    for shape, strides in LENGTH_MISMATCHES:
        call = _Answer(shape, strides).call()
        try:
            outcomes.append((call, shape, student.call("is_contiguous", shape, strides), None))
        except StudentCodeError as exc:
            if exc.error.kind != "raised":
                raise exc.within(call) from None
            outcomes.append((call, shape, None, exc.error))
    right = [error is not None and error.is_instance(ValueError) for _, _, _, error in outcomes]
    for (call, shape, got, error), ok in zip(outcomes, right):
        if ok:
            continue
        if error is None:
            if 0 in shape and all(r for r, (_, s, _, _) in zip(right, outcomes) if 0 not in s):
                cause = ("the shortcut for a tensor with no elements (a size-0 dim) returned before the lengths were "
                         "compared; check len(shape) == len(strides) first, for every input")
            elif any(right):
                cause = ("the length check comes too late: it raises for some of these layouts, but for this one "
                         "the code returned first (a loop over zip(...) can return False before reaching the check); "
                         "compare len(shape) and len(strides) before anything else")
            else:
                cause = ("no length check: zip() silently stops at the shorter sequence; compare len(shape) and "
                         "len(strides) first")
            shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
            fail(f"{call} returned {shown}; it must raise ValueError because the lengths differ "
                 f"(likely cause: {cause})")
        cause = ("assert raises AssertionError; raise ValueError(...) instead"
                 if error.exception_type == "AssertionError"
                 else "the specification asks for ValueError; raise ValueError(...) there")
        fail(f"{call} must raise ValueError because the lengths differ, but it {error.describe()}\n"
             f"  likely cause: {cause}")
    # Equal lengths must not raise, and get the right answer (raising every time is not the rule either).
    _expect_contiguity(student, LAYOUTS["length_mismatch_raises"], "misjudged a layout whose lengths agree")


def _random_layout(rng: random.Random) -> tuple:
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
    if rng.random() < 0.2 and ndim:  # sizes and strides past the small ints Python caches
        big = rng.choice([257, 300, 1000])
        shape = [big if size > 1 else size for size in shape]
        strides = list(_torch_strides(shape)) if kind == "as_is" else strides
    return rng.choice([list, tuple, tuple])(shape), rng.choice([list, tuple, tuple])(strides)


def _random_layouts() -> list:
    rng = random.Random(101)
    return [_random_layout(rng) for _ in range(200)]


@IS_CONTIGUOUS.check(points=1)
def random_layouts(student: Submission, device: torch.device) -> None:
    """Random permuted, stepped, expanded and size-1-padded layouts agree with torch."""
    _expect_contiguity(student, _random_layouts(), "misjudged a layout", batch=True)
