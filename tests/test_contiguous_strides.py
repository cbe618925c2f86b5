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
    return {**grader.SHAPES, "random": _drawn(400)}  # seeded: the same shapes every run


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


# -- the input domain: every class the specification allows is generated (issue 32) ---------------------
import math  # noqa: E402
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(count=500, seed=32, **options):
    random.seed(seed)
    return grader._random_shapes(count, **options)


DRAWN_SHAPES = _drawn()


def _product(shape):
    return math.prod(max(n, 1) for n in shape)


@pytest.mark.parametrize("name, has", [
    ("a tuple", lambda s: type(s) is tuple),
    ("a list", lambda s: type(s) is list),
    ("a torch.Size", lambda s: isinstance(s, torch.Size)),
    ("a range of step 1", lambda s: isinstance(s, range) and s.step == 1 and len(s) > 1),
    ("a range of step > 1", lambda s: isinstance(s, range) and s.step > 1 and len(s) > 1),
    ("a decreasing range", lambda s: isinstance(s, range) and s.step < 0 and len(s) > 1),
    ("the empty range", lambda s: isinstance(s, range) and len(s) == 0),
    ("the 0-d shape ()", lambda s: len(s) == 0 and not isinstance(s, range)),
    ("a 1-D shape", lambda s: len(s) == 1),
    ("8 dims", lambda s: len(s) == 8),
    ("more than 8 dims", lambda s: len(s) > 8),
    ("a size-0 first dim", lambda s: len(s) > 1 and tuple(s)[0] == 0),
    ("a size-0 last dim", lambda s: len(s) > 1 and tuple(s)[-1] == 0),
    ("a size-0 middle dim", lambda s: len(s) > 2 and 0 in tuple(s)[1:-1]),
    ("two size-0 dims", lambda s: tuple(s).count(0) >= 2),
    ("size-0 and size-1 dims together", lambda s: 0 in s and 1 in s),
    ("a size-1 dim", lambda s: 1 in s),
    ("a size-1 last dim", lambda s: len(s) > 1 and tuple(s)[-1] == 1),
    ("a size past 256", lambda s: any(256 < n < 2**16 for n in s)),
    ("a size past 2**31", lambda s: any(n > 2**31 for n in s)),
    ("a product past 2**31 below 2**32", lambda s: 2**31 < _product(s) < 2**32),
    ("a product past 2**32", lambda s: 2**32 < _product(s) < 2**53),
    ("a product past 2**53 (floats lose digits)", lambda s: _product(s) > 2**53),
    ("a product past 2**60", lambda s: _product(s) > 2**60),
])
def test_the_generator_draws(name, has):
    assert any(has(shape) for shape in DRAWN_SHAPES), f"no generated shape has {name}"


def test_every_generated_shape_is_in_the_domain():
    for shape in DRAWN_SHAPES:
        assert all(type(n) is int and n >= 0 for n in shape)
        assert _product(shape) < grader.LARGEST  # torch.empty(shape) could lay it out
        assert reference.contiguous_strides(shape) == grader._torch_strides(shape)


def test_each_check_draws_its_own_part_of_the_domain():
    assert all(0 not in s and 1 not in s for s in _drawn(200, zeros=False, ones=False))
    assert all(0 in s for s in _drawn(200, zeros=True))
    assert all(1 in s and 0 not in s for s in _drawn(200, zeros=False, ones=True))


def test_generated_cases_are_sorted_and_counted():
    before = domain.DRAWN
    shapes = _drawn(50)
    assert domain.DRAWN - before == 50
    assert [grader.shape_size(s) for s in shapes] == sorted(grader.shape_size(s) for s in shapes)


def test_shrink_candidates_are_smaller_and_keep_the_type():
    for shape in DRAWN_SHAPES[-50:]:
        for candidate in grader.shrink_candidates(shape):
            assert type(candidate) is type(shape)
            assert grader.shape_size(candidate) < grader.shape_size(shape)


def test_the_generated_check_rejects_a_bug_only_it_reaches_and_reports_a_smallest_case():
    """Float products are exact below 2**53: every hand-written shape passes, generated huge ones do not. The shape
    reported fails, and no smaller shape of the check's part of the domain does (a local minimum)."""
    import math

    def _float_products(shape):  # defined here: a notebook-like answer, copied to the runner by value
        sizes = [max(n, 1) for n in shape]
        return tuple(int(math.prod(float(n) for n in sizes[i + 1:])) for i in range(len(sizes)))

    for shapes in grader.SHAPES.values():
        assert all(_float_products(tuple(s)) == grader._torch_strides(s) for s in shapes)
    report = graders.check_namespace("contiguous_strides", {"contiguous_strides": _float_products},
                                     ["ordinary_shapes"], device="cpu")
    message = report.results[0].message
    assert not report.passed and "generated shapes failed; this is the smallest failing shape found" in message
    shown = message.split("input:    shape=")[1].split("\n")[0]
    shape = eval(shown, {"torch": torch})  # noqa: S307 - the grader's own repr of a shape
    assert _float_products(shape) != grader._torch_strides(shape)
    for smaller in grader.shrink_candidates(shape):
        if 0 not in smaller and 1 not in smaller:
            assert _float_products(smaller) == grader._torch_strides(smaller), smaller


def test_the_smallest_failing_shape_keeps_the_rule_cause():
    """A known wrong rule is still named from the generated answers, on the smallest failing shape."""
    def fortran(shape):
        return tuple(math.prod(max(n, 1) for n in tuple(shape)[:i]) for i in range(len(shape)))

    report = graders.check_namespace("contiguous_strides", {"contiguous_strides": fortran},
                                     ["any_sequence_and_random_shapes"], device="cpu")
    assert "column-major (Fortran)" in report.results[0].message
