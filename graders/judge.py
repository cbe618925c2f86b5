"""Running an exercise's checks on a student's answer and collecting a :class:`Report`.

The judge (this process) computes every input and expected value and makes every decision; the
student's code runs in a runner process (:mod:`graders.isolation`). One runner serves all of an
exercise's checks while it stays healthy, with torch's global state (default dtype, grad mode, threads,
seeds, ...) reset between checks; a check that times out, crashes or exits it gets the next check a
fresh one. Nothing the student's code does reaches the judge.
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
from graders.registry import Check, Exercise
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


class KeptRunner:
    """The last request's runner, kept for the next request on the same answer (a judge server's check cells: an
    exercise's cells send the same names one after another). It is loaded afresh for it, as a new runner would be,
    but its process (and the ranks it keeps, graders.ranks) is not started again: about 0.04 s of CPU per runner
    and per rank, and chapter 08's cells start 2-3 ranks for each run."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._runner: Runner | None = None

    @staticmethod
    def key(exercise: Exercise, source: StudentSource, device: torch.device, limits: Limits) -> tuple:
        # Not the notebook's cells (source.lines): every cell a kernel runs adds its own, so they differed from one
        # check cell to the next and no runner was ever reused in a notebook (measured: 22 processes per chapter-08
        # submission where a file's 13). The same payload is the same code, from cells whose text never changes
        # (a cell's file is named by its content); reload() hands the runner the cells as they are now.
        return (exercise.id, source.names, source.path, source.payload, str(device), limits)

    def take(self, key: tuple, seed: int, source: StudentSource | None = None) -> Runner | None:
        """The kept runner, reloaded for ``key`` (and ``source``'s cells), or None (a kept runner for another answer
        is ended)."""
        runner, kept_key = self._runner, self._key
        self._runner = self._key = None
        if runner is None:
            return None
        if kept_key == key and _fit(runner):
            try:
                runner.reload(seed, source)  # what loading prints is reported again, as a new runner's would be
                return runner
            except (StudentCodeError, GraderBroke):
                pass
        runner.close()
        return None

    def put(self, key: tuple, runner: Runner) -> list[str]:
        """Keep ``runner`` (alive) for the next request; the notes it has not reported yet."""
        self.close()
        self._key, self._runner = key, runner
        return runner.take_notes()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
        self._runner = self._key = None


def run_checks(exercise: Exercise, source: StudentSource | None, device: torch.device,
               checks: Sequence[str] | None = None, *, limits: Limits = Limits(),
               load_error: StudentError | None = None, keep: KeptRunner | None = None) -> Report:
    """Run ``checks`` (all by default) of ``exercise``; never raises for anything the student did.

    ``keep``: take the runner from there when it served the same answer last, and leave this one there."""
    selected = exercise.select(checks)
    if exercise.writes_files:  # before its runners start: they may write there (graders.confine)
        from graders.isolation import exchange_folder

        exchange_folder()
        exchange_folder(memory=True)
    results: list[CheckResult] = []
    notes: list[str] = []
    runner: Runner | None = None
    key = None
    if keep is not None and source is not None and load_error is None and selected:
        key = KeptRunner.key(exercise, source, device, limits)
        runner = keep.take(key, seed_for(exercise.id, selected[0].name), source)
    try:
        for check in selected:
            if source is None or load_error is not None:
                error = load_error or StudentError("missing", "no answer to grade")
                results.append(CheckResult(check.name, STUDENT_ERROR, 0, check.points, error.describe(), error))
                continue
            seed = seed_for(exercise.id, check.name)
            seed_everything(seed)
            try:
                runner = _runner_for(runner, source, seed, device, limits)
            except StudentCodeError as exc:
                load_error = exc.error
                results.append(CheckResult(check.name, STUDENT_ERROR, 0, check.points, exc.describe(), exc.error))
                continue
            runner.saw_not_written = False
            result = _run_one(check, runner, device)
            if not result.passed and result.status != GRADER_ERROR and runner.saw_not_written and result.error is None:
                # The check turned the stub's NotImplementedError into a failure of its own: still the stub.
                result.error = StudentError("raised", "raised NotImplementedError", "NotImplementedError",
                                            ("builtins.NotImplementedError",))
            results.append(result)
            _add_notes(notes, check.name, runner.take_notes())
    finally:
        if runner is not None:
            kept = key is not None and _fit(runner)
            _add_notes(notes, selected[-1].name if selected else "", keep.put(key, runner) if kept else runner.close())
    return Report(exercise.id, str(device), results, notes)



def _fit(runner: Runner) -> bool:
    """Whether ``runner`` may serve another check: alive, and never lowered (a request of it used
    LOWER_PRIORITY_AFTER_S CPU-seconds; at nice 19 for good, every later check would run only on spare CPU, which a
    busy machine such as make grade's has little of: the next check gets a fresh runner)."""
    return runner.alive and not runner.lowered


def _runner_for(previous: Runner | None, source: StudentSource, seed: int, device: torch.device,
                limits: Limits) -> Runner:
    """One runner serves an exercise's checks while it stays healthy (its torch state reset and reseeded
    between checks); after a timeout, crash or exit the next check gets a fresh one. Raises
    StudentCodeError when the student's code cannot even be loaded (the same for every check)."""
    if previous is not None:
        if _fit(previous):
            try:
                previous.reset(seed)
                return previous
            except (StudentCodeError, GraderBroke):
                pass
        previous.close()
    runner = Runner(source, seed=seed, device=str(device), limits=limits)
    try:
        runner.ready()
    except StudentCodeError:
        runner.close()
        raise
    return runner


def _run_one(check: Check, runner: Runner, device: torch.device) -> CheckResult:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the judge's own operations never write to stderr
            check.function(Submission(runner), device)
    except CheckFailed as exc:
        return CheckResult(check.name, FAILED, 0, check.points, str(exc))
    except StudentCodeError as exc:
        return CheckResult(check.name, STUDENT_ERROR, 0, check.points, exc.describe(), exc.error)
    except SkipCheck as exc:
        return CheckResult(check.name, SKIPPED, 0, check.points, f"skipped: {exc}")
    except Exception as exc:  # noqa: BLE001 - a grader bug, reported as such and never blamed on the student
        return CheckResult(check.name, GRADER_ERROR, 0, check.points, REPORT_GRADER_BUG + _grader_detail(exc))
    return CheckResult(check.name, PASSED, check.points, check.points)


def _add_notes(notes: list[str], check_name: str, new: list[str]) -> None:
    for note in new:
        if not any(n.endswith(note) for n in notes):
            notes.append(f"{check_name}: {note}")
