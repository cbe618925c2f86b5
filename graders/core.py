"""The grader core: exercises, checks, running student code safely, and reports.

One implementation serves every place an exercise is graded: the notebooks' check cells
(:func:`graders.check`), the command line (``python -m graders``), nbgrader's autograde (which runs
the notebooks' test cells) and the pytest suite.

How student code is run (see :class:`Submission`):

- every call gets *copies* of its inputs, so student code cannot change the values a check compares
  against; checks compute their expected values from their own inputs before calling student code;
- every call runs under a time limit (``SIGALRM`` in the main thread, so a ``while True`` loop is
  interrupted; the interrupt is a ``BaseException`` that ``except Exception`` cannot swallow);
- what student code writes to stderr, and the warnings it raises, are captured and reported on stdout
  instead (nbgrader scores a graded cell 0 as soon as anything reaches stderr);
- an exception raised by student code is reported with the student's own line, not the grader's.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import linecache
import os
import random
import re
import signal
import sys
import threading
import traceback
import types
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

DEFAULT_TIMEOUT_S = 10.0
_GRADERS_DIR = str(Path(__file__).resolve().parent)


# --------------------------------------------------------------------------------------------------
# Failures a check can report
# --------------------------------------------------------------------------------------------------
class CheckFailed(Exception):
    """A check found the student's answer wrong; the message is shown to the student as it is."""


class StudentCodeError(Exception):
    """The student's code could not be run to the end (it raised, timed out, or a name is missing).

    ``exception`` is what the student's code raised, or None (a timeout, a missing name).
    """

    def __init__(self, message: str, exception: BaseException | None = None) -> None:
        super().__init__(message)
        self.exception = exception


class UsageError(Exception):
    """The grader itself was misused (unknown exercise, unreadable file, cuda without a GPU)."""


class _Timeout(BaseException):
    """Raised inside student code by the alarm; a BaseException so ``except Exception`` can't eat it."""


def fail(message: str) -> None:
    raise CheckFailed(message)


def expect_error(student: "Submission", error: type[Exception], function: Callable[..., Any], args: Sequence[Any],
                 *, call: str, why: str, cause: str = "a missing check at the top of the function") -> None:
    """Fail unless ``function(*args)`` (student code, args not copied) raises ``error``."""
    try:
        got = student.run(function, *args)
    except StudentCodeError as exc:
        if isinstance(exc.exception, error):
            return
        what = str(exc).split(" ", 1)[1] if " raised " in str(exc) else str(exc)
        raise CheckFailed(f"{call} must raise {error.__name__} because {why}, but it {what}") from None
    shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else repr(got)
    raise CheckFailed(f"{call} returned {shown}; it must raise {error.__name__} because {why} (likely cause: {cause})")


def mismatch(what: str, *, given: str, expected: Any, got: Any, cause: str | None = None) -> CheckFailed:
    """Build the standard failure: what was checked, on what input, expected vs returned, likely cause."""
    lines = [what, f"  input:    {given}", f"  expected: {expected}", f"  returned: {got}"]
    if cause:
        lines.append(f"  likely cause: {cause}")
    return CheckFailed("\n".join(lines))


# --------------------------------------------------------------------------------------------------
# Exercises and checks
# --------------------------------------------------------------------------------------------------
CheckFunction = Callable[["Submission", torch.device], None]


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    points: int
    description: str
    function: CheckFunction


@dataclasses.dataclass
class Exercise:
    id: str
    chapter: str
    names: tuple[str, ...]
    checks: list[Check] = dataclasses.field(default_factory=list)

    def check(self, points: int = 1) -> Callable[[CheckFunction], CheckFunction]:
        """Decorator registering a check; its docstring's first line is its description."""

        def register(function: CheckFunction) -> CheckFunction:
            if any(c.name == function.__name__ for c in self.checks):
                raise ValueError(f"duplicate check {function.__name__} in {self.id}")
            description = (function.__doc__ or function.__name__).strip().splitlines()[0]
            self.checks.append(Check(function.__name__, points, description, function))
            return function

        return register

    @property
    def max_score(self) -> int:
        return sum(c.points for c in self.checks)

    def select(self, names: Sequence[str] | None) -> list[Check]:
        if not names:
            return list(self.checks)
        by_name = {c.name: c for c in self.checks}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise UsageError(
                f"exercise {self.id!r} has no check named {', '.join(map(repr, unknown))}; "
                f"its checks are: {', '.join(by_name)}"
            )
        return [by_name[n] for n in names]


