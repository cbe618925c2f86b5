"""Student code runs in a process of its own; the judge only ever sees what it sends back.

The judge (the process that computes expected values and decides) starts a *runner*, reused for the
next check of the same exercise while it stays healthy (see :mod:`graders.judge`). The runner loads the student's answer (a file it imports itself, or a notebook's names sent by value with
cloudpickle), then serves the judge's requests: call a student function on inputs the judge sends, or
run a grader *scenario* (grader code that drives student objects: build a module, train a step, …) and
send back observations. Replies are encoded by :mod:`graders.wire` and read with
``torch.load(weights_only=True)``, so nothing the student returns can run code in the judge.

Consequences, each proven in tests/test_isolation.py:

- the expected values and the comparisons live only in the judge: patching torch, numpy, builtins or
  ``graders`` inside the student's code, or hunting through ``gc`` and stack frames, finds nothing;
- the time limit is enforced by killing the runner's whole process group (its DataLoader workers too),
  which no code inside can switch off; ``sys.exit``, ``os._exit``, signals and segfaults end the runner,
  and the judge reports what happened;
- memory is capped (``COURSE_MEMORY_LIMIT_MB``, default 2048 MiB above what the runner starts with, on
  Linux for CPU grading), and hitting the cap is reported as such;
- the course's reference answers (``solutions``) cannot be imported while grading, unless the judge
  grades the instructor's own notebook (``instructor=True``);
- what the student's code (and any process it starts) prints goes to files the judge reads and reports
  as notes: never to the judge's stdout (``--json`` stays one JSON object) or to a notebook's stderr.
- the operating system confines the runner before the answer loads (:mod:`graders.confine`, Linux with
  Landlock): it and every process it starts may write only its own scratch folder (its working folder, TMPDIR
  and HOME), the judge's exchange folders (:func:`exchange_folder`) and /dev/shm; may read the Python
  environment, the course's runner code and its own answer, but not ``solutions/``, the chapters' checks or the
  tests; may not use TCP (a rank may, for gloo), signal or read /proc of any process outside its sandbox.
  Where that is unavailable the command line says so (``--require-confinement`` refuses to run).

Runners start from a *forkserver* on Linux and macOS: a clean process, started once per judge, that has
imported torch and the graders but never sees an expected value; forking from it costs milliseconds.
The command line and the notebooks' judge start it as a fork of themselves before they compute anything
(:func:`warm_up`), which saves a second torch import.
On Windows (or with ``COURSE_GRADER_START_METHOD=spawn``) each runner is a fresh interpreter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import importlib
import io
import linecache
import multiprocessing
import multiprocessing.util
import os
import pickle
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
import weakref
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graders.outcomes import CheckFailed, StudentCodeError, StudentError

# graders.wire (torch) is imported where it is used: ``import graders`` stays light, so that a kernel can start
# its judge before it imports torch itself (see graders.judge_server).

START_METHOD_ENV = "COURSE_GRADER_START_METHOD"  # the notebooks' own processes: COURSE_START_METHOD
WARM_OPTIMIZERS_ENV = "COURSE_RUNNER_WARM_OPTIMIZERS"  # "0": the forkserver builds no optimizer (graders._preload)
MEMORY_LIMIT_ENV = "COURSE_MEMORY_LIMIT_MB"
DEFAULT_MEMORY_LIMIT_MB = 2048
DEFAULT_TIMEOUT_S = 10.0
NOT_WRITTEN_NOTE = "\x00the student's code raised NotImplementedError"  # a flag, never shown
START_TIMEOUT_S = 120.0  # a fresh interpreter (spawn) importing torch on a busy laptop
NOTE_CHARS = 300
# No check's request (nor a test cell, nor an answer cell defining names) uses this much CPU on a 2-core laptop:
# the checks of a whole exercise take 2 s at most (10 s with processes of their own). Something that does is most
# likely an endless loop, which would hold a core until its time limit: lower_priority() then gives it only the
# CPU nothing else wants. CPU-seconds, not wall-clock ones (graders.runclock): a correct answer that waits for a
# CPU on a busy machine is never lowered, and its time limit counts only the time it could run.
LOWER_PRIORITY_AFTER_S = 3.0
# The runner's scratch folder (its working folder, TMPDIR and HOME) may hold at most this much: RLIMIT_FSIZE bounds
# one file, not how many. Measured by the judge while it waits (every SCRATCH_WATCH_S) and after every reply.
SCRATCH_LIMIT_BYTES = 1 << 29  # 512 MiB: the course's answers write kilobytes
SCRATCH_WATCH_S = 0.05  # every poll: a write is bounded so, at the disk's speed (fallocate, which takes space at once,
# answers EOPNOTSUPP in a runner: graders.confine).

_GRADERS_DIR = str(Path(__file__).resolve().parent)
_SOLUTIONS_DIR = str(Path(__file__).resolve().parent.parent / "solutions")
_CHAPTER_GRADER = re.compile(r"ch\d\d_\w+$")
_NOTEBOOK_FILE = re.compile(r"ipykernel_\d+|<ipython-input")


def lower_priority(process_group: int) -> bool:
    """Give every process of ``process_group`` the lowest priority (nice 19): it then runs only on CPU time that
    nothing else wants. Under ``make grade`` every core grades a submission, and an answer that loops until its
    time limit (a wall-clock one, unchanged) took a core from the others: a class of 24 with two looping students
    spent 60 of its 170 CPU-seconds on them. Nobody can raise it again without privileges, so a process that
    was lowered stays so. True when done (not on Windows, or when the group has ended).

    Where Linux shares CPU between sessions first (autogroups, on by default on desktops), a process's nice counts
    only within its session: a group that leads its own session (a kernel, a runner) has its session lowered too.
    """
    try:
        os.setpriority(os.PRIO_PGRP, process_group, 19)
    except (AttributeError, OSError):
        return False
    with contextlib.suppress(OSError):
        if os.getsid(process_group) == process_group:  # never the session of the grader that started it
            with open(f"/proc/{process_group}/autogroup", "w") as autogroup:
                autogroup.write("19")
    return True


class GraderBroke(Exception):
    """The grader's own code failed inside the runner (not the student's fault)."""


# ==================================================================================================
# What the judge sends: the student's answer, and the limits it runs under
# ==================================================================================================
@dataclasses.dataclass(frozen=True)
class StudentSource:
    """Where the student's names come from: a file the runner imports, or a notebook's names by value."""

    label: str
    names: tuple[str, ...]
    path: str | None = None
    payload: bytes | None = None
    lines: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # notebook cells' source, for tracebacks

    @classmethod
    def from_file(cls, path: str, names: Sequence[str]) -> "StudentSource":
        return cls(label=Path(path).name, names=tuple(names), path=str(Path(path).resolve()))

    @classmethod
    def from_namespace(cls, namespace: dict[str, Any], names: Sequence[str]) -> "StudentSource":
        """Copy the exercise's names out of a notebook (by value: under spawn nothing else reaches the runner).

        Raises :class:`StudentCodeError` (``unsendable``) when an answer refers to something that cannot be
        copied to another process (an open file, a lock, a generator).
        """
        chosen = {name: namespace[name] for name in names if name in namespace}
        try:
            payload = _pickle_answers(chosen)
        except BaseException as exc:  # noqa: BLE001 - whatever pickling raises, the student must hear why
            raise StudentCodeError(StudentError(
                "unsendable",
                f"your answer could not be copied to the grading process ({type(exc).__name__}: {exc}); "
                "it probably uses a global variable that cannot be copied (an open file, a lock, a "
                "generator, a DataLoader with workers): create such objects inside your function or class",
            )) from None
        cells = {name: list(entry[2]) for name, entry in linecache.cache.items()
                 if _NOTEBOOK_FILE.search(name) and len(entry) >= 3 and isinstance(entry[2], list)}
        return cls(label="your notebook", names=tuple(names), payload=payload, lines=cells)


def _pickle_answers(answers: dict[str, Any]) -> bytes:
    """cloudpickle, except for library decorators that ``functools.wraps`` makes look like notebook code.

    ``torch.autograd.function.once_differentiable(f)`` returns a closure whose ``__module__`` is the
    notebook's, so cloudpickle would copy torch's wrapper by value (and fail to rebuild it); it is sent
    as "apply once_differentiable to f" instead.
    """
    import cloudpickle
    from torch.autograd.function import once_differentiable

    wrapper_code = once_differentiable(lambda ctx, *grads: None).__code__
    dispatcher_code = functools.singledispatch(lambda x: None).__code__

    class AnswerPickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.FunctionType) and obj.__code__ is wrapper_code and hasattr(obj, "__wrapped__"):
                return once_differentiable, (obj.__wrapped__,)
            if isinstance(obj, types.FunctionType) and obj.__code__ is dispatcher_code and hasattr(obj, "registry"):
                # functools.singledispatch keeps a weak-reference cache, which cannot be pickled: send "the
                # default function, then these registrations" (registered after the dispatcher exists, since
                # its handlers usually call it by name).
                extra = {cls: f for cls, f in obj.registry.items() if cls is not object}
                return functools.singledispatch, (obj.registry[object],), extra, None, None, _register_all
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    AnswerPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(answers)
    return buffer.getvalue()


def _register_all(dispatcher: Any, registrations: dict) -> None:
    """Rebuilds a pickled ``functools.singledispatch`` function's registrations (see :func:`_pickle_answers`)."""
    for cls, handler in registrations.items():
        dispatcher.register(cls, handler)


