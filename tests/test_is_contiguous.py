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
    return {**grader.LAYOUTS, "random_layouts": grader._random_layouts()}


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
