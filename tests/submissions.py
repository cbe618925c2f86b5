"""Student-submission fixtures: small files under tests/submissions/<chapter>/<exercise>/.

Each file is what a student might hand in. It declares its verdict at the top:

- ``EXPECT_PASS = True`` for a correct solution written differently from the reference;
- ``EXPECT_FAIL = {"check_name": "words the failure message must contain", ...}`` for a bug: each named
  check must not pass and must say those words; ``"*"`` as a check name means every check (a do-nothing
  answer must score 0 everywhere);
- optionally ``EXPECT_SCORE = 0`` (the total points it may earn at most);
- optionally ``EXPECT_FAIL_ON_CUDA = {...}``, used instead of ``EXPECT_FAIL`` on a GPU, for a bug whose
  symptom differs there (NumPy stride tricks alias a CPU tensor's memory, but copy a GPU tensor's).

The files are graded exactly as ``python -m graders check`` grades them (``graders.check_file``). A bug is
graded on the checks it names only, since those are all its verdict asserts: most bugs name 1 or 2 of their
exercise's 5-11 checks, so over all fixtures this runs 39 % of the check runs and keeps `make test` within its
10 minutes (issue 9). With
``COURSE_EVERY_CHECK=1`` (CI sets it) every fixture is graded on every check, so that a grader error on any
check, named or not, still fails the suite.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import graders

ROOT = Path(__file__).parent / "submissions"
FAST_TIMEOUT_S = 2.0  # fixtures that loop forever are stopped after this
MARKERS = ("EXPECT_PASS", "EXPECT_FAIL", "EXPECT_SCORE", "EXPECT_FAIL_ON_CUDA")


def verdict(path: Path) -> dict:
    """Read EXPECT_PASS / EXPECT_FAIL (and EXPECT_SCORE) from the file without running it."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in MARKERS:
                found[node.targets[0].id] = ast.literal_eval(node.value)
    if ("EXPECT_PASS" in found) == ("EXPECT_FAIL" in found):
        raise AssertionError(f"{path} must set exactly one of EXPECT_PASS or EXPECT_FAIL")
    return found


def cases(chapter: str, prefix: str = "", exercise: str = "*") -> list:
    paths = sorted((ROOT / chapter).glob(f"{exercise}/{prefix}*.py"))
    assert paths, f"no submission fixtures for {chapter}/{exercise}"
    return [pytest.param(p.parent.name, p, id=f"{p.parent.name}/{p.stem}") for p in paths]


def checks_to_grade(expected: dict) -> list[str] | None:
    """The checks a fixture is graded on: those a bug names (None: every check)."""
    if os.environ.get("COURSE_EVERY_CHECK") == "1" or "EXPECT_FAIL" not in expected:
        return None
    if "EXPECT_SCORE" in expected or "*" in expected["EXPECT_FAIL"]:  # its total score is asserted
        return None
    return list(expected["EXPECT_FAIL"])


def assert_verdict(exercise_id: str, path: Path, device: str) -> None:
    expected = verdict(path)
    if device == "cuda" and "EXPECT_FAIL_ON_CUDA" in expected:
        expected["EXPECT_FAIL"] = expected["EXPECT_FAIL_ON_CUDA"]
    report = graders.check_file(exercise_id, str(path), checks_to_grade(expected), device=device,
                                timeout=FAST_TIMEOUT_S)
    text = report.as_text()
    assert not report.grader_errors, f"the grader broke on {path.name}:\n{text}"
    if "EXPECT_PASS" in expected:
        assert report.passed, f"a correct solution was rejected:\n{text}"
        assert report.score == report.max_score
        return
    assert not report.passed, f"a buggy solution passed every check:\n{text}"
    if "EXPECT_SCORE" in expected:
        assert report.score <= expected["EXPECT_SCORE"], f"{path.name} earned {report.score} points:\n{text}"
    by_name = {r.name: r for r in report.results}
    for check_name, words in expected["EXPECT_FAIL"].items():
        names = list(by_name) if check_name == "*" else [check_name]
        for name in names:
            assert name in by_name, f"{path.name} names unknown check {name}"
            result = by_name[name]
            assert not result.passed, f"{name} should reject {path.name}:\n{text}"
            assert words.lower() in result.message.lower(), (
                f"{name}'s message for {path.name} should say {words!r}:\n{result.message}"
            )