@dataclasses.dataclass(frozen=True)
class Limits:
    timeout: float | None = DEFAULT_TIMEOUT_S  # seconds for each request (None: no limit)
    memory_mb: int | None = None  # None: $COURSE_MEMORY_LIMIT_MB, else DEFAULT_MEMORY_LIMIT_MB; 0: no cap
    instructor: bool = False  # the instructor's notebook may import the reference answers

    def memory(self) -> int:
        if self.memory_mb is not None:
            return self.memory_mb
        return int(os.environ.get(MEMORY_LIMIT_ENV) or DEFAULT_MEMORY_LIMIT_MB)


# ==================================================================================================
# Starting runners
# ==================================================================================================
def start_method() -> str:
    chosen = os.environ.get(START_METHOD_ENV)
    methods = multiprocessing.get_all_start_methods()
    if chosen:
        if chosen not in methods:
            raise ValueError(f"{START_METHOD_ENV}={chosen!r}: this platform offers {', '.join(methods)}")
        return chosen
    return "forkserver" if "forkserver" in methods else "spawn"


def _context():
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # A clean zygote: torch and the graders imported once, never the judge's values or __main__.
        context.set_forkserver_preload(["graders._preload"])
        if _gpu_present():
            # The forkserver must not ask for itself (see graders/_preload.py): it reads this when it starts.
            os.environ[WARM_OPTIMIZERS_ENV] = "0"
    return context


def _gpu_present() -> bool:
    """Whether a CUDA GPU exists, asked in the judge (which forks nothing without exec when one does)."""
    import torch

    return torch.cuda.is_available()


_MAIN_LOCK = threading.RLock()  # judges in threads (graders.ranks starts its ranks from threads too)


@contextlib.contextmanager
def _main_module_hidden():
    """Start a process without it re-running the caller's ``__main__`` (multiprocessing does that under spawn
    and forkserver, so a script that calls the graders at top level would grade itself recursively)."""
    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


@contextlib.contextmanager
def _one_thread_under_spawn():
    """Under spawn a runner is a fresh interpreter, and importing numpy starts OpenBLAS's thread pool (a second thread
    on 2 cores) before the runner's first line: a rank could then not join its network namespace (the kernel lets only
    a process of one thread join a user namespace). The runner's own tensors are tiny (one thread: see _serve_checks)."""
    if start_method() != "spawn" or "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # (under _MAIN_LOCK: no other runner starts meanwhile)
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def warm_up(exercise_id: str | Sequence[str] | None = None) -> None:
    """Start the forkserver now, from a judge process that has not computed anything yet.

    The command line and the notebooks' judge server call this first thing. Where it is safe (below), the
    forkserver is started as a fork of this process, which has imported torch and the graders already, so
    each of them pays the torch import once instead of twice (about 2 s of CPU on a 2-core laptop).
    Elsewhere it is multiprocessing's own: a fresh interpreter that imports them itself.

    With ``exercise_id`` (a judge grading that exercise only, or those exercises), the forkserver skips warming
    up torch's compiler stack (optimizers) when no check of them needs it (:func:`needs_compiler_stack`).
    """
    if start_method() != "forkserver":
        return
    if exercise_id is not None and not needs_compiler_stack(exercise_id):
        os.environ[WARM_OPTIMIZERS_ENV] = "0"  # read by graders._preload in the forkserver
    _context()
    from multiprocessing import forkserver

    with _main_module_hidden():
        if _may_fork_the_forkserver():
            # Warm this process as the forkserver would warm itself, then fork it: both are warm for one import.
            # A grader that builds an optimizer in the judge (lr_range_test, for instance) otherwise paid torch's
            # compiler-stack import there, 0.9-1.0 s, inside a student's first check.
            preload = importlib.import_module("graders._preload")
            if os.environ.get(WARM_OPTIMIZERS_ENV) != "0":
                preload.warm_optimizers()  # done at its import, unless that import was cold (judge_server's helper)
            with _forkserver_started_by_fork():
                forkserver.ensure_running()
        else:
            forkserver.ensure_running()


def needs_compiler_stack(exercise_ids: str | Sequence[str]) -> bool:
    """Whether a check of these exercises uses what imports torch's compiler stack on first use (an optimizer,
    FakeTensorMode, gradcheck): then the runners' forkserver imports it first. An exercise the registry does not
    know may: it gets warm runners."""
    from graders.registry import REGISTRY, load_all_chapters

    load_all_chapters()
    wanted = [exercise_ids] if isinstance(exercise_ids, str) else list(exercise_ids)
    return any(e not in REGISTRY or REGISTRY[e].warm_compiler_stack for e in wanted)


