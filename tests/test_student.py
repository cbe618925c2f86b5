"""graders/student.py's expect_errors: every invalid call is made before a cause is named, and a cause is named
only when those calls single it out (issue 32: a hint appended to every failure of a kind was a wrong cause)."""

from __future__ import annotations

import pytest
import torch

from graders.isolation import Limits, StudentSource
from graders.judge import run_checks
from graders.registry import Exercise
from graders.student import ErrorCase, Submission, expect_error, expect_errors

# validate(x) must raise ValueError unless 0 < x < 5; -1 and 7 are clearly invalid, 0 and 5 are the boundaries.
VALIDATE = Exercise("demo_validate", chapter="00_demo", names=("validate",))
CASES = [(-1, None), (0, "x == 0 is invalid too: the test is x <= 0"), (7, None),
         (5, "x == 5 is invalid too: the test is x >= 5")]
NO_CHECK = "no check of x: none of these raised"


@VALIDATE.check(points=1)
def rejects_invalid(student: Submission, device: torch.device) -> None:
    expect_errors(student, ValueError, "validate",
                  [ErrorCase((x,), f"validate({x})", "x must satisfy 0 < x < 5", hint=hint, other_hint=hint)
                   for x, hint in CASES], missing_check=NO_CHECK)


@VALIDATE.check(points=1)
def rejects_minus_one(student: Submission, device: torch.device) -> None:
    expect_error(student, ValueError, "validate", (-1,), call="validate(-1)", why="x must satisfy 0 < x < 5")


def message(body: str, check: str = "rejects_invalid") -> str:
    namespace: dict = {}
    exec(compile(f"def validate(x):\n{body}", "/tmp/ipykernel_0/validate.py", "exec"), namespace)
    report = run_checks(VALIDATE, StudentSource.from_namespace(namespace, VALIDATE.names), torch.device("cpu"),
                        [check], limits=Limits(timeout=2.0))
    (result,) = report.results
    return "" if result.passed else result.message


@pytest.mark.parametrize("body, says, never", [
    # Every invalid call returned: the check is missing, and this is the only mistake that says so.
    ("    return x\n", [f"validate(-1) returned -1", NO_CHECK, "3 other invalid call(s) returned too"], ["x == 0"]),
    # 7 and 5 raised, -1 and 0 did not: the first of them is reported, with the evidence, not with 0's hint.
    ("    if x >= 5:\n        raise ValueError(x)\n    return x\n",
     ["validate(-1) returned", "lets this call through, although validate(7) did raise", "1 other"], [NO_CHECK]),
    # Only the boundary 0 let through, where -1 raised: its hint is the cause.
    ("    if x < 0 or x >= 5:\n        raise ValueError(x)\n    return x\n",
     ["validate(0) returned 0", "x == 0 is invalid too"], [NO_CHECK, "other invalid"]),
    # The boundary 0 divides by zero after -1 raised ValueError: the boundary's hint.
    ("    if x < 0 or x >= 5:\n        raise ValueError(x)\n    return 1 / x\n",
     ["validate(0) must raise ValueError", "raised ZeroDivisionError", "x == 0 is invalid too"], []),
    # The first call raises another exception, nothing raised ValueError before it: no boundary is singled out.
    ("    if x == 0:\n        raise ValueError(x)\n    return 1 / (x + 1)\n",
     ["validate(-1) must raise ValueError", "the specification asks for ValueError"], ["x == 0"]),
    ("    assert 0 < x < 5\n    return x\n", ["assert raises AssertionError; raise ValueError"], []),
    # A later boundary let through is reported after an earlier failure in order: -1 comes first.
    ("    if x == 7:\n        raise ValueError(x)\n    return x\n", ["validate(-1) returned", "2 other"], ["x == 5"]),
])
def test_expect_errors_names_a_cause_only_from_every_call(body, says, never):
    text = message(body)
    assert text, "a wrong answer passed"
    for words in says:
        assert words in text, f"{words!r} not in:\n{text}"
    for words in never:
        assert words not in text, f"{words!r} in:\n{text}"


def test_a_correct_validation_passes():
    assert message("    if not 0 < x < 5:\n        raise ValueError(x)\n    return x\n") == ""


def test_one_call_that_returns_names_no_cause_unless_one_is_given():
    text = message("    return x\n", check="rejects_minus_one")
    assert "validate(-1) returned -1; it must raise ValueError because x must satisfy 0 < x < 5" in text
    assert "likely cause" not in text
