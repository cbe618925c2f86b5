"""Chapter 01 (tensors): references and graders for contiguous_strides, is_contiguous, sliding_window."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions import ch01_tensors as reference


# -- the references agree with PyTorch on odd layouts (hypothesis makes them the normal case) -------
shapes = st.lists(st.integers(0, 6), max_size=6).map(tuple)


@settings(max_examples=300, deadline=None)
@given(shapes)
def test_reference_strides_match_torch(shape):
    assert reference.contiguous_strides(shape) == torch.empty(shape, device="meta").stride()


@st.composite
def layouts(draw):
    shape = draw(st.lists(st.integers(0, 4), max_size=5))
    strides = draw(st.lists(st.integers(0, 40), min_size=len(shape), max_size=len(shape)))
    return tuple(shape), tuple(strides)


@settings(max_examples=400, deadline=None)
@given(layouts())
def test_reference_is_contiguous_matches_torch(layout):
    shape, strides = layout
    needed = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if 0 not in shape else 1
    view = torch.empty(needed, device="meta").as_strided(shape, strides)
    assert reference.is_contiguous(shape, strides) == view.is_contiguous()


@settings(max_examples=200, deadline=None)
@given(length=st.integers(1, 20), stride=st.integers(1, 4), offset=st.integers(0, 5), data=st.data())
def test_reference_sliding_window_matches_unfold(length, stride, offset, data):
    size = data.draw(st.integers(1, length))
    step = data.draw(st.integers(1, length + 2))
    x = torch.arange(offset + length * stride)[offset::stride][:length]
    got = reference.sliding_window(x, size, step)
    torch.testing.assert_close(got, x.unfold(0, size, step), rtol=0, atol=0)
    assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_reference_is_contiguous_rejects_length_mismatch():
    with pytest.raises(ValueError):
        reference.is_contiguous((2, 3), (1,))