def close_descriptors_except(keep: set[int]) -> None:
    """In a fork that becomes another program (the forkserver, make grade's judge): close every inherited file
    descriptor but ``keep``, so that the parent's pipes close when the parent ends; then forget what still
    writes to the closed ones.

    A closed descriptor's number is soon reused (by a runner's connection to the judge, above all), and the
    parent's Python objects outlive the fork: a logging handler of the parent's (pytest's log file, say) whose
    stream was one of them would write its records into that connection. Under TORCH_DISTRIBUTED_DEBUG=DETAIL
    every collective logs a DEBUG record, so a rank's log lines landed inside its reply and the judge waited
    forever for a message of 1.1 GB ("DEBU" read as a length). Those handlers are removed, and faulthandler
    (which pytest points at a descriptor of its own) is turned off.
    """
    for name in os.listdir("/dev/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):
                os.close(int(name))
    _forget_closed_descriptors()


def _forget_closed_descriptors() -> None:
    import faulthandler
    import logging

    def closed(stream: Any) -> bool:
        if stream is None:
            return False
        try:
            os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return not isinstance(stream, io.StringIO)  # an in-memory stream writes nowhere else
        return False

    loggers = [logging.getLogger()] + [x for x in logging.Logger.manager.loggerDict.values()
                                       if isinstance(x, logging.Logger)]
    for logger in loggers:
        for handler in [h for h in logger.handlers if closed(getattr(h, "stream", None))]:
            logger.removeHandler(handler)
    faulthandler.disable()
    for name, fd in (("stdout", 1), ("stderr", 2)):  # pytest's capture file, for one
        if closed(getattr(sys, name)):
            setattr(sys, name, open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False))


def fork_is_safe() -> bool:
    """Whether this process may be forked into a warm child (the forkserver, or ``make grade``'s judge): one thread,
    torch imported but no GPU, a Python whose multiprocessing layout :func:`warm_up` knows."""
    return _may_fork_the_forkserver()


def _may_fork_the_forkserver() -> bool:
    """Forking this process is safe: one thread, torch imported but no CUDA, multiprocessing's usual layout.

    A process that has touched CUDA cannot be forked (its children cannot use the GPU), so with a GPU the
    forkserver is always a fresh interpreter. The check of multiprocessing's private layout keeps this to
    the Python versions it was written for; any other gets the fresh interpreter too.
    """
    from multiprocessing import forkserver, util

    server = getattr(forkserver, "_forkserver", None)
    if (threading.active_count() != 1 or server is None or getattr(server, "_forkserver_pid", 0) is not None
            or not hasattr(util, "spawnv_passfds") or not hasattr(forkserver, "main")
            or sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13))):
        return False
    import torch

    from graders import registry

    registry.load_all_chapters()
    return not torch.cuda.is_available()


@contextlib.contextmanager
def _forkserver_started_by_fork():
    """While multiprocessing starts its forkserver, make it fork this process instead of running a new one.

    multiprocessing passes the server a listening socket and the read end of an "alive" pipe; the fork
    keeps exactly those (and stdin/stdout/stderr) open, as the new interpreter would, so that the judge's
    own pipes close when the judge ends, and runs the same ``forkserver.main``.
    """
    from multiprocessing import forkserver, util

    preload = list(forkserver._forkserver._preload_modules)

    def fork_instead(executable: str, args: list[str], passfds: Sequence[int]) -> int:
        if not any("multiprocessing.forkserver import main" in os.fsdecode(arg) for arg in args):
            return spawn(executable, args, passfds)  # the resource tracker, which the forkserver starts first
        listener_fd, alive_r = passfds
        pid = os.fork()
        if pid == 0:
            try:
                close_descriptors_except({0, 1, 2, listener_fd, alive_r})
                forkserver.main(listener_fd, alive_r, [m for m in preload if m != "__main__"])
            finally:
                os._exit(0)
        return pid

    spawn = util.spawnv_passfds
    util.spawnv_passfds = fork_instead
    try:
        yield
    finally:
        util.spawnv_passfds = spawn


_LIVE_RUNNERS: "weakref.WeakSet[Runner]" = weakref.WeakSet()


def _close_live_runners() -> None:
    """At the judge's exit, the runners nobody closed (a runner kept for a next request that never came, say).

    multiprocessing's own exit handler waits for every child to end, and a runner ends only once its judge has
    gone (its "alive" pipe): each waited for the other, for ever. Seen: 6 of 24 ``nbgrader autograde`` runs
    left their judge, forkserver and runner behind, about 700 MB each. A finalizer of priority 0 or more runs in
    that handler before it waits (an atexit function could be moved after it: multiprocessing's logger does so).
    """
    for runner in list(_LIVE_RUNNERS):
        with contextlib.suppress(Exception):
            runner.close(at_once=True)


multiprocessing.util.Finalize(None, _close_live_runners, exitpriority=10)


