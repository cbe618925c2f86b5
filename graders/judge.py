"""Running an exercise's checks on a student's answer and collecting a :class:`Report`.

The judge (this process) computes every input and expected value and makes every decision; the
student's code runs in a fresh runner process per check (:mod:`graders.isolation`), so one check's
crash, endless loop or global change cannot reach the next check, nor the judge.
"""

from __future__ import annotations

import random
import traceback
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from graders.isolation import GraderBroke, Limits, Runner, StudentSource
from graders.outcomes import (
    FAILED,
    GRADER_ERROR,
    PASSED,
    SKIPPED,
    STUDENT_ERROR,
    CheckFailed,
    CheckResult,
    Report,
    SkipCheck,
    StudentCodeError,
    StudentError,
)
from graders.registry import Exercise
from graders.student import Submission

REPORT_GRADER_BUG = ("the grader itself failed on this check, which is not your fault; please report it to your "
                     "instructor (with your answer). Detail: ")


def seed_for(exercise_id: str, check_name: str) -> int:
    """A fixed seed per check, so a check sees the same data wherever and in whatever order it runs."""
    return zlib.crc32(f"{exercise_id}/{check_name}".encode())


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _grader_detail(exc: BaseException) -> str:
    if isinstance(exc, GraderBroke):
        return str(exc).strip().splitlines()[-1] if str(exc).strip() else "GraderBroke"
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {Path(frame.filename).name}:{frame.lineno})"


def run_checks(exercise: Exercise, source: StudentSource | None, device: torch.device,
               checks: Sequence[str] | None = None, *, limits: Limits = Limits(),
               load_error: StudentError | None = None) -> Report:
    """Run ``checks`` (all by default) of ``exercise``; never raises for anything the student did."""
    selected = exercise.select(checks)
    results: list[CheckResult] = []
    notes: list[str] = []
    for check in selected:
        if source is None or load_error is not None:
            error = load_error or StudentError("missing", "no answer to grade")
            results.append(CheckResult(check.name, STUDENT_ERROR, 0, check.points, error.describe(), error))
            continue
        seed = seed_for(exercise.id, check.name)
        seed_everything(seed)
        runner = Runner(source, seed=seed, device=str(device), limits=limits)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the judge's own operations never write to stderr
                runner.ready()
                check.function(Submission(runner), device)
        except CheckFailed as exc:
            results.append(CheckResult(check.name, FAILED, 0, check.points, str(exc)))
        except StudentCodeError as exc:
            results.append(CheckResult(check.name, STUDENT_ERROR, 0, check.points, exc.describe(), exc.error))
            if exc.error.kind in ("syntax", "missing", "forbidden", "unsendable") and not runner.loaded:
                load_error = exc.error  # loading failed: the same for every check, no need to start more runners
        except SkipCheck as exc:
            results.append(CheckResult(check.name, SKIPPED, 0, check.points, f"skipped: {exc}"))
        except Exception as exc:  # noqa: BLE001 - a grader bug, reported as such and never blamed on the student
            results.append(CheckResult(check.name, GRADER_ERROR, 0, check.points, REPORT_GRADER_BUG + _grader_detail(exc)))
        else:
            results.append(CheckResult(check.name, PASSED, check.points, check.points))
        finally:
            for note in runner.close():
                labelled = f"{check.name}: {note}"
                if note not in [n.split(": ", 1)[-1] for n in notes]:
                    notes.append(labelled)
    return Report(exercise.id, str(device), results, notes)

