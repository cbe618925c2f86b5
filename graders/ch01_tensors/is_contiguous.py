"""is_contiguous(shape, strides) -> PyTorch's contiguity rule, for any sequences of ints."""

from __future__ import annotations

import numbers
import random

import numpy as np
import torch

from graders.ch01_tensors.contiguous_strides import _torch_strides
from graders.compare import show, type_name
from graders.outcomes import StudentCodeError, fail_mismatch
from graders.registry import exercise
from graders.student import Submission, expect_error

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
        raise exc.within(f"is_contiguous(shape={shape!r}, strides={strides!r})") from None
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
    fail_mismatch("is_contiguous must return True or False", given=f"shape={shape!r}, strides={strides!r}",
                   expected=repr(_torch_is_contiguous(shape, strides)), got=f"{show(got)} (a {type_name(got)})",
                   cause=cause)


def _expect_contiguity(student: Submission, cases, what: str, cause: str | None = None) -> None:
    for shape, strides in cases:
        expected = _torch_is_contiguous(shape, strides)
        got = _call_is_contiguous(student, shape, strides)
        if got != expected:
            fail_mismatch(what, given=f"shape={shape!r}, strides={strides!r}",
                           expected=f"{expected}  (torch's is_contiguous() for that view)", got=repr(got),
                           cause=cause)


@IS_CONTIGUOUS.check(points=1)
def contiguous_layouts(student: Submission, device: torch.device) -> None:
    """C-ordered layouts (the strides torch.empty gives) are contiguous."""
    # Lists as well as tuples (the spec says Sequence[int]); sizes and strides past 256, where `is`
    # stops working for ints; and a few near misses, so that answering True every time is not enough.
    cases = [((5,), (1,)), ((2, 3), (3, 1)), ([2, 3, 4], [12, 4, 1]), ((4, 2, 3, 5), (30, 15, 5, 1)),
             ([300, 400], [400, 1]), ((2, 300, 500), [150000, 500, 1]), (torch.Size([7, 9]), (9, 1))]
    _expect_contiguity(student, [((2, 3), (3, 2)), ([300, 400], [401, 1])], "misjudged a layout")
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
        ([600, 300], [1, 600]),  # a large transpose, as lists
    ]
    # Contiguous ones too, so that answering False every time is not enough.
    _expect_contiguity(student, [((3, 4), (4, 1)), ([300, 2], [2, 1])], "misjudged a layout")
    _expect_contiguity(student, cases, "a non-contiguous layout was judged contiguous",
                       cause="each stride must EQUAL the product of the sizes after it (not just be "
                             "ordered, and not be 0); compare exactly, from the last dim to the first")


@IS_CONTIGUOUS.check(points=1)
def size_one_dims_ignored(student: Submission, device: torch.device) -> None:
    """Dims of size 1 are skipped, whatever their stride."""
    cases = [((3, 1, 4), (4, 99, 1)), ((1,), (7,)), ((1, 5), (1, 1)), ((5, 1), (1, 0)), ((1, 1, 2), (0, 5, 1)),
             ((2, 1, 3), (3, 1, 1)), ([1, 300, 1], [5, 1, 9])]
    # Size-1 dims do not excuse the others.
    _expect_contiguity(student, [((3, 1, 4), (1, 99, 3)), ((2, 1, 3), (1, 1, 2))], "misjudged a layout")
    _expect_contiguity(student, cases, "a layout whose only odd strides belong to size-1 dims was misjudged",
                       cause="size-1 dims must be skipped: stepping along them never happens, so their "
                             "stride does not matter")


@IS_CONTIGUOUS.check(points=1)
def empty_and_scalar(student: Submission, device: torch.device) -> None:
    """A tensor with no elements is contiguous whatever its strides; a 0-d shape () is contiguous."""
    cases = [((0,), (5,)), ((2, 0, 3), (1, 7, 2)), ((3, 0), (0, 0)), ((0, 4), (1, 3)), ((), ()), ([], []),
             ([300, 0], [1, 300])]
    _expect_contiguity(student, [((2, 3), (1, 2)), ((4,), (0,))], "misjudged a layout")  # non-empty, not contiguous
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
        expect_error(student, ValueError, "is_contiguous", (shape, strides),
                     call=f"is_contiguous(shape={shape!r}, strides={strides!r})", why="the lengths differ",
                     cause=cause)
    # Equal lengths must not raise (raising every time is not the rule either).
    _expect_contiguity(student, [((2, 3), [3, 1]), ([2, 0], (1, 1)), ((), [])], "misjudged a layout")


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
    if rng.random() < 0.2 and ndim:  # sizes and strides past the small ints Python caches
        big = rng.choice([257, 300, 1000])
        shape = [big if size > 1 else size for size in shape]
        strides = list(_torch_strides(shape)) if kind == "as_is" else strides
    convert = list if rng.random() < 0.5 else tuple
    return convert(shape), convert(strides)


@IS_CONTIGUOUS.check(points=1)
def random_layouts(student: Submission, device: torch.device) -> None:
    """Random permuted, stepped, expanded and size-1-padded layouts agree with torch."""
    rng = random.Random(101)
    cases = [_random_layout(rng) for _ in range(200)]
    _expect_contiguity(student, cases, "misjudged a layout", cause=None)