class Runner:
    """One process running the student's code for one check; the judge's handle on it."""

    def __init__(self, source: StudentSource, *, seed: int, device: str, limits: Limits,
                 env: dict[str, str] | None = None) -> None:
        self.source = source
        self.limits = limits
        self.seed = seed
        self.device = device
        self._dead: StudentCodeError | None = None
        self._ready = False
        self.notes: list[str] = []
        self.saw_not_written = False  # the student's code raised NotImplementedError (reset by the judge)
        self.lowered = False  # given the lowest priority, after a request that ran long (lower_priority)
        self.kept: dict[Any, Any] = {}  # runners kept for this one's later checks (graders.ranks): closed with it
        self._closed = False
        _LIVE_RUNNERS.add(self)
        self._offsets: dict[str, int] = {}
        # The runner's own folder: its working folder, TMPDIR and HOME, the only place it may write (graders.confine).
        self._scratch = tempfile.mkdtemp(prefix="course-scratch-")
        fd_out, self._stdout_path = tempfile.mkstemp(prefix="course-check-", suffix=".out")
        fd_err, self._stderr_path = tempfile.mkstemp(prefix="course-check-", suffix=".err")
        os.close(fd_out)
        os.close(fd_err)
        context = _context()
        self._conn, child_conn = context.Pipe(duplex=True)
        # Never written to: when the judge ends (or dies), the runner's end reads EOF and the runner ends
        # its whole process group, so no student code outlives the judge.
        alive_reader, self._alive = context.Pipe(duplex=False)
        setup = {
            "label": source.label, "names": source.names, "path": source.path, "payload": source.payload,
            "lines": source.lines, "seed": seed, "device": device, "memory_mb": limits.memory(),
            "instructor": limits.instructor, "stdout": self._stdout_path, "stderr": self._stderr_path,
            "env": dict(env or {}), "scratch": self._scratch, "confinement": self.confinement(),
        }
        self.process = context.Process(target=_runner_main, args=(child_conn, setup, alive_reader), name="course-runner")
        with _main_module_hidden(), _one_thread_under_spawn():
            self.process.start()
        child_conn.close()
        alive_reader.close()

    @property
    def loaded(self) -> bool:
        """True once the student's code was loaded without error."""
        return self._ready

    # -- talking to the runner --------------------------------------------------------------------
    def ready(self) -> None:
        """Wait until the student's code is loaded; raises :class:`StudentCodeError` when it could not be."""
        if self._ready:
            return
        if self._dead:
            raise self._dead
        # Starting a process (a fresh interpreter under spawn) is not the student's time; loading their code is.
        self._receive(START_TIMEOUT_S, waiting_for="starting the grading process", lower=False)
        self._receive(self.limits.timeout, waiting_for="loading your code")
        self._ready = True

    def request(self, message: tuple, *, timeout: float | None = None) -> Any:
        """Send one request; return the decoded observation, or raise what the runner reported."""
        self.send(message)
        return self.receive(timeout if timeout is not None else self.limits.timeout)

    def send(self, message: tuple) -> None:
        """Send one request without waiting for its reply (graders.ranks starts every rank at once)."""
        self.ready()
        if self._dead:
            raise self._dead
        try:
            self._conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, EOFError):
            self._died("before it could be given the next input")

    def receive(self, timeout: float | None) -> Any:
        """The reply to the last request sent; raises what the runner reported, or how it ended."""
        return self._receive(timeout, waiting_for=None)

    def waitables(self) -> list[Any]:
        """For multiprocessing.connection.wait: ready when a reply has come or the runner has ended."""
        return [self._conn, self.process.sentinel]

    def _receive(self, timeout: float | None, waiting_for: str | None, *, lower: bool = True) -> Any:
        """The next reply, within ``timeout``; a runner still working after LOWER_PRIORITY_AFTER_S is lowered
        (``lower``: not while it starts, which is the grader's own work)."""
        from graders import wire

        from graders.runclock import RunClock, starved_note

        watched = time.monotonic()
        clock = RunClock(self.process.pid)  # running time, not the wall clock: a busy machine fails no answer
        while True:
            if lower and not self.lowered and clock.cpu() > LOWER_PRIORITY_AFTER_S:
                self.lower_priority()
                clock.lowered()
            remaining = clock.remaining(timeout)
            if remaining is not None and remaining <= 0 and clock.expired(timeout):
                self.kill()
                what = f"while {waiting_for}" if waiting_for else ""
                self._dead = StudentCodeError(StudentError(
                    "timeout", f"did not finish within {timeout:g} s{starved_note(clock, timeout)} {what}".rstrip() +
                    " and was stopped (an endless loop, or far too much work?)"))
                raise self._dead
            try:
                if self._conn.poll(0.05 if remaining is None else min(0.05, max(remaining, 0.01))):
                    data = self._conn.recv_bytes()
                    break
            except (EOFError, OSError):
                self._died(waiting_for)
            if not self.process.is_alive() and not self._conn.poll(0):
                self._died(waiting_for)
            if time.monotonic() - watched >= SCRATCH_WATCH_S:
                self._watch_scratch()
                watched = time.monotonic()
        self._watch_scratch()
        try:
            kind, body, notes = wire.from_bytes(data)
        except Exception:  # noqa: BLE001 - the reply was forged or broken by the student's code
            self.kill()
            self._dead = StudentCodeError(StudentError(
                "crashed", "sent the grader a reply it cannot read (something in your code wrote into the "
                           "grading connection)"))
            raise self._dead from None
        for note in notes:
            if note == NOT_WRITTEN_NOTE:
                self.saw_not_written = True
            elif note.startswith(UNCONFINED_NOTE):
                global _unconfined_reason
                _unconfined_reason = note[len(UNCONFINED_NOTE):]
            elif note not in self.notes:
                self.notes.append(note)
        if kind in ("ok", "ready", "started"):
            return wire.decode(body)
        if kind == "student_error":
            raise StudentCodeError(StudentError(**body))
        if kind == "failed":
            raise CheckFailed(body)
        if kind == "grader_error":
            raise GraderBroke(body)
        raise GraderBroke(f"the runner sent an unknown reply {kind!r}")

    def _watch_scratch(self) -> None:
        """Stop the runner once its scratch holds more than SCRATCH_LIMIT_BYTES (files written there by it and by
        every process it started); the check fails with the limit named."""
        held = scratch_bytes(self._scratch, SCRATCH_LIMIT_BYTES)
        if held <= SCRATCH_LIMIT_BYTES:
            return
        self.kill()
        self._dead = StudentCodeError(StudentError(
            "limit", f"wrote more than {SCRATCH_LIMIT_BYTES >> 20} MiB into its scratch folder (the limit of what a "
                      "check's files may hold) and was stopped: write less, or delete what you no longer need"))
        raise self._dead

    def _died(self, waiting_for: str | None) -> None:
        self.process.join(2)
        code = self.process.exitcode
        during = f" while {waiting_for}" if waiting_for else ""
        if code is None:
            self.kill()
            summary = f"stopped answering{during}"
            kind = "crashed"
        elif code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
            kind = "crashed"
            if -code == signal.SIGKILL:
                summary = (f"was killed (SIGKILL){during}: usually the operating system ran out of memory, or "
                           "your code killed its own process")
            elif -code == signal.SIGSEGV:
                summary = f"crashed with a segmentation fault (SIGSEGV){during}"
            else:
                summary = f"was ended by {name}{during}"
        else:
            kind = "exited"
            summary = (f"ended its process with exit status {code}{during}, before returning a result "
                       "(os._exit() or a library that exits?); a function must return, not exit")
        self._dead = StudentCodeError(StudentError(kind, summary))
        raise self._dead

    def lower_priority(self) -> None:
        """This runner (and what it started) runs on spare CPU only from now on (see :func:`lower_priority`);
        asked once, done where the system can."""
        self.lowered = True
        if self.process.pid is not None:
            lower_priority(self.process.pid)  # the runner leads its own process group (_runner_main)

    # -- ending it ----------------------------------------------------------------------------------
    def kill(self) -> None:
        try:
            pid = self.process.pid
        except ValueError:  # closed: it was killed and waited for already
            return
        if pid is None:
            return
        _end_descendants(pid)  # those that left its group too (setsid), before the runner's own end orphans them
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if hasattr(os, "killpg"):
                os.killpg(pid, signal.SIGKILL)  # the runner leads its own group: its workers go too
        with contextlib.suppress(Exception):
            self.process.kill()

    @property
    def alive(self) -> bool:
        """Loaded and still usable for another check (not timed out, crashed or exited)."""
        return self._ready and self._dead is None and self.process.is_alive()

    def reload(self, seed: int, source: StudentSource | None = None) -> None:
        """Serve another request for the same answer: torch's state reset and seeded, and the answer loaded afresh
        (as a new runner loads it) in this process. Raises StudentCodeError when it cannot be (then close it).

        ``source``: the same answer as sent now, whose notebook cells (``lines``, for tracebacks) may be more than
        when this runner started: a kernel's later cells add theirs."""
        if source is not None:
            self.source = source
        self.send(("reload", seed, self.source.lines))
        self._receive(self.limits.timeout, waiting_for="loading your code")

    def reset(self, seed: int) -> None:
        """Prepare a used runner for the next check: torch's global state back to its defaults, seeds set."""
        self.request(("reset", seed), timeout=max(self.limits.timeout or 0, 10.0))

    def take_notes(self) -> list[str]:
        """The notes since the last call: warnings the runner reported, and what was printed meanwhile."""
        for path, what in ((self._stdout_path, "printed"), (self._stderr_path, "wrote to stderr")):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(40 * NOTE_CHARS)
                    self._offsets[path] = offset + len(data) + len(f.read())
            except OSError:
                continue
            shown = [line for line in data.decode(errors="replace").strip().splitlines() if line.strip()]
            if shown:
                first = shown[0][:NOTE_CHARS]
                more = f" (and {len(shown) - 1} more lines)" if len(shown) > 1 else ""
                self.notes.append(f"your code {what}: {first}{more}")
        notes, self.notes = self.notes, []
        return notes

    def close(self, *, at_once: bool = False) -> list[str]:
        """Stop the runner and whatever it started; return the notes not yet taken (printed output, warnings).

        It is given half a second to end on its own (what the student's code started is cleaned up as a program
        ending does), or, ``at_once``, killed: a rank whose run is over has nothing left to say.
        """
        if self._closed:  # kept ranks are closed by their owner and, at exit, maybe by themselves first
            return []
        self._closed = True
        _LIVE_RUNNERS.discard(self)
        with contextlib.suppress(Exception):
            self._conn.close()
        with contextlib.suppress(Exception):
            self._alive.close()  # the runner ends now even if closing what it kept fails
        try:
            for kept in self.kept.values():
                kept.close()
        finally:
            self.kept.clear()
        if not at_once:
            self.process.join(0.5)
        self.kill()
        self.process.join(5)
        with contextlib.suppress(Exception):
            self.process.close()
        notes = self.take_notes()
        for path in (self._stdout_path, self._stderr_path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        import shutil

        shutil.rmtree(self._scratch, ignore_errors=True)
        return notes

    def confinement(self) -> dict[str, Any]:
        """What the runner's process may touch besides its scratch (graders.confine.Rules; a rank widens it)."""
        # the judge's exchange folders, where an exercise's checks made them (Exercise.writes_files) before it started:
        # without links or special files, since the judge reads back what the student's code left there (a symbolic
        # link would lead that read to any file the judge may read, the reference answers included)
        return {"write": [], "write_plain": [f for f in _EXCHANGE.values() if os.path.isdir(f)], "tcp": False}


# ==================================================================================================
# Inside the runner
# ==================================================================================================
class StudentRaised(Exception):
    """Inside the runner: the student's code did not finish; carries the facts for the judge."""

    def __init__(self, error: StudentError) -> None:
        super().__init__(error.summary)
        self.error = error


class RunnerStudent:
    """What a scenario (grader code running inside the runner) uses to reach the student's names."""

    def __init__(self, namespace: dict[str, Any], files: set[str], label: str) -> None:
        self.namespace = namespace
        self.files = files
        self.label = label
        self.notes: list[str] = []

    def has(self, name: str) -> bool:
        return name in self.namespace

    def get(self, name: str) -> Any:
        if name not in self.namespace:
            raise StudentRaised(StudentError("missing", f"define `{name}`: the exercise expects a name `{name}`"))
        return self.namespace[name]

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.run(self.get(name), *args, **kwargs)

    def run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run any student callable (a function, a class, a method); what it raises becomes StudentRaised."""
        label = getattr(function, "__qualname__", None) or type(function).__qualname__
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return function(*args, **kwargs)
            except StudentRaised:
                raise
            except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt and SystemExit are the student's too
                if isinstance(exc, NotImplementedError) and NOT_WRITTEN_NOTE not in self.notes:
                    self.notes.append(NOT_WRITTEN_NOTE)  # a check may turn this into a failure of its own
                raise StudentRaised(describe_exception(exc, self.files, self.label)) from None
            finally:
                for w in caught:
                    note = f"`{label}` warned: {w.category.__name__}: {str(w.message)[:NOTE_CHARS]}"
                    if note not in self.notes:
                        self.notes.append(note)


def _is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "DefaultCPUAllocator" in text)


def _limit_reached(exc: BaseException) -> str | None:
    """Which of the grading process's limits (graders.confine) the exception says was reached, and how much it
    is; None when it says none. Only errors that name the limit themselves: too many open files (EMFILE), a file
    too large (EFBIG), no new process or thread (EAGAIN from fork, "can't start new thread") under a process limit."""
    files, size = (os.environ.get(FILE_LIMITS_ENV) or ",").split(",")
    processes = os.environ.get(PROCESS_LIMIT_ENV)
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE and files:
        return f"the limit of {files} open files a check may hold was reached: close the files you open"
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG and size:
        return f"the limit of {int(size) >> 20} MiB per file was reached"
    # EAGAIN is also a non-blocking socket's "not yet": the limit is named only when a fork is refused right now.
    if processes and ((isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN)
                      or (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc))) and _fork_refused():
        return (f"no new process or thread could start: a check may add at most {processes} processes and threads "
                "(an endless loop of fork, Process or Thread?)")
    return None


def _fork_refused() -> bool:
    """Whether this process may not start another one now (the process limit reached)."""
    try:
        pid = os.fork()
    except BlockingIOError:
        return True
    except OSError:
        return False
    if pid == 0:
        os._exit(0)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
    return False


def describe_exception(exc: BaseException, files: set[str], label: str) -> StudentError:
    """The facts of a student exception: type, message, the student's own line."""
    cls = type(exc)
    types_ = tuple(f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__)
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001
        message = "<the exception's message could not be read>"
    message = message[: 4 * NOTE_CHARS]
    where = _student_line(exc.__traceback__, files, label)
    text = f"{cls.__name__}: {message}".rstrip(": ") if message else cls.__name__
    kind, summary = "raised", f"raised {text}"
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] == "solutions":
        return _FORBIDDEN
    if _is_memory_error(exc):
        limit = os.environ.get("_COURSE_MEMORY_LIMIT_MB")
        kind = "memory"
        summary = (f"ran out of memory ({text}); the grading process allows your code "
                   f"{limit} MiB more than it starts with" if limit else f"ran out of memory ({text})")
    elif (limit := _limit_reached(exc)) is not None:
        summary = f"{summary} ({limit})"
    elif isinstance(exc, SystemExit):
        summary = f"called sys.exit({exc.code!r}) (or raised SystemExit); a function must return, not exit"
    elif isinstance(exc, KeyboardInterrupt):
        summary = "raised KeyboardInterrupt (an interrupt is not an answer)"
    return StudentError(kind, summary, cls.__name__, types_, message, where)


