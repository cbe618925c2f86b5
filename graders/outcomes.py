"""How a check ends, and the report that collects the endings.

A check ends in exactly one of five ways (``CheckResult.status``):

- ``passed``;
- ``failed``: the answer is wrong; the message says what was checked, on which input, what was expected,
  what came back and, where the evidence singles it out, the likely cause (:func:`fail`);
- ``error``: the student's code could not run to the end: it raised (their own line is shown), timed
  out, ran out of memory, exited or crashed its process, or a name is missing (:class:`StudentCodeError`);
- ``grader error``: the grader itself broke; never blamed on the student, and the test suite fails on it;
- ``skipped``: the check needs hardware that is absent (a GPU); never counted as passed.
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any, NoReturn

PASSED, FAILED, STUDENT_ERROR, GRADER_ERROR, SKIPPED = "passed", "failed", "error", "grader error", "skipped"
SUMMARY_WIDTH = 84


class CheckFailed(Exception):
    """The answer is wrong; raised by :func:`fail` and :func:`fail_mismatch`, never built by hand."""


class SkipCheck(Exception):
    """The check cannot run here (absent hardware); raised by :func:`skip`."""


class UsageError(Exception):
    """The grader was misused (unknown exercise, unreadable file, cuda without a GPU)."""


def fail(message: str) -> NoReturn:
    """End the check as failed with ``message`` (shown to the student as it is)."""
    raise CheckFailed(message)


def fail_mismatch(what: str, *, given: str, expected: Any, got: Any, cause: str | None = None,
                  where: str | None = None) -> NoReturn:
    """End the check with the standard failure: what, on which input, expected vs returned, where, cause."""
    lines = [what, f"  input:    {given}", f"  expected: {expected}", f"  returned: {got}"]
    if where:
        lines.append(f"  where:    {where}")
    if cause:
        lines.append(f"  likely cause: {cause}")
    raise CheckFailed("\n".join(lines))


def skip(reason: str) -> NoReturn:
    raise SkipCheck(reason)


@dataclasses.dataclass(frozen=True)
class StudentError:
    """Why the student's code did not finish, as facts (never parsed back out of a message).

    ``kind``: ``raised``, ``timeout``, ``memory``, ``exited``, ``crashed``, ``missing``, ``syntax``,
    ``unsendable`` (a notebook answer that cannot be copied to the grading process), ``forbidden``
    (importing the course's reference answers) or ``limit`` (a limit of the grading process the judge enforces
    from outside was reached: the scratch folder's size).
    """

    kind: str
    summary: str
    exception_type: str | None = None  # e.g. "ValueError"
    exception_types: tuple[str, ...] = ()  # the qualified names of its class and every base class
    exception_message: str = ""
    where: str | None = None  # "answer.py, line 3, in f: return x[0]"

    def is_instance(self, cls: type) -> bool:
        """True when what the student raised is an instance of ``cls`` (subclasses included)."""
        return f"{cls.__module__}.{cls.__qualname__}" in self.exception_types

    @property
    def not_written(self) -> bool:
        return self.exception_type == "NotImplementedError"

    def describe(self) -> str:
        return self.summary + (f"\n    at {self.where}" if self.where else "")


class StudentCodeError(Exception):
    """Raised in the judge when the student's code did not finish; ``error`` holds the facts."""

    def __init__(self, error: StudentError, context: str | None = None) -> None:
        self.error = error
        self.context = context
        super().__init__(self.describe())

    def describe(self) -> str:
        text = self.error.describe()
        return f"{self.context} failed: {text}" if self.context else text

    def within(self, context: str) -> "StudentCodeError":
        """The same error, said of a particular call (``sliding_window(x, 3, 1)``)."""
        return StudentCodeError(self.error, context)


@dataclasses.dataclass
class CheckResult:
    name: str
    status: str
    points: int
    max_points: int
    message: str = ""
    error: StudentError | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclasses.dataclass
class Report:
    exercise: str
    device: str
    results: list[CheckResult]
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def score(self) -> int:
        return sum(r.points for r in self.results)

    @property
    def max_score(self) -> int:
        return sum(r.max_points for r in self.results)

    @property
    def grader_errors(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == GRADER_ERROR]

    @property
    def not_written(self) -> bool:
        """Every check that did not pass stopped on NotImplementedError: the answer is still the stub."""
        failed = [r for r in self.results if not r.passed]
        return bool(failed) and all(r.error is not None and r.error.not_written for r in failed)

    def as_json(self) -> dict[str, Any]:
        return {
            "exercise": self.exercise,
            "device": self.device,
            "passed": self.passed,
            "score": self.score,
            "max_score": self.max_score,
            "checks": [{"name": r.name, "passed": r.passed, "status": r.status, "points": r.points,
                        "max_points": r.max_points, "message": r.message} for r in self.results],
            "notes": list(self.notes),
        }

    def as_text(self) -> str:
        if self.not_written:
            return f"NOT WRITTEN  {self.exercise}: {self.not_written_line()}"
        marks = {PASSED: "PASS", FAILED: "FAIL", STUDENT_ERROR: "FAIL", GRADER_ERROR: "ERROR", SKIPPED: "SKIP"}
        lines = []
        for r in self.results:
            lines.append(f"{marks[r.status]}  {self.exercise}: {r.name} ({r.points}/{r.max_points})")
            if not r.passed:
                lines.extend("      " + line for line in r.message.splitlines())
        for note in self.notes:
            lines.append(f"note: {note} (this does not change the grade)")
        return "\n".join(lines)

    def not_written_line(self) -> str:
        return ("not written yet: your answer still raises NotImplementedError; replace "
                "`raise NotImplementedError()` with your code, run that cell, then this one")

    def summary(self) -> str:
        """The message of the exception a failing check cell raises. nbgrader's Validate dialog and the
        feedback page show only that (and Validate cuts each line at about 90 characters), so it carries
        each failed check's diagnosis in short lines: what was wrong, then why."""
        if self.not_written:
            return (f"{self.exercise}: not written yet\n    replace `raise NotImplementedError()` with your code, "
                    "run that cell, then this one")
        failed = [r for r in self.results if not r.passed]
        lines = [f"{self.exercise}: {len(failed)} of {len(self.results)} checks did not pass"]
        for r in failed:
            message = [line.strip() for line in r.message.strip().splitlines() if line.strip()] or [r.status]
            why = [line for line in message[1:] if not line.startswith(("input:", "expected:", "returned:", "where:"))]
            lines += textwrap.wrap(f"[{r.name}] {message[0]}", SUMMARY_WIDTH, subsequent_indent="    ")
            for line in why[:3]:
                lines += textwrap.wrap(line, SUMMARY_WIDTH, initial_indent="    ", subsequent_indent="    ")
        return "\n".join(lines)
