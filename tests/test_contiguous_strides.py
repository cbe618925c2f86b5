"""contiguous_strides: the reference against PyTorch, and the grader's causes (each named only when singled out)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch01_tensors import contiguous_strides as grader
from solutions import ch01_tensors as reference

# -- the reference agrees with PyTorch for every Sequence type the specification names ---------------
shapes = st.lists(st.integers(0, 6), max_size=6)
sequence_types = st.sampled_from([tuple, list, torch.Size])


@settings(max_examples=300, deadline=None)
@given(shapes, sequence_types)
def test_reference_strides_match_torch(shape, kind):
    given_shape = kind(shape)
    assert reference.contiguous_strides(given_shape) == torch.empty(shape, device="meta").stride()
    assert given_shape == kind(shape)  # not mutated


@pytest.mark.parametrize("shape", [range(2, 5), range(0), (2**20, 2**20, 2**20), [300, 1, 0, 7]], ids=repr)
def test_reference_strides_of_ranges_and_huge_shapes(shape):
    got = reference.contiguous_strides(shape)
    assert type(got) is tuple and all(type(v) is int for v in got)
    assert got == grader._torch_strides(shape)


# -- the causes: every known wrong rule is named by some check, and never under another name ----------
def _every_check_shapes() -> dict[str, list]:
    return {**grader.SHAPES, "random": grader._random_shapes()}


@pytest.mark.parametrize("rule, cause", grader._RULES, ids=[c[:40] for _, c in grader._RULES])
def test_each_wrong_rule_is_singled_out(rule, cause):
    named_by = []
    for check, check_shapes in _every_check_shapes().items():
        answers = [grader._Answer(shape, rule(tuple(shape))) for shape in check_shapes]
        found = grader._rule_cause(answers)
        assert found in (cause, None), f"{check} names {found!r} for answers that follow {cause!r}"
        if found == cause:
            named_by.append(check)
    assert named_by, f"no check singles out {cause!r}"


@pytest.mark.parametrize("answer", [lambda s: (1,) * len(s), lambda s: (0,) * len(s), lambda s: tuple(s),
                                    lambda s: (), lambda s: tuple(reversed(tuple(s)))],
                         ids=["ones", "zeros", "the shape", "empty", "the shape reversed"])
def test_do_nothing_answers_get_no_cause(answer):
    for check, check_shapes in _every_check_shapes().items():
        answers = [grader._Answer(shape, answer(tuple(shape))) for shape in check_shapes]
        assert grader._rule_cause(answers) is None, check


def test_floats_are_explained_only_by_their_pattern():
    last = [grader._Answer((2, 3), (3, 1.0)), grader._Answer((5,), (1.0,))]
    every = [grader._Answer((2, 3), (3.0, 1.0))]
    mixed = last + every
    assert "numpy.prod" in grader._float_cause(last)
    assert "'/'" in grader._float_cause(every)
    assert grader._float_cause(mixed) is None
    assert grader._float_cause([grader._Answer((5,), (1.0,))]) is None  # one dim: either pattern


# -- the grader ----------------------------------------------------------------------------------------
def test_reference_passes(device):
    report = graders.check_namespace("contiguous_strides", vars(reference), device=device, instructor=True)
    assert report.passed and report.score == report.max_score, report.as_text()


def test_a_list_answer_for_lists_only_is_traced_to_the_sequence_type():
    def contiguous_strides(shape):
        if shape == ():
            return ()
        strides = [1]
        for size in reversed(shape[1:]):
            strides.insert(0, strides[0] * max(size, 1))
        return tuple(strides)

    report = graders.check_namespace("contiguous_strides", {"contiguous_strides": contiguous_strides},
                                     ["scalar_and_size_one_dims"], device="cpu")
    assert not report.passed
    assert "not for the same shape as a list" in report.results[0].message