def _student_line(tb: types.TracebackType | None, files: set[str], label: str) -> str | None:
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if f.filename in files]
    if not own:
        own = [f for f in frames if not f.filename.startswith(_GRADERS_DIR) and "site-packages" not in f.filename
               and not f.filename.startswith((sys.base_prefix, sys.prefix)) and not f.filename.startswith("<frozen")]
    if not own:
        return None
    frame = own[-1]
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    if _NOTEBOOK_FILE.search(frame.filename):
        where = "your notebook cell"
    elif frame.filename in files:
        where = Path(frame.filename).name
    else:
        where = frame.filename
    return f"{where}, line {frame.lineno}, in {frame.name}: {line}"


class _NoReferenceAnswers:
    """An import hook: the course's reference answers cannot be imported by code under grading."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "solutions" or name.startswith("solutions."):
            raise ImportError("answers must be your own code: the course's reference solutions cannot be "
                              "imported while your answer is graded", name=name)
        return None


def _no_reading_reference_answers(event: str, args: tuple) -> None:
    """An audit hook: the reference answers' files cannot even be opened (to exec a copy of their text)."""
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        try:
            path = os.path.realpath(os.fsdecode(args[0]))
        except (TypeError, ValueError):
            return
        if path == _SOLUTIONS_DIR or path.startswith(_SOLUTIONS_DIR + os.sep):
            raise PermissionError("answers must be your own code: the course's reference solutions cannot be "
                                  "read while your answer is graded")
        # The chapters' graders hold the judge's expected-value code: loaded before this hook, never again.
        inside = os.path.relpath(path, _GRADERS_DIR).split(os.sep) if path.startswith(_GRADERS_DIR + os.sep) else []
        if len(inside) > 1 and _CHAPTER_GRADER.match(inside[0]):
            raise PermissionError("answers must be your own code: the graders' files cannot be read while your "
                                  "answer is graded")


_JUDGE_CODE_CALLED: list[str] = []


def _withheld(name: str) -> Any:
    def withheld(*args: Any, **kwargs: Any) -> Any:
        _JUDGE_CODE_CALLED.append(name)
        raise StudentRaised(StudentError(
            "forbidden", f"answers must be your own code: your answer calls the grader's own `{name}`, which "
                         "computes the expected values and is not available while your answer is graded"))

    return withheld


