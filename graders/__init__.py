"""Graders for the course's exercises.

In a notebook::

    from graders import check
    check("<exercise id>", globals(), "<check name>")   # the named checks of one exercise

From a shell: ``python -m graders list`` and ``python -m graders check EXERCISE_ID PATH``.

Layout (see README.md, "Adding an exercise"): ``graders/chNN_<slug>/<exercise_id>.py`` holds one
exercise's checks; :mod:`graders.judge` runs them, :mod:`graders.isolation` runs the student's code in
a process of its own, :mod:`graders.compare` and :mod:`graders.outcomes` are the helpers every exercise
shares.
"""

from __future__ import annotations

import os
from typing import Any

from graders.isolation import DEFAULT_TIMEOUT_S, Limits, StudentSource
from graders.outcomes import CheckFailed, Report, StudentCodeError, StudentError, UsageError
from graders.registry import LOAD_ERRORS, exercises, get_exercise, load_all_chapters

__all__ = [
    "check",
    "check_file",
    "check_namespace",
    "exercises",
    "get_exercise",
    "load_all_chapters",
    "ExerciseNotPassed",
    "CheckFailed",
    "LOAD_ERRORS",
    "Report",
    "StudentCodeError",
    "UsageError",
]

INSTRUCTOR_ENV = "COURSE_INSTRUCTOR"


def _instructor(explicit: bool | None) -> bool:
    return explicit if explicit is not None else os.environ.get(INSTRUCTOR_ENV) == "1"


def check_namespace(exercise_id: str, namespace: dict[str, Any], checks: list[str] | tuple[str, ...] | None = None, *,
                    device: Any = None, timeout: float | None = DEFAULT_TIMEOUT_S, instructor: bool | None = None,
                    memory_mb: int | None = None) -> Report:
    """Grade the names in ``namespace`` (a notebook's ``globals()``); they are copied to the grading process.

    ``instructor`` (default: ``$COURSE_INSTRUCTOR == "1"``) lets answers import the reference solutions,
    as the instructor's own notebook does.
    """
    from graders.devices import resolve_device
    from graders.judge import run_checks

    exercise = get_exercise(exercise_id)
    device = resolve_device(device)
    limits = Limits(timeout=timeout, memory_mb=memory_mb, instructor=_instructor(instructor))
    missing = [n for n in exercise.names if n not in namespace]
    if missing:
        error = StudentError("missing", "define " + " and ".join(f"`{n}`" for n in missing) +
                             " first (run the cell that defines it)")
        return run_checks(exercise, None, device, checks, limits=limits, load_error=error)
    try:
        source = StudentSource.from_namespace(namespace, exercise.names)
    except StudentCodeError as exc:
        return run_checks(exercise, None, device, checks, limits=limits, load_error=exc.error)
    return run_checks(exercise, source, device, checks, limits=limits)


def check_file(exercise_id: str, path: str, checks: list[str] | tuple[str, ...] | None = None, *, device: Any = None,
               timeout: float | None = DEFAULT_TIMEOUT_S, instructor: bool = False,
               memory_mb: int | None = None) -> Report:
    """Grade the Python file at ``path`` (imported afresh in each check's own process)."""
    from graders.devices import resolve_device
    from graders.judge import run_checks

    exercise = get_exercise(exercise_id)
    device = resolve_device(device)
    try:
        with open(path, encoding="utf-8") as f:
            f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {str(path)!r}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    limits = Limits(timeout=timeout, memory_mb=memory_mb, instructor=instructor)
    return run_checks(exercise, StudentSource.from_file(path, exercise.names), device, checks, limits=limits)


class ExerciseNotPassed(AssertionError):
    """Raised by :func:`check` so that a failing check cell fails (nbgrader scores it 0).

    Its message carries every failed check's diagnosis (nbgrader's Validate dialog and the feedback
    page show only the error); in the notebook it renders without a traceback into grader code.
    """

    def __init__(self, report: Report) -> None:
        super().__init__(report.summary())
        self.report = report

    def _render_traceback_(self) -> list[str]:
        if os.environ.get("NBGRADER_EXECUTION"):
            return [f"{type(self).__name__}: {self}"]  # Validate and feedback show only this: say why
        if self.report.not_written:
            return [f"{self.report.exercise}: not written yet (see above)"]
        failed = sum(not r.passed for r in self.report.results)
        return [f"{type(self).__name__}: {self.report.exercise}: {failed} of {len(self.report.results)} checks did "
                "not pass (the FAIL lines above say why)"]


def _judge_outside_the_kernel(exercise_id: str, namespace: dict[str, Any], checks: list[str] | None,
                              device: Any) -> Report:
    """Grade in a clean judge process (graders.judge_server): nothing a notebook cell patched reaches it."""
    from graders.devices import resolve_device
    from graders.judge_server import client
    from graders.registry import outline

    exercise = outline(exercise_id)  # (a confined kernel reads no checks: their outline, which the judge has)
    exercise.select(checks)  # an unknown check name is the caller's mistake: say so here
    device = resolve_device(device)
    request = {"exercise": exercise_id, "checks": checks, "device": str(device), "timeout": DEFAULT_TIMEOUT_S,
               "memory_mb": None, "instructor": _instructor(None), "source": None, "load_error": None}
    missing = [n for n in exercise.names if n not in namespace]
    if missing:
        request["load_error"] = StudentError("missing", "define " + " and ".join(f"`{n}`" for n in missing) +
                                             " first (run the cell that defines it)")
    else:
        try:
            request["source"] = StudentSource.from_namespace(namespace, exercise.names)
        except StudentCodeError as exc:
            request["load_error"] = exc.error
    return client().grade(request, exercise)


def check(exercise_id: str, namespace: dict[str, Any], *checks: str, device: Any = None) -> None:
    """The notebook check cell: print one line per check and raise if any did not pass.

    The verdict is made in a judge process outside the kernel. It returns nothing, so a check cell never
    ends on a value that nbgrader could mistake for a result.
    """
    report = _judge_outside_the_kernel(exercise_id, namespace, list(checks) or None, device)
    print(report.as_text(), flush=True)
    if not report.passed:
        raise ExerciseNotPassed(report) from None
