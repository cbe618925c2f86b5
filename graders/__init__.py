"""Graders for the course's exercises.

In a notebook::

    from graders import check
    check("sliding_window", globals())                     # every check of the exercise
    check("sliding_window", globals(), "shares_storage")   # only the named checks

From a shell: ``python -m graders list`` and ``python -m graders check EXERCISE_ID PATH``.
Each chapter's checks live in their own module ``graders/chNN_<slug>.py``; they are found and loaded
automatically, so a new chapter needs no edit here.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Any

from graders.core import (
    DEFAULT_TIMEOUT_S,
    REGISTRY,
    CheckFailed,
    Report,
    StudentCodeError,
    Submission,
    UsageError,
    get_exercise,
    load_submission,
    resolve_device,
    run_checks,
)

__all__ = [
    "check",
    "check_file",
    "check_namespace",
    "exercises",
    "load_all_chapters",
    "ChecksFailed",
    "CheckFailed",
    "Report",
    "StudentCodeError",
    "UsageError",
]


LOAD_ERRORS: dict[str, str] = {}


def load_all_chapters() -> None:
    """Import every ``graders.chNN_*`` module so its exercises register themselves.

    A chapter module that fails to import is recorded in ``LOAD_ERRORS`` (the test suite requires it
    to be empty) instead of breaking the grading of every other chapter.
    """
    import graders

    for info in pkgutil.iter_modules(graders.__path__):
        name = f"graders.{info.name}"
        if info.name.startswith("ch") and name not in sys.modules and name not in LOAD_ERRORS:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - reported with the unknown-exercise message
                LOAD_ERRORS[name] = f"{type(exc).__name__}: {exc}"


def exercises() -> list:
    load_all_chapters()
    return sorted(REGISTRY.values(), key=lambda e: (e.chapter, list(REGISTRY).index(e.id)))


class ChecksFailed(AssertionError):
    """Raised by :func:`check` so that a failing notebook test cell fails (nbgrader scores it 0)."""


def check_namespace(
    exercise_id: str,
    namespace: dict[str, Any],
    checks: list[str] | tuple[str, ...] | None = None,
    *,
    device: Any = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Report:
    """Grade the names in ``namespace`` (a notebook's ``globals()``, a module's ``__dict__``)."""
    exercise = get_exercise(exercise_id)
    device = resolve_device(device)
    missing = [n for n in exercise.names if n not in namespace]
    if missing:
        message = "define " + " and ".join(f"`{n}`" for n in missing) + " first (run the cell that defines it)"
        return run_checks(exercise, None, device, checks, load_error=message)
    return run_checks(exercise, Submission(namespace, timeout=timeout), device, checks)


def check_file(
    exercise_id: str,
    path: str,
    checks: list[str] | tuple[str, ...] | None = None,
    *,
    device: Any = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Report:
    """Grade the Python file at ``path`` (imported as a fresh module)."""
    exercise = get_exercise(exercise_id)
    device = resolve_device(device)
    try:
        submission = load_submission(path, exercise.names, timeout=timeout)
    except StudentCodeError as exc:
        return run_checks(exercise, None, device, checks, load_error=str(exc))
    return run_checks(exercise, submission, device, checks)


def check(exercise_id: str, namespace: dict[str, Any], *checks: str, device: Any = None) -> None:
    """The notebook check cell: print one line per check and raise if any failed.

    It returns nothing, so a check cell never ends on a value that nbgrader could mistake for a result.
    """
    report = check_namespace(exercise_id, namespace, list(checks) or None, device=device)
    print(report.as_text())
    if not report.passed:
        failed = [r.name for r in report.results if not r.passed]
        raise ChecksFailed(
            f"{exercise_id}: {len(failed)} of {len(report.results)} checks failed "
            f"({', '.join(failed)}); read the FAIL lines above"
        ) from None