def _withhold_judge_code() -> None:
    """Replace every grader function marked ``judge_only`` (graders.registry) in this process: the student's
    code runs here, the expected values are computed in the judge."""
    for module, attribute in judge_only_functions():
        setattr(module, attribute, _withheld(attribute))


@functools.lru_cache(maxsize=None)
def judge_only_functions() -> tuple[tuple[types.ModuleType, str], ...]:
    """Where each ``judge_only`` grader function is bound: (module, attribute). Found once in the forkserver
    (graders._preload), so each runner forked from it only replaces them: the search visits every module of the
    graders, about 7 ms of CPU in a runner, and make grade starts some 18 runners and ranks per chapter-08
    submission."""
    from graders import registry

    registry.load_all_chapters()
    return tuple((module, attribute) for module_name, module in list(sys.modules.items())
                 if module_name.startswith("graders.ch") and module is not None
                 for attribute, value in list(vars(module).items())
                 if getattr(value, "__course_judge_only__", False))


def _reference_used(namespace: dict[str, Any]) -> StudentError | None:
    """An answer that came from the reference package however it was loaded (a copy of its file too), or that
    called a grader's expected-value code (even if it caught the error that call raised)."""
    if _JUDGE_CODE_CALLED:
        return StudentError("forbidden", f"answers must be your own code: your answer calls the grader's own "
                                         f"`{_JUDGE_CODE_CALLED[0]}`, which computes the expected values and is not "
                                         "available while your answer is graded")
    if any(m == "solutions" or m.startswith("solutions.") for m in list(sys.modules)):
        return _FORBIDDEN
    for value in list(namespace.values()):
        for item in [value, *vars(value).values()] if isinstance(value, type) else [value]:
            code = getattr(getattr(item, "__func__", item), "__code__", None)
            if code is not None and code.co_filename.startswith(_SOLUTIONS_DIR):
                return _FORBIDDEN
    return None


_FORBIDDEN = StudentError("forbidden", "answers must be your own code: your answer uses the course's reference "
                                       "solutions (the `solutions` package), which is not allowed while grading")


def _limit_memory(megabytes: int, device: str) -> None:
    """Cap the address space at what the runner has now plus ``megabytes`` (Linux, CPU grading only:
    CUDA reserves far more virtual memory than it uses, so an address-space cap would break it)."""
    if not megabytes or not sys.platform.startswith("linux") or not device.startswith("cpu"):
        return
    import resource

    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    now = pages * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = now + megabytes * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    os.environ["_COURSE_MEMORY_LIMIT_MB"] = str(megabytes)


def _redirect(fd: int, path: str) -> None:
    target = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(target, fd)
    os.close(target)


def _send(conn: Any, kind: str, body: Any, notes: list[str]) -> None:
    from graders import wire

    try:
        data = wire.to_bytes((kind, body, list(notes)))
    except Exception as exc:  # noqa: BLE001 - a value torch.save cannot write (a tensor viewing another's memory as another dtype)
        data = wire.to_bytes(("failed", "the value your code returned could not be sent back to the grader "
                                        f"({type(exc).__name__}: {str(exc)[:NOTE_CHARS]}); return plain tensors, "
                                        "numbers and containers of them", list(notes)))
    conn.send_bytes(data)
    notes.clear()


def _load(setup: dict) -> tuple[dict[str, Any], set[str]]:
    """Import the student's file, or unpickle the notebook's names (both can run student code)."""
    if setup["path"]:
        path = setup["path"]
        try:
            source = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StudentRaised(StudentError("missing", f"cannot read {Path(path).name}: {exc}")) from None
        try:
            code = compile(source, path, "exec")
        except SyntaxError as exc:
            caret = " " * max((exc.offset or 1) - 1, 0) + "^"
            text = (exc.text or "").rstrip("\n")
            raise StudentRaised(StudentError(
                "syntax", f"{Path(path).name} has a syntax error on line {exc.lineno}: {exc.msg}\n    {text}\n    {caret}",
                "SyntaxError", ("builtins.SyntaxError",), str(exc.msg))) from None
        name = f"student_submission_{zlib.crc32(path.encode()):08x}"
        module = types.ModuleType(name)
        module.__file__ = path
        sys.modules[name] = module  # classes defined there stay picklable for DataLoader workers
        files = {path}
        linecache.checkcache(path)
        student = RunnerStudent(module.__dict__, files, setup["label"])
        student.run(exec, code, module.__dict__)
        return module.__dict__, files
    for filename, lines in setup["lines"].items():
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    import cloudpickle

    student = RunnerStudent({}, set(setup["lines"]), setup["label"])
    namespace = student.run(cloudpickle.loads, setup["payload"])
    _notebook_classes_findable(namespace)
    return namespace, set(setup["lines"])


def _notebook_classes_findable(namespace: dict[str, Any]) -> None:
    """Put the classes a notebook defined (``__module__ == "__main__"``) where pickle looks for them by name.

    cloudpickle rebuilds them here by value, but an instance that comes back from a DataLoader worker is
    pickled by reference, ``__main__.<name>``: without this, a correct answer returning a namedtuple defined
    in the notebook failed in its workers while it passed from a file. The answers' own classes and those
    their functions use (a function's globals, as cloudpickle rebuilt them) are registered; nothing the
    runner's ``__main__`` already defines is replaced.
    """
    main = sys.modules.get("__main__")
    if main is None:
        return
    seen: list[Any] = list(namespace.values())
    for value in list(seen):
        if isinstance(value, types.FunctionType):
            seen.extend(value.__globals__.values())
    for value in seen:
        if (isinstance(value, type) and value.__module__ == "__main__" and "." not in value.__qualname__
                and not hasattr(main, value.__qualname__)):
            setattr(main, value.__qualname__, value)


def _resolve(module_name: str, qualname: str) -> Any:
    if not module_name.startswith("graders."):
        raise GraderBroke(f"scenarios must live in the graders package, not {module_name}")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _end_with_the_judge(alive: Any) -> None:
    """A watchdog thread: when the judge's end of ``alive`` closes, end this runner and all it started."""

    def watch() -> None:
        try:
            alive.recv_bytes()
        except BaseException:  # noqa: BLE001 - EOF: the judge is gone or done
            pass
        end_every_child()
        _remove_scratch(None)  # a judge killed outright cannot remove it any more
        if hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="course-watchdog", daemon=True).start()


_SCRATCH: list[str] = []  # inside a runner: its scratch folder


def _remove_scratch(setup: dict | None) -> None:
    import shutil

    for folder in [setup["scratch"]] if setup and setup.get("scratch") else list(_SCRATCH):
        shutil.rmtree(folder, ignore_errors=True)


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Linux: every process this one's descendants orphan (a double fork, a daemon's ``setsid``) becomes its child
    instead of init's, so that it can still be found and ended with its check (``end_every_child``)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _children_of_self() -> list[int]:
    from graders.runclock import children

    return children("self")  # its own /proc, which a confined runner may read


