"""sliding_window: the reference against unfold, and the grader's causes (each named only when singled out)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch01_tensors import sliding_window as grader
from solutions import ch01_tensors as reference

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int8, torch.uint8, torch.bool, torch.float16,
          torch.bfloat16, torch.complex64]


# -- the reference agrees with unfold on any stride, offset and dtype, as a view of x ----------------
@settings(max_examples=200, deadline=None)
@given(length=st.integers(1, 20), stride=st.integers(0, 4), offset=st.integers(0, 5), dtype=st.sampled_from(DTYPES),
       data=st.data())
def test_reference_sliding_window_matches_unfold(length, stride, offset, dtype, data):
    size = data.draw(st.integers(1, length))
    step = data.draw(st.integers(1, length + 2))
    if stride == 0:
        x = grader._expanded_input(length, offset, torch.device("cpu"), dtype)
    else:
        x = grader._strided_input(length, stride, offset, torch.device("cpu"), dtype)
    before = (x.clone(), x.stride(), x.storage_offset())
    got = reference.sliding_window(x, size, step)
    assert torch.equal(got, x.unfold(0, size, step)) and got.dtype == x.dtype
    assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    grader._expect_view_of(x, got, size, step, "not a view")  # every element is x's own storage element
    assert torch.equal(x, before[0]) and (x.stride(), x.storage_offset()) == before[1:]


@pytest.mark.parametrize("x, size, step", [
    (torch.zeros(3, 4), 2, 1), (torch.zeros(1, 6), 2, 1), (torch.tensor(3.0), 1, 1), (torch.zeros(6), 0, 1),
    (torch.zeros(6), -2, 1), (torch.zeros(6), 2, 0), (torch.zeros(6), 2, -1), (torch.zeros(6), 7, 1),
    (torch.zeros(0), 1, 1),
], ids=["2-D", "1x6", "0-d", "size 0", "size < 0", "step 0", "step < 0", "size > len", "empty"])
def test_reference_rejects_invalid_arguments(x, size, step):
    with pytest.raises(ValueError):
        reference.sliding_window(x, size, step)


def test_reference_writes_through():
    x = torch.arange(10.0)[1::2]
    windows = reference.sliding_window(x, 2, 2)
    windows[1, 1] = -1.0
    assert x[3].item() == -1.0


def test_complex_inputs_have_imaginary_parts():
    x = grader._strided_input(5, 2, 1, torch.device("cpu"), torch.complex64)
    assert (x.imag != 0).all()  # so that conj() or .real cannot pass for the view


# -- the causes: a layout's differences are named when they have a name, and only then ---------------
X = torch.arange(40.0)[3::2][:12]  # length 12, stride 2, storage offset 3


@pytest.mark.parametrize("strides, offset, words", [
    ((2, 4), 3, "the two strides are swapped"),
    ((4 * 2, 2), 3, "uses size instead of step"),
    ((2, 1), 3, "x's own stride was ignored"),
    ((4, 1), 3, "the stride along a window is 1"),
    ((4, 2), 0, "x's storage offset was ignored"),
    ((4, 2), 6, "multiplied by x.stride(0)"),
    ((4, 2), 5, "the storage offset is 5"),
    ((4, 3), 3, "the strides are (4, 3)"),
])
def test_layout_differences_are_named(strides, offset, words):
    cause = grader._layout_cause((5, 4), strides, offset, X, 4, 2)
    assert words in cause
    assert ("offset" in cause) == (offset != 3)
    assert ("stride" in cause.replace("x.stride(0)", "")) == (strides != (4, 2))


def test_layout_of_several_differences_names_each():
    cause = grader._layout_cause((5, 4), (2, 1), 0, X, 4, 2)
    assert "own stride was ignored" in cause and "storage offset was ignored" in cause


def test_row_counts_are_named():
    assert "one row short (4 windows)" in grader._layout_cause((4, 4), (4, 2), 3, X, 4, 2)
    assert "ignores step" in grader._layout_cause((9, 4), (4, 2), 3, X, 4, 2)
    assert "run past the end" in grader._layout_cause((6, 4), (4, 2), 3, X, 4, 2)
    assert "shape is swapped" in grader._layout_cause((4, 5), (2, 4), 3, X, 4, 2)


def test_strides_of_size_one_dims_do_not_count():
    x = torch.arange(8.0)
    assert grader._layout_cause((1, 3), (99, 1), 0, x, 3, 10) is None  # one window: its row stride is never used
    assert grader._layout_cause((8, 1), (1, 7), 0, x, 1, 1) is None  # windows of one element


def test_expanded_x_is_named_and_its_zero_offset_is_not_guessed():
    x = torch.arange(5.0)[2:3].expand(6)  # stride 0, storage offset 2
    assert "x is expanded" in grader._layout_cause((4, 3), (1, 1), 2, x, 3, 1)
    cause = grader._layout_cause((4, 3), (0, 0), 0, x, 3, 1)
    assert cause == "the storage offset is 0; it should be x.storage_offset() = 2"  # ignored, or times 0?


@pytest.mark.parametrize("strides, offset, words", [((2, 4), 3, "swapped"), ((4, 2), 0, "offset was ignored"),
                                                     ((2, 1), 3, "own stride was ignored")])
def test_a_copy_is_named_by_its_values(strides, offset, words):
    expected = X.unfold(0, 4, 2)
    copy = X.as_strided(expected.shape, strides, offset).clone()
    assert words in grader._window_cause(X, 4, 2, copy, expected, None)


def test_a_copy_matching_two_constructions_is_not_named():
    x = torch.arange(10.0)[::2]  # storage offset 0: "offset ignored" changes nothing; stride 2
    expected = x.unfold(0, 2, 1)
    ignored_both = x.as_strided(expected.shape, (1, 1), 0).clone()  # own stride ignored = both ignored here
    assert "own stride was ignored" in grader._window_cause(x, 2, 1, ignored_both, expected, None)
    ambiguous = torch.full_like(expected, 7.0)
    assert grader._window_cause(x, 2, 1, ambiguous, expected, None) is None


# -- the grader ----------------------------------------------------------------------------------------
def test_reference_passes(device):
    report = graders.check_namespace("sliding_window", vars(reference), device=device, instructor=True)
    assert report.passed and report.score == report.max_score, report.as_text()


def test_a_result_viewing_x_as_another_dtype_is_reported_not_a_grader_error():
    def sliding_window(x, size, step=1):
        rows = (len(x) - size) // step + 1
        view = x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
        return view.view(torch.int32) if x.dtype == torch.float32 else view

    report = graders.check_namespace("sliding_window", {"sliding_window": sliding_window}, ["contiguous_input"],
                                     device="cpu")
    assert report.results[0].status == "failed"
    assert "a view keeps x's dtype" in report.results[0].message


# -- the input domain: every class the specification allows is generated (issue 32) ---------------------
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(generate=grader.generate_window, size=grader.window_size, count=500, seed=32):
    random.seed(seed)
    return domain.draw(generate, count, size=size)


WINDOWS = _drawn()
BAD_CALLS = _drawn(grader.generate_bad_call, grader.bad_call_size)


def _rows(c):
    return (c.length - c.size) // c.step + 1


@pytest.mark.parametrize("name, has", [
    *[(f"dtype {dtype}", lambda c, d=dtype: c.dtype == d) for dtype in grader.DTYPES],
    *[(f"the call {call!r}", lambda c, k=call: c.call == k) for call in grader.CALLS],
    ("an expanded x (stride 0)", lambda c: c.stride == 0 and c.length > 1),
    ("a contiguous x", lambda c: c.stride == 1 and c.offset == 0),
    ("a strided x", lambda c: 1 < c.stride < 10),
    ("a stride past 256", lambda c: c.stride > 256),
    ("a storage offset", lambda c: 0 < c.offset < 10 and c.stride > 0),
    ("a storage offset past 256", lambda c: c.offset > 256),
    ("a strided x with an offset", lambda c: c.stride > 1 and c.offset > 0),
    ("a length-1 x", lambda c: c.length == 1),
    ("an x longer than 256", lambda c: c.length > 256),
    ("size == len(x) > 1", lambda c: c.size == c.length > 1),
    ("size 1 on a longer x", lambda c: c.size == 1 < c.length),
    ("step == size (tiling)", lambda c: c.step == c.size > 1 and _rows(c) > 1),
    ("step > size (skipping)", lambda c: c.step > c.size and _rows(c) > 1),
    ("step > len(x) (one window)", lambda c: c.step > c.length > 1),
    ("windows ending at the end of x", lambda c: _rows(c) > 1 and (c.length - c.size) % c.step == 0 and c.step > 1),
    ("a remainder past the last window", lambda c: _rows(c) > 1 and (c.length - c.size) % c.step != 0),
    ("many windows", lambda c: _rows(c) > 100),
    ("x requiring grad", lambda c: c.requires_grad),
    ("x requiring grad, strided with an offset", lambda c: c.requires_grad and c.stride > 1 and c.offset > 0),
])
def test_the_generator_draws(name, has):
    assert any(has(case) for case in WINDOWS), f"no generated call has {name}"


def test_every_generated_call_is_valid_and_its_x_as_described():
    for case in WINDOWS:
        assert case.valid()
        x = grader.window_input(case, torch.device("cpu"))
        assert (len(x), x.storage_offset(), x.dtype, x.requires_grad) == (
            case.length, case.offset, case.dtype, case.requires_grad)
        assert x.stride(0) == case.stride or case.length == 1  # expand(1) keeps the stride of 1
        got = reference.sliding_window(x, case.size, case.step)
        assert grader._window_right(x, case, {"got": got, "x": x.detach()})
        # the same windows without x's graph: right values, strides and storage, and wrong when x requires grad
        assert grader._window_right(x, case, {"got": got.detach(), "x": x.detach()}) is not case.requires_grad


@pytest.mark.parametrize("name, has", [
    ("a 0-d x", lambda c: len(c.shape) == 0),
    ("a 2-D x", lambda c: len(c.shape) == 2),
    ("a (1, n) x", lambda c: len(c.shape) == 2 and c.shape[0] == 1),
    ("an (n, 1) x", lambda c: len(c.shape) == 2 and c.shape[1] == 1),
    ("a 3-D x", lambda c: len(c.shape) == 3),
    ("size 0", lambda c: c.size == 0),
    ("a negative size", lambda c: c.size < 0),
    ("a size past -256", lambda c: c.size < -256),
    ("step 0", lambda c: c.step == 0),
    ("a negative step", lambda c: c.step < 0),
    ("size > len(x)", lambda c: len(c.shape) == 1 and c.size > c.shape[0]),
    ("size == len(x) + 1", lambda c: len(c.shape) == 1 and c.size == c.shape[0] + 1),
    ("size > len(x) for an empty x", lambda c: c.shape == (0,) and c.size > 0),
    ("size > len(x), within a strided x's storage", lambda c: len(c.shape) == 1 and c.stride > 1 and
     c.shape[0] < c.size <= (c.shape[0] - 1) * c.stride + 1),
    ("size > len(x) past 256", lambda c: len(c.shape) == 1 and c.size > c.shape[0] > 256),
    ("two rules broken at once", lambda c: len(c.reasons()) >= 2),
    ("three rules broken at once", lambda c: len(c.reasons()) >= 3),
    ("step left out", lambda c: c.call == "step left out"),
    ("size and step by name", lambda c: c.call == "by name"),
])
def test_the_invalid_call_generator_draws(name, has):
    assert all(case.reasons() for case in BAD_CALLS)
    assert any(has(case) for case in BAD_CALLS), f"no generated invalid call has {name}"


def test_the_reference_rejects_every_generated_invalid_call():
    for case in BAD_CALLS:
        x = grader.bad_call_input(case, torch.device("cpu"))
        with pytest.raises(ValueError):
            reference.sliding_window(x, case.size, case.step)


def test_shrink_candidates_are_smaller_and_valid():
    for case in WINDOWS[-50:]:
        for candidate in grader.window_candidates(case):
            assert candidate.valid() and grader.window_size(candidate) < grader.window_size(case)


def test_the_generated_check_rejects_a_bug_only_it_reaches_and_reports_a_smallest_case():
    """Windows that never reach past the storage: an x ending right at its storage's end (an offset of 257 with
    one element after it) gets one row too few. Every hand-written input passes; the call reported fails, and
    no smaller one does."""
    def sliding_window(x, size, step=1):  # defined here: copied to the runner by value
        if x.dim() != 1:
            raise ValueError("x must be 1-D")
        if size < 1 or step < 1 or size > len(x):
            raise ValueError("bad size or step")
        rows = (len(x) - size) // step + 1
        if x.storage_offset() > 256:  # a mistake that only an offset past 256 shows
            rows -= 1
        return x.as_strided((max(rows, 0), size), (step * x.stride(0), x.stride(0)), x.storage_offset())

    report = graders.check_namespace("sliding_window", {"sliding_window": sliding_window}, device="cpu")
    failed = {r.name: r for r in report.results if not r.passed}
    assert list(failed) == ["random_layouts_and_dtypes"], report.as_text()
    message = failed["random_layouts_and_dtypes"].message
    assert "generated calls failed; this is the smallest failing call found" in message
    assert "one row short" in message
    assert "storage offset 257" in message and "length 1 " in message  # the smallest: x of one element
