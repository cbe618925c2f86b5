"""Student-submission fixtures: small files under tests/submissions/<chapter>/<exercise>/.

Each file is what a student might hand in. It declares its verdict at the top:

- ``EXPECT_PASS = True`` for a correct solution written differently from the reference;
- ``EXPECT_FAIL = {"check_name": "words the failure message must contain", ...}`` for a bug: each named
  check must not pass and must say those words; ``"*"`` as a check name means every check (a do-nothing
  answer must score 0 everywhere);
- optionally ``EXPECT_SCORE = 0`` (the total points it may earn at most).

The files are graded exactly as ``python -m graders check`` grades them (``graders.check_file``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import graders

ROOT = Path(__file__).parent / "submissions"
FAST_TIMEOUT_S = 2.0  # fixtures that loop forever are stopped after this
MARKERS = ("EXPECT_PASS", "EXPECT_FAIL", "EXPECT_SCORE")


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


def cases(chapter: str, prefix: str = "") -> list:
    paths = sorted((ROOT / chapter).glob(f"*/{prefix}*.py"))
    assert paths, f"no submission fixtures for {chapter}"
    return [pytest.param(p.parent.name, p, id=f"{p.parent.name}/{p.stem}") for p in paths]


def assert_verdict(exercise_id: str, path: Path, device: str) -> None:
    expected = verdict(path)
    report = graders.check_file(exercise_id, str(path), device=device, timeout=FAST_TIMEOUT_S)
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