def end_every_child(rounds: int = 50) -> None:
    """Inside a subreaper runner: SIGKILL its children until none is left. A killed child's own children are
    orphaned and become this process's children, so the next round ends them (its own /proc is all a confined
    runner may read, and it is enough)."""
    for _ in range(rounds):
        children = _children_of_self()
        if not children:
            return
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def scratch_bytes(folder: str, stop_above: int | None = None) -> int:
    """The bytes the files under ``folder`` take on disk (allocated blocks: a sparse file counts what it holds),
    symlinks not followed; the walk ends early once ``stop_above`` is passed."""
    total, stack = 0, [folder]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                if stop_above is not None and total > stop_above:
                    return total
    return total


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux, read from /proc by the judge; elsewhere none)."""
    if not os.path.isdir("/proc"):
        return []
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _has_children(pid: int) -> bool:
    from graders.runclock import children

    return bool(children(pid))


def _end_descendants(pid: int, rounds: int = 20) -> None:
    """From the judge: stop every descendant of the runner ``pid`` (which, a subreaper, holds the orphans of its
    tree), then kill them, until none is left; a fork storm is frozen before it is killed. A runner without
    children has no descendants: then /proc is not walked (a few milliseconds on a busy machine)."""
    for _ in range(rounds):
        found = descendants(pid) if _has_children(pid) else []
        if not found:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for child in found:
                with contextlib.suppress(OSError):
                    os.kill(child, sig)


def _runner_main(conn: Any, setup: dict, alive: Any = None) -> None:
    try:
        _serve_checks(conn, setup, alive)
    finally:  # however it ends, nothing the student's code started outlives it (double forks included)
        end_every_child()
        _remove_scratch(setup)


def _join_network(setup: dict) -> None:
    """A CPU rank: into the judge's network namespace (graders.confine.join_network), where TCP reaches only the
    other ranks. First of all, while the runner is one thread (the kernel lets no other join a user namespace);
    where it cannot, ``setup["network_refused"]`` says why (the runner's notes say it once it is confined)."""
    extra = setup["confinement"]
    if "network" not in extra or os.environ.get(CONFINE_ENV) == "0":
        return
    try:
        if extra["network"] is None:
            raise OSError(extra["network_reason"])
        from graders import confine

        confine.join_network(extra["network"])
    except OSError as exc:
        if os.environ.get(REQUIRE_CONFINEMENT_ENV) == "1":
            raise OSError(f"confinement required but the ranks' network namespace is unavailable: {exc}") from None
        setup["network_refused"] = str(exc)


def _serve_checks(conn: Any, setup: dict, alive: Any = None) -> None:
    from graders import wire

    _join_network(setup)
    if hasattr(os, "setsid"):
        # A session of its own, and so a process group of its own: the judge kills this whole group, every process
        # the student's code starts; and Linux shares CPU between sessions first (autogroups), so only a runner
        # that leads its session can be given a lower priority than the others (lower_priority).
        try:
            os.setsid()
        except OSError:  # already a group's leader (never seen): a group of its own is what the kill needs
            os.setpgrp()
    elif hasattr(os, "setpgrp"):
        os.setpgrp()
    become_subreaper()
    if alive is not None:
        _end_with_the_judge(alive)
    _redirect(1, setup["stdout"])
    _redirect(2, setup["stderr"])
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    os.environ.update(setup["env"])
    warnings.simplefilter("ignore")  # the grader's own operations stay quiet; student calls record theirs
    import numpy as np
    import random
    import torch

    torch.set_num_threads(1)  # tiny tensors: a thread pool costs more than it saves (10-1000x on 2 cores)
    seed = setup["seed"]
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if not setup["instructor"]:
        for name in [m for m in sys.modules if m == "solutions" or m.startswith("solutions.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _NoReferenceAnswers())
        _withhold_judge_code()
        sys.addaudithook(_no_reading_reference_answers)  # a hook that code under grading cannot remove
    from graders import watch

    watch.install_file_event_recorder()  # before the student's code loads, so an imported os.fsync is seen too
    notes: list[str] = []
    _limit_memory(setup["memory_mb"], setup["device"])
    _warm_up_device(setup["device"])
    _confine(setup, notes)
    _send(conn, "started", wire.encode(None), notes)
    try:
        namespace, student = _load_checked(setup)
    except StudentRaised as exc:
        _send(conn, "student_error", dataclasses.asdict(exc.error), notes)
        return
    _send(conn, "ready", wire.encode(None), notes)
    device = setup["device"]
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if message[0] == "reload":  # a kept rank's next run (graders.ranks): the answer loaded afresh, as a new
            _reset_global_state(message[1])  # runner loads it, so no state of the student's outlives a check
            setup["lines"] = message[2]  # the notebook's cells as the judge knows them now
            if len(message) > 3:  # a kept rank's environment for its next run (RANK, WORLD_SIZE, ...)
                os.environ.update(message[3])
            try:
                namespace, student = _load_checked(setup)
            except StudentRaised as exc:
                _send(conn, "student_error", dataclasses.asdict(exc.error), notes)
                return
            _send(conn, "ready", wire.encode(None), student.notes)
            continue
        try:
            reply = _serve(student, message, device)
            if not setup["instructor"] and (forbidden := _reference_used(namespace)):
                raise StudentRaised(forbidden)
            _send(conn, "ok", wire.encode(reply), student.notes)
        except StudentRaised as exc:
            _send(conn, "student_error", dataclasses.asdict(exc.error), student.notes)
        except CheckFailed as exc:
            _send(conn, "failed", str(exc), student.notes)
        except BaseException:  # noqa: BLE001 - a broken scenario is the grader's bug, reported as such
            _send(conn, "grader_error", traceback.format_exc(limit=-6), student.notes)


_unconfined_reason: str | None = None
_EXCHANGE: dict[str, str] = {}  # "disk" / "memory" -> this judge's exchange folder


def exchange_folder(*, memory: bool = False) -> str:
    """A folder of this judge's that every runner it starts may write (they may write nowhere else but their own
    scratch): where a check lays out files for the student's code (a checkpoint to save, a directory to rotate)
    and reads back what it wrote, or hands it to another runner. ``memory``: in /dev/shm where there is one
    (dozens of fsyncs per check). Made once per judge process, removed when that process exits."""
    kind = "memory" if memory and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else "disk"
    folder = _EXCHANGE.get(kind)
    if folder is None or not os.path.isdir(folder):
        import atexit
        import shutil

        folder = tempfile.mkdtemp(prefix="course-exchange-", dir="/dev/shm" if kind == "memory" else None)
        _EXCHANGE[kind] = folder
        owner = os.getpid()  # a forked copy of this judge must not remove its parent's folder when it exits
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))
    return folder


def unconfined_reason() -> str | None:
    """Why a runner of this process ran student code unconfined (None: every runner so far was confined)."""
    return _unconfined_reason


CONFINE_ENV = "COURSE_CONFINE"  # "0": run student code unconfined (a machine where confinement breaks something)
REQUIRE_CONFINEMENT_ENV = "COURSE_REQUIRE_CONFINEMENT"  # "1": refuse to run it unconfined
UNCONFINED_NOTE = "\x00unconfined: "  # a flag with the reason: the judge says it once, plainly


def course_hidden() -> list[str]:
    """What no student process may read: the reference answers, the chapters' checks, the tests (their fixtures
    hold correct answers)."""
    root = Path(_GRADERS_DIR).parent
    hidden = [_SOLUTIONS_DIR, str(root / "tests"), str(root / "benchmarks")]
    hidden += [str(p) for p in Path(_GRADERS_DIR).iterdir() if p.is_dir() and _CHAPTER_GRADER.match(p.name)]
    return hidden


def confinement_rules(setup: dict) -> Any:
    """The runner's rules: read the Python environment, the course's code the runner needs (not ``solutions/``,
    the chapters' checks or the tests), its import path and its own answer; write only its scratch (and
    /dev/shm, where torch and multiprocessing share memory between a DataLoader's workers)."""
    from graders import confine

    reads = [*_static_reads(bool(setup["instructor"])), f"/proc/{os.getpid()}"]
    here = []
    answer = os.path.realpath(setup["path"]) if setup["path"] else None
    if answer and (setup["instructor"] or not answer.startswith(_SOLUTIONS_DIR + os.sep)):
        # (a reference file handed in as an answer is refused by the runner's own rule, which says why)
        reads.append(answer)
        here.append(os.path.dirname(answer))  # modules next to the answer
    hidden = [] if setup["instructor"] else course_hidden()
    reads += confine.reads_except(here, hidden)
    extra = setup["confinement"]
    # /dev/shm (shared memory, semaphores, an exchange folder in memory) holds regular files only, as an exchange
    # folder does; the scratch may hold sockets (multiprocessing's, a DataLoader's workers)
    return confine.Rules(read=tuple(reads), write=(setup["scratch"], *extra["write"]),
                         write_plain=("/dev/shm", *extra.get("write_plain", ())),
                         devices=_static_devices(), tcp=extra["tcp"], processes=process_limit())


PROCESS_ALLOWANCE = 512  # processes and threads a runner may add (a DataLoader's workers and their threads: ~50)
PROCESS_LIMIT_ENV = "_COURSE_PROCESS_LIMIT"  # the allowance, where the kernel enforces it (not for root)
FILE_LIMITS_ENV = "_COURSE_FILE_LIMITS"  # "open files,bytes per file", for the messages of _limit_reached


def process_limit() -> int | None:
    """RLIMIT_NPROC for a runner: every task on the machine now (an upper bound of this user's, which is what the
    kernel counts; one read of /proc/loadavg, where a walk of /proc costs milliseconds) plus PROCESS_ALLOWANCE.
    A fork storm stops there, with an error the student's code sees (``BlockingIOError``). None off Linux."""
    try:
        with open("/proc/loadavg") as f:
            total = int(f.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return None
    return total + PROCESS_ALLOWANCE


@functools.lru_cache(maxsize=2)
def _static_reads(instructor: bool) -> tuple[str, ...]:
    """What every runner of this process may read, whatever its answer: found once (in the forkserver, or the first
    runner started by spawn), then each runner adds its own answer and /proc entry (about 3 ms a runner saved)."""
    from graders import confine

    hidden = [] if instructor else course_hidden()
    root = str(Path(_GRADERS_DIR).parent)
    here = [p for p in sys.path if p and os.path.isdir(p)]
    # /proc/<pid> of the process that found them is not the runner's: each runner adds its own
    system = [p for p in confine.system_reads() if not re.match(r"/proc/\d+(/|$)", p)]
    return tuple(system + confine.reads_except([root, *here], hidden))


@functools.lru_cache(maxsize=1)
def _static_devices() -> tuple[str, ...]:
    from graders import confine

    return tuple(confine.default_devices())


def _confine(setup: dict, notes: list[str]) -> None:
    """Everything the runner needs is imported; from here the operating system confines it (graders.confine)."""
    scratch = setup["scratch"]
    _SCRATCH.append(scratch)
    os.chdir(scratch)
    for name in ("TMPDIR", "HOME"):
        os.environ[name] = scratch
    tempfile.tempdir = None
    # multiprocessing keeps the folder it made for its sockets (a DataLoader's workers pass shared tensors through
    # one) in the process's config, which a runner inherits from the forkserver: in /tmp, beyond the scratch.
    multiprocessing.current_process()._config.pop("tempdir", None)
    if os.environ.get(CONFINE_ENV) == "0":
        notes.append(UNCONFINED_NOTE + f"{CONFINE_ENV}=0 was set")
        return
    from graders import confine, registry

    registry.load_all_chapters()  # a runner started by spawn: every check's scenarios, before they become unreadable
    rules = confinement_rules(setup)
    os.environ[FILE_LIMITS_ENV] = f"{rules.open_files},{rules.file_bytes}"
    if setup.get("network_refused"):
        notes.append(f"{UNCONFINED_NOTE}its ranks could reach this machine's network over TCP "
                     f"({setup['network_refused']})")
    applied = confine.apply(rules, required=os.environ.get(REQUIRE_CONFINEMENT_ENV) == "1")
    if rules.processes is not None and any(e.startswith("at most") and "processes" in e for e in applied.enforced):
        os.environ[PROCESS_LIMIT_ENV] = str(PROCESS_ALLOWANCE)  # held to it (not root: confine.apply)
    if not applied.abi:
        notes.append(UNCONFINED_NOTE + applied.reason)


def _load_checked(setup: dict) -> tuple[dict[str, Any], RunnerStudent]:
    """The student's code loaded, with the exercise's names defined and no reference answer used."""
    namespace, files = _load(setup)
    missing = [n for n in setup["names"] if n not in namespace]
    if missing:
        raise StudentRaised(StudentError(
            "missing", "define " + " and ".join(f"`{n}`" for n in missing) +
            (": the exercise expects " + ("these names" if len(missing) > 1 else "this name") +
             f", and {setup['label']} has no such name")))
    if not setup["instructor"] and (forbidden := _reference_used(namespace)):
        raise StudentRaised(forbidden)
    return namespace, RunnerStudent(namespace, files, setup["label"])


def _warm_up_device(device: str) -> None:
    """Pay a GPU's one-time costs while the runner is starting, which is not the student's time.

    A runner is a new process: its first CUDA operation creates a context, its first matrix product a cuBLAS
    handle, its first backward autograd's device thread, its first optimizer step the step's kernels. On an
    H100 with 14 test workers sharing the GPU these took more than a check's 2 s limit, so correct answers
    were stopped as "did not finish". Nothing random is drawn, so the seeds set above still hold.
    """
    if not str(device).startswith("cuda"):
        return
    import torch

    weight = torch.ones(8, 8, device=device, requires_grad=True)
    (weight @ weight).sum().backward()
    for optimizer in (torch.optim.SGD([weight], lr=0.1, momentum=0.9), torch.optim.Adam([weight])):
        optimizer.step()
    torch.cuda.synchronize(device)
    del weight, optimizer


def _reset_global_state(seed: int) -> None:
    """Between two checks in one runner: what a previous check's student code may have changed globally."""
    import random

    import numpy as np
    import torch

    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    torch.set_num_threads(1)
    if torch.are_deterministic_algorithms_enabled():  # the call imports torch's compiler stack (about 0.9 s)
        torch.use_deterministic_algorithms(False)
    torch.autograd.set_detect_anomaly(False)
    with contextlib.suppress(Exception):
        torch.set_default_device(None)
    warnings.resetwarnings()
    warnings.simplefilter("ignore")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _serve(student: RunnerStudent, message: tuple, device: str) -> Any:
    kind = message[0]
    if kind == "reset":
        _reset_global_state(message[1])
        return None
    if kind == "call":
        _, name, args, kwargs, with_inputs = message
        result = student.call(name, *args, **kwargs)
        return (result, args, kwargs) if with_inputs else result
    if kind == "scenario":
        _, module_name, qualname, args, kwargs = message
        return _resolve(module_name, qualname)(student, *args, **kwargs)
    raise GraderBroke(f"unknown request {kind!r}")
