"""coursekit.claims: a measured number is printed as the claim it satisfies, and as itself (with the claim it broke)
when it does not, so the printed sentence is true on any machine and a broken claim changes the output nbval
compares."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coursekit.claims import TESTED, between, over, under


@pytest.mark.parametrize("value", [0.0036, np.float32(0.0036), torch.tensor(0.0036), torch.tensor([0.0036]), 0])
def test_a_kept_claim_is_the_claim_alone_whatever_the_number_type(value):
    assert under(value, 0.01) == "under 0.01"


def test_each_claim_kept():
    assert over(117, 50) == "over 50"
    assert between(3.07e-2, 0.01, 0.1) == "between 0.01 and 0.1"
    assert between(0.01, 0.01, 0.1) == "between 0.01 and 0.1"  # the bounds are included
    assert over(206.3, 100, unit="x") == "over 100x"


@pytest.mark.parametrize("claim, expected", [
    (lambda: under(0.012, 0.01), f"0.012, not under 0.01 {TESTED}"),
    (lambda: under(0.01, 0.01), f"0.01, not under 0.01 {TESTED}"),     # strict
    (lambda: over(50, 50), f"50, not over 50 {TESTED}"),
    (lambda: over(42.123, 50, unit="x"), f"42.1x, not over 50x {TESTED}"),
    (lambda: between(0.2, 0.01, 0.1), f"0.2, not between 0.01 and 0.1 {TESTED}"),
    (lambda: between(0.001, 0.01, 0.1), f"0.001, not between 0.01 and 0.1 {TESTED}"),
])
def test_a_broken_claim_shows_the_measured_value_and_the_claim(claim, expected):
    assert claim() == expected


@pytest.mark.parametrize("claim", [lambda: under(float("nan"), 1), lambda: over(float("nan"), 1),
                                   lambda: between(float("nan"), 0, 1)])
def test_nan_keeps_no_claim(claim):
    assert claim().startswith("nan, not ")


def test_between_needs_ordered_bounds():
    with pytest.raises(ValueError, match="low < high"):
        between(1, 2, 1)
