"""is_contiguous: the reference against PyTorch, and the grader's causes (each named only when singled out)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch01_tensors import is_contiguous as grader
from solutions import ch01_tensors as reference


# -- the reference agrees with PyTorch on odd layouts, given as any Sequence -------------------------
@st.composite
def layouts(draw):
    shape = draw(st.lists(st.integers(0, 4), max_size=5))
    strides = draw(st.lists(st.integers(0, 40), min_size=len(shape), max_size=len(shape)))
    if shape and draw(st.booleans()):  # a C-ordered layout, sizes past the small ints, now and then
        shape = [300 if n > 1 else n for n in shape]
        strides = list(torch.empty(shape, device="meta").stride())
    kind = draw(st.sampled_from([tuple, list, torch.Size]))
    return kind(shape), draw(st.sampled_from([tuple, list]))(strides)


@settings(max_examples=400, deadline=None)
@given(layouts())
def test_reference_is_contiguous_matches_torch(layout):
    shape, strides = layout
    needed = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if 0 not in shape else 1
    view = torch.empty(needed, device="meta").as_strided(tuple(shape), tuple(strides))
    before = (list(shape), list(strides))
    assert reference.is_contiguous(shape, strides) == view.is_contiguous()
    assert (list(shape), list(strides)) == before  # not mutated


@pytest.mark.parametrize("shape, strides", [((2, 3), (1,)), ([2, 0], [1]), ((), (1,)), ([1], [])])
def test_reference_is_contiguous_rejects_length_mismatch(shape, strides):
    with pytest.raises(ValueError):
        reference.is_contiguous(shape, strides)


def test_grader_truth_is_torchs():
    for layouts_of_check in grader.LAYOUTS.values():
        for shape, strides in layouts_of_check:
            assert grader._torch_is_contiguous(shape, strides) == reference.is_contiguous(shape, strides)


# -- the causes: every known wrong rule is named by some check, and never under another name ----------
def _every_check_layouts() -> dict[str, list]:
    return {**grader.LAYOUTS, "random_layouts": _drawn(400)}  # seeded: the same layouts every run


def _answers(rule, layouts_of_check):
    return [grader._Answer(shape, strides, rule(tuple(shape), tuple(strides))) for shape, strides in layouts_of_check]


@pytest.mark.parametrize("rule, cause", grader._RULES, ids=[c[:40] for _, c in grader._RULES])
def test_each_wrong_rule_is_singled_out(rule, cause):
    named_by = []
    for check, layouts_of_check in _every_check_layouts().items():
        found = grader._rule_cause(_answers(rule, layouts_of_check))
        assert found in (cause, None), f"{check} names {found!r} for answers that follow {cause!r}"
        if found == cause:
            named_by.append(check)
    assert named_by, f"no check singles out {cause!r}"


@pytest.mark.parametrize("answer", [lambda shape, strides: True, lambda shape, strides: False,
                                    lambda shape, strides: len(shape) < 2, lambda shape, strides: 0 in shape],
                         ids=["always True", "always False", "short shapes", "empty shapes"])
def test_do_nothing_answers_get_no_cause(answer):
    for check, layouts_of_check in _every_check_layouts().items():
        assert grader._rule_cause(_answers(answer, layouts_of_check)) is None, check


def test_every_check_mixes_answers():
    for check, layouts_of_check in _every_check_layouts().items():
        assert len({grader._torch_is_contiguous(*layout) for layout in layouts_of_check}) == 2, check


# -- the grader ----------------------------------------------------------------------------------------
def test_reference_passes(device):
    report = graders.check_namespace("is_contiguous", vars(reference), device=device, instructor=True)
    assert report.passed and report.score == report.max_score, report.as_text()


def test_a_late_length_check_is_told_apart_from_none():
    def is_contiguous(shape, strides):
        expected = 1
        for size, stride in zip(reversed(shape), reversed(strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        if len(shape) != len(strides):
            raise ValueError("lengths differ")
        return True

    report = graders.check_namespace("is_contiguous", {"is_contiguous": is_contiguous}, ["length_mismatch_raises"],
                                     device="cpu")
    assert "comes too late" in report.results[0].message


# -- the input domain: every class the specification allows is generated (issue 32) ---------------------
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(count=500, theme="any", seed=32):
    random.seed(seed)
    return grader._random_layouts(count, theme)


DRAWN_LAYOUTS = _drawn()


def _mismatches(count=500, seed=32):
    random.seed(seed)
    return domain.draw(grader.generate_mismatch, count, size=grader.layout_size)


def _truth(layout):
    return grader._torch_is_contiguous(*layout)


@pytest.mark.parametrize("name, has", [
    *[(f"a shape given as {kind}", lambda l, k=kind: grader._kind(l[0]) == k) for kind in grader.KINDS],
    *[(f"strides given as {kind}", lambda l, k=kind: grader._kind(l[1]) == k) for kind in grader.KINDS],
    ("shape and strides of different types", lambda l: grader._kind(l[0]) != grader._kind(l[1])),
    ("the 0-d shape", lambda l: len(l[0]) == 0),
    ("more than 6 dims", lambda l: len(l[0]) > 6),
    ("a size-0 dim with non-C strides", lambda l: 0 in l[0] and tuple(l[1]) != grader._torch_strides(l[0])),
    ("a contiguous layout of 3 dims or more", lambda l: len(l[0]) >= 3 and _truth(l) and 0 not in l[0]),
    ("a non-contiguous layout", lambda l: not _truth(l)),
    ("a size-1 dim with a stride other than C order's", lambda l: any(
        n == 1 and s != c for n, s, c in zip(l[0], l[1], grader._torch_strides(l[0])))),
    ("a size-1 dim with stride 0", lambda l: any(n == 1 and s == 0 for n, s in zip(l[0], l[1]))),
    ("a size-1 dim with a stride past 2**31, contiguous", lambda l: _truth(l) and any(
        n == 1 and s > 2**31 for n, s in zip(l[0], l[1]))),
    ("an expanded dim (stride 0, size > 1)", lambda l: any(n > 1 and s == 0 for n, s in zip(l[0], l[1]))),
    ("a transposed (permuted) layout", lambda l: len(l[0]) >= 2 and not _truth(l) and sorted(l[1], reverse=True)
     == sorted(grader._torch_strides(sorted(l[0], reverse=True)), reverse=True)),
    ("Fortran order", lambda l: len([n for n in l[0] if n > 1]) >= 2 and tuple(l[1]) == tuple(
        __import__("math").prod(l[0][:i]) for i in range(len(l[0]))) and not _truth(l)),
    ("sizes past 256, contiguous", lambda l: _truth(l) and any(256 < n < 2**16 for n in l[0])),
    ("strides past 256, contiguous", lambda l: _truth(l) and any(256 < s < 2**16 for s in l[1])),
    ("a size past 2**31", lambda l: any(n > 2**31 for n in l[0])),
    ("a stride past 2**31 that must equal the product", lambda l: _truth(l) and 0 not in l[0] and any(
        n > 1 and s > 2**31 for n, s in zip(l[0], l[1]))),
    ("a near miss: one stride off by one", lambda l: not _truth(l) and sum(
        abs(s - c) == 1 for s, c in zip(l[1], grader._torch_strides(l[0]))) == 1),
])
def test_the_generator_draws(name, has):
    assert any(has((s, t)) for s, t in DRAWN_LAYOUTS), f"no layout has {name}"


def test_every_generated_layout_is_in_the_domain():
    for shape, strides in DRAWN_LAYOUTS:
        assert len(shape) == len(strides) and all(n >= 0 for n in shape) and all(s >= 0 for s in strides)
        assert _truth((shape, strides)) == reference.is_contiguous(shape, strides)


@pytest.mark.parametrize("theme", ["contiguous", "non_contiguous", "size_one", "any"])
def test_each_theme_mixes_answers(theme):
    assert len({_truth(layout) for layout in _drawn(200, theme)}) == 2


def test_themes_keep_their_shapes():
    assert all(1 in tuple(s) for s, _ in _drawn(200, "size_one"))
    assert all(0 in tuple(s) for s, _ in _drawn(200, "empty_and_scalar"))


@pytest.mark.parametrize("name, has", [
    ("strides longer than shape", lambda s, t: len(t) > len(s)),
    ("strides shorter than shape", lambda s, t: len(t) < len(s)),
    ("empty strides", lambda s, t: len(t) == 0),
    ("the 0-d shape", lambda s, t: len(s) == 0),
    ("a size-0 dim", lambda s, t: 0 in s),
    ("a common part in C order", lambda s, t: len(s) >= 1 and len(t) >= 1 and grader._walk_reaches_the_end(
        tuple(s), tuple(t)) and 0 not in s),
    ("a common part not in C order", lambda s, t: not grader._walk_reaches_the_end(tuple(s), tuple(t))),
    ("a range or a torch.Size", lambda s, t: isinstance(s, (range, torch.Size)) or isinstance(t, (range, torch.Size))),
])
def test_the_mismatch_generator_draws(name, has):
    layouts = _mismatches()
    assert all(len(s) != len(t) for s, t in layouts)
    assert any(has(s, t) for s, t in layouts), f"no mismatch has {name}"


def test_shrink_candidates_are_smaller_and_keep_the_types():
    for layout in DRAWN_LAYOUTS[-50:] + _mismatches(50)[-20:]:
        for candidate in grader.shrink_candidates(layout):
            assert (grader._kind(candidate[0]), grader._kind(candidate[1])) == tuple(map(grader._kind, layout))
            assert grader.layout_size(candidate) < grader.layout_size(layout)
            assert (len(candidate[0]) == len(candidate[1])) == (len(layout[0]) == len(layout[1]))


@pytest.mark.parametrize("raises, words", [
    (lambda s, t: len(s) > len(t), "catches only shape longer than strides"),
    (lambda s, t: len(t) > len(s), "catches only strides longer than shape"),
    (lambda s, t: 0 not in s, "before the lengths were compared"),
    (lambda s, t: False, "zip()"),
    (lambda s, t: 0 not in s and grader._walk_reaches_the_end(tuple(s), tuple(t)), "comes too late"),
])
def test_each_misplaced_length_check_is_singled_out_by_generated_mismatches(raises, words):
    outcomes = [("call", s, t, None, "raised" if raises(s, t) else None) for s, t in _mismatches(150)]
    assert words in grader._mismatch_cause(outcomes)


def test_no_misplaced_length_check_fits_a_pattern_of_its_own():
    outcomes = [("call", s, t, None, "raised" if len(s) % 2 else None) for s, t in _mismatches(150)]
    assert grader._mismatch_cause(outcomes) is None


def test_the_generated_check_rejects_a_bug_only_it_reaches_and_reports_a_smallest_case():
    """Strides read through int32 (numpy's dtype=np.int32): every hand-written layout passes; generated layouts with
    strides past 2**31 do not. The layout reported fails, and no smaller one of the domain does."""
    def is_contiguous(shape, strides):  # defined here: copied to the runner by value
        shape, strides = tuple(shape), tuple(strides)
        if len(shape) != len(strides):
            raise ValueError("lengths differ")
        if 0 in shape:
            return True
        expected = 1
        for size, stride in zip(reversed(shape), reversed(strides)):
            if size != 1:
                if (stride + 2**31) % 2**32 - 2**31 != expected:  # the strides went through int32
                    return False
                expected *= size
        return True

    for layouts in grader.LAYOUTS.values():
        assert all(is_contiguous(s, t) == _truth((s, t)) for s, t in layouts)
    report = graders.check_namespace("is_contiguous", {"is_contiguous": is_contiguous}, device="cpu")
    failed = [r for r in report.results if not r.passed]
    assert failed and all("generated layouts failed; this is the smallest failing layout found" in r.message
                          for r in failed), report.as_text()
    shown = failed[0].message.split("input:    ")[1].split("\n")[0]
    layout = eval(f"dict({shown})", {"torch": torch})  # noqa: S307 - the grader's own repr of a layout
    layout = (layout["shape"], layout["strides"])
    assert is_contiguous(*layout) != _truth(layout)
    for smaller in grader.shrink_candidates(layout):
        assert is_contiguous(*smaller) == _truth(smaller) or not grader._in_theme(smaller), smaller