REGISTRY: dict[str, Exercise] = {}


def exercise(id: str, chapter: str, names: Iterable[str]) -> Exercise:
    if id in REGISTRY:
        raise ValueError(f"exercise {id!r} is defined twice")
    REGISTRY[id] = Exercise(id, chapter, tuple(names))
    return REGISTRY[id]


def get_exercise(exercise_id: str) -> Exercise:
    from graders import load_all_chapters

    load_all_chapters()
    try:
        return REGISTRY[exercise_id]
    except KeyError:
        from graders import LOAD_ERRORS

        known = ", ".join(sorted(REGISTRY))
        broken = "".join(f"\n(grader module {m} failed to load: {e})" for m, e in LOAD_ERRORS.items())
        raise UsageError(f"unknown exercise {exercise_id!r}; known exercises: {known}{broken}") from None


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` rather than ``torch.float32``, as students write it in messages."""
    return str(dtype).removeprefix("torch.")


@contextlib.contextmanager
def one_torch_thread():
    """Run the block with one intra-op thread, then restore the setting.

    The checks' models and tensors are tiny: a thread pool's synchronisation costs more than it saves,
    and on a busy two-core machine far more (10x to 1000x slower has been measured on BatchNorm and
    small training loops).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------------------------------
def resolve_device(requested: str | torch.device | None = None) -> torch.device:
    """``requested``, else ``$COURSE_DEVICE``, else cuda when available, else cpu."""
    if requested is None:
        requested = os.environ.get("COURSE_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise UsageError(f"unknown device {str(requested)!r}; use cpu or cuda") from None
    if device.type not in ("cpu", "cuda"):
        raise UsageError(f"unsupported device {str(requested)!r}; use cpu or cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("cuda was asked for, but no CUDA GPU is available here; use --device cpu")
    return device


# --------------------------------------------------------------------------------------------------
# Running student code
# --------------------------------------------------------------------------------------------------
def _copy_value(value: Any) -> Any:
    """A deep copy that keeps tensor layout (strides, storage offset) but not storage."""
    if isinstance(value, torch.Tensor):
        return _clone_layout(value)
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        copied = [_copy_value(v) for v in value]
        return type(value)(copied) if not hasattr(value, "_fields") else type(value)(*copied)
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def _clone_layout(t: torch.Tensor) -> torch.Tensor:
    """Copy ``t`` into fresh storage of the same size, keeping its strides and storage offset.

    A plain ``clone()`` would make a strided input contiguous, which hides the very bugs the
    tensor exercises look for (an ignored stride or storage offset).
    """
    storage_elems = t.untyped_storage().nbytes() // t.element_size()
    base = torch.empty(storage_elems, dtype=t.dtype, device=t.device)
    whole = t.as_strided((storage_elems,), (1,), 0) if storage_elems else t.new_empty(0)
    base.copy_(whole.detach())
    out = base.as_strided(t.shape, t.stride(), t.storage_offset())
    if t.requires_grad:
        out = out.detach().requires_grad_(True)
    return out


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """Interrupt the block after ``seconds`` (main thread only; elsewhere the caller uses a thread)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # Re-fire every 0.2 s: student code that catches the first interrupt with a bare except is hit again.
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _stop_thread(worker: threading.Thread, attempts: int = 50) -> None:
    """Raise the timeout inside a thread that overran (no alarm reaches a thread other than the main
    one), again and again until it stops: a spinning thread left behind would slow everything after it.
    Code blocked inside a C call cannot be interrupted this way, and is left to finish on its own."""
    import ctypes

    for _ in range(attempts):
        if not worker.is_alive() or worker.ident is None:
            return
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_Timeout))
        worker.join(0.05)


def _student_frame(tb: types.TracebackType | None, student_files: set[str]) -> traceback.FrameSummary | None:
    """The innermost traceback frame in the student's own code (not the grader's, not a library's)."""
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if f.filename in student_files]
    if own:
        return own[-1]
    # In a notebook the student's cells have names like <ipython-input-…> or /tmp/ipykernel_…/….py.
    outside = [
        f
        for f in frames
        if not f.filename.startswith(_GRADERS_DIR)
        and "site-packages" not in f.filename
        and not f.filename.startswith(sys.base_prefix)
        and not f.filename.startswith(sys.prefix)
    ]
    return outside[-1] if outside else None


def describe_exception(exc: BaseException, student_files: set[str]) -> str:
    frame = _student_frame(exc.__traceback__, student_files)
    text = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if frame is None:
        return text
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    if frame.filename in student_files:
        where = Path(frame.filename).name
    elif re.search(r"ipykernel_\d+|<ipython-input", frame.filename):
        where = "your notebook cell"  # IPython names each cell's code after a temporary file
    else:
        where = frame.filename
    return f"{text}\n    at {where}, line {frame.lineno}, in {frame.name}: {line}"


class Submission:
    """The student's names, and a safe way for checks to call them."""

    def __init__(
        self,
        namespace: dict[str, Any],
        *,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        source_file: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.timeout = timeout
        self.student_files = {source_file} if source_file else set()
        self.notes: list[str] = []  # stderr and warnings the student's code produced

    # -- names ------------------------------------------------------------------------------------
    def get(self, name: str) -> Any:
        if name not in self.namespace:
            raise StudentCodeError(f"define `{name}`: the exercise expects a name `{name}`, and none was found")
        return self.namespace[name]

    # -- calls ------------------------------------------------------------------------------------
    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the student's ``name`` with copies of the arguments, under the time limit."""
        return self.run(self.get(name), *_copy_value(list(args)), **_copy_value(kwargs), _label=name)

    def run(self, function: Callable[..., Any], *args: Any, _label: str | None = None,
            _timeout: float | None = None, **kwargs: Any) -> Any:
        """Run any student callable (a method, a class) as-is, under the time limit, stderr captured.

        Use this where the arguments must *not* be copied (for instance a check that passes a tensor
        and then looks at whether the student's result shares its storage). ``_timeout`` replaces the
        submission's limit for this one call (a check that needs a tighter or looser bound).
        """
        label = _label or getattr(function, "__qualname__", None) or type(function).__qualname__
        if _timeout is not None:
            saved, self.timeout = self.timeout, _timeout
            try:
                return self.run(function, *args, _label=label, **kwargs)
            finally:
                self.timeout = saved
        if threading.current_thread() is not threading.main_thread() and self.timeout:
            return self._run_in_thread(function, args, kwargs, label)
        return self._run_here(function, args, kwargs, label)

    def _run_here(self, function, args, kwargs, label):
        stderr = io.StringIO()
        caught: list[warnings.WarningMessage] = []
        dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
        try:
            with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(stderr):
                warnings.simplefilter("always")
                with _time_limit(self.timeout):
                    return function(*args, **kwargs)
        except _Timeout:
            raise StudentCodeError(
                f"`{label}` did not finish within {self.timeout:g} s and was stopped; "
                "likely cause: a loop that never ends (check its stopping condition)"
            ) from None
        except (CheckFailed, StudentCodeError, UsageError):
            raise
        except NotImplementedError as exc:
            raise StudentCodeError(
                f"`{label}` is not written yet (it raises NotImplementedError): replace the "
                "`raise NotImplementedError()` line in its cell with your code, run that cell, then this one", exc
            ) from None
        except Exception as exc:  # noqa: BLE001 - any error in student code is reported, not raised
            message = f"`{label}` raised {describe_exception(exc, self.student_files)}"
            raise StudentCodeError(message, exc) from None
        finally:
            torch.set_default_dtype(dtype)
            torch.set_grad_enabled(grad)
            self._note(label, stderr.getvalue(), caught)

    def _run_in_thread(self, function, args, kwargs, label):
        box: dict[str, Any] = {}

        def target():
            try:
                box["value"] = self._run_here(function, args, kwargs, label)
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                box["error"] = exc

        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            _stop_thread(worker)
            raise StudentCodeError(f"`{label}` did not finish within {self.timeout:g} s; likely cause: a loop that never ends")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _note(self, label: str, stderr_text: str, caught: list[warnings.WarningMessage]) -> None:
        for w in caught:
            note = f"`{label}` warned: {w.category.__name__}: {w.message}"
            if note not in self.notes:
                self.notes.append(note)
        if stderr_text.strip():
            first = stderr_text.strip().splitlines()[0][:200]
            note = f"`{label}` wrote to stderr: {first}"
            if note not in self.notes:
                self.notes.append(note)


def load_submission(path: str | os.PathLike[str], names: Sequence[str], timeout: float | None = DEFAULT_TIMEOUT_S) -> Submission:
    """Import the student's file as a fresh module and return its names as a :class:`Submission`.

    Raises :class:`UsageError` when the file cannot be read, :class:`StudentCodeError` when it has a
    syntax error, raises or loops while being imported.
    """
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {str(path)!r}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    filename = str(path.resolve())
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        caret = " " * max((exc.offset or 1) - 1, 0) + "^"
        text = (exc.text or "").rstrip("\n")
        raise StudentCodeError(
            f"{path.name} has a syntax error on line {exc.lineno}: {exc.msg}\n    {text}\n    {caret}"
        ) from None
    module_name = f"student_submission_{zlib.crc32(filename.encode()):08x}_{id(code):x}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module  # classes defined there must be picklable for DataLoader workers
    submission = Submission(module.__dict__, timeout=timeout, source_file=filename)
    linecache.checkcache(filename)
    try:
        submission.run(lambda: exec(code, module.__dict__), _label=f"importing {path.name}")
    except StudentCodeError as exc:
        raise StudentCodeError(str(exc).replace("`<lambda>`", path.name)) from None
    for name in names:
        submission.get(name)
    return submission


# --------------------------------------------------------------------------------------------------
# Running checks and reporting
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class CheckResult:
    name: str
    passed: bool
    points: int
    max_points: int
    message: str


@dataclasses.dataclass
class Report:
    exercise: str
    device: str
    results: list[CheckResult]
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def score(self) -> int:
        return sum(r.points for r in self.results)

    @property
    def max_score(self) -> int:
        return sum(r.max_points for r in self.results)

    def as_json(self) -> dict[str, Any]:
        return {
            "exercise": self.exercise,
            "device": self.device,
            "passed": self.passed,
            "score": self.score,
            "max_score": self.max_score,
            "checks": [
                {"name": r.name, "passed": r.passed, "points": r.points, "message": r.message}
                for r in self.results
            ],
        }

    def as_text(self) -> str:
        lines = []
        for r in self.results:
            mark = "PASS" if r.passed else "FAIL"
            lines.append(f"{mark}  {self.exercise}: {r.name} ({r.points}/{r.max_points})")
            if not r.passed:
                lines.extend("      " + line for line in r.message.splitlines())
        for note in self.notes:
            lines.append(f"note: {note} (this does not change the grade)")
        return "\n".join(lines)


def seed_for(exercise_id: str, check_name: str) -> int:
    """A fixed seed per check, so a check sees the same data wherever and in whatever order it runs."""
    return zlib.crc32(f"{exercise_id}/{check_name}".encode())


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run_checks(exercise: Exercise, submission: Submission | None, device: torch.device, checks: Sequence[str] | None = None, *, load_error: str | None = None) -> Report:
    """Run ``checks`` (all by default) of ``exercise`` on ``submission``; never raises for student errors."""
    selected = exercise.select(checks)
    results = []
    for check in selected:
        if submission is None:
            results.append(CheckResult(check.name, False, 0, check.points, load_error or "no submission"))
            continue
        seed_everything(seed_for(exercise.id, check.name))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the grader's own operations must never write to stderr
                check.function(submission, device)
        except (CheckFailed, StudentCodeError) as exc:
            results.append(CheckResult(check.name, False, 0, check.points, str(exc)))
        except _Timeout:
            results.append(CheckResult(check.name, False, 0, check.points, "the check was stopped by the time limit"))
        except Exception as exc:  # noqa: BLE001 - a crash on odd student output is still a failure
            where = traceback.extract_tb(exc.__traceback__)[-1]
            results.append(
                CheckResult(
                    check.name,
                    False,
                    0,
                    check.points,
                    "the grader could not use what your code returned "
                    f"({type(exc).__name__}: {exc}; at {Path(where.filename).name}:{where.lineno}); "
                    "check the type and shape your function returns against the specification",
                )
            )
        else:
            results.append(CheckResult(check.name, True, check.points, check.points, ""))
    notes = submission.notes if submission is not None else []
    return Report(exercise.id, str(device), results, list(notes))
