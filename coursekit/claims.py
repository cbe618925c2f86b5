"""Measured numbers stated only as far as every machine agrees: "under 0.01", "over 50", "between 2 and 5".

A short training run's last digits are not a property of the code. The CPU's vector width (AVX-512, AVX2,
NEON), the BLAS kernel MKL or oneDNN picks, the thread count, even where the allocator placed a tensor
change the rounding of a float32 sum; a few hundred Adam steps then grow that last-bit difference into
another second digit. The same cell printed a gradient norm of 2.69e-02 on one Xeon and 3.07e-02 on another
(issue 31). So a chapter prints such a number as the claim it supports, checked against the number measured
on this run::

    from coursekit.claims import under
    print(f"final loss {under(losses[-1], 0.01)}")        # -> "final loss under 0.01"

Each helper returns the claim when the measured value satisfies it. When it does not, it returns the
measured value with the claim it broke ("0.012, not under 0.01 as on every machine this course was tested
on"), so the printed sentence stays true, "Run All" goes on, and nbval, which compares the committed
output, fails on that cell.

A number the computation keeps to its last digits everywhere (a count, an exact float, a ratio of two
exact sums) is printed as it is; a well-conditioned one to the digits it keeps. These helpers are for the
rest.
"""

from __future__ import annotations

TESTED = "as on every machine this course was tested on"


def _number(value) -> float:
    """A Python float from a float, an int, a NumPy scalar or a one-element tensor."""
    return float(value.item() if hasattr(value, "item") else value)


def _broken(value: float, claim: str, unit: str) -> str:
    return f"{value:.3g}{unit}, not {claim} {TESTED}"


def under(value, limit: float, unit: str = "") -> str:
    """``"under LIMIT"`` (``unit`` after the number: ``"x"``, ``" ms"``) when ``value < limit``; otherwise the
    measured value and the claim it broke."""
    measured = _number(value)
    claim = f"under {limit:g}{unit}"
    return claim if measured < limit else _broken(measured, claim, unit)


def over(value, limit: float, unit: str = "") -> str:
    """``"over LIMIT"`` when ``value > limit``; otherwise the measured value and the claim it broke."""
    measured = _number(value)
    claim = f"over {limit:g}{unit}"
    return claim if measured > limit else _broken(measured, claim, unit)


def between(value, low: float, high: float, unit: str = "") -> str:
    """``"between LOW and HIGH"`` when ``low <= value <= high``; otherwise the measured value and the claim it
    broke."""
    if not low < high:
        raise ValueError(f"between needs low < high, got {low} and {high}")
    measured = _number(value)
    claim = f"between {low:g} and {high:g}{unit}"
    return claim if low <= measured <= high else _broken(measured, claim, unit)
