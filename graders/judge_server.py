"""A clean judge for notebooks: the check cells' verdicts are made outside the student's kernel.

In a notebook the student's code and the check cells share one kernel, so a student cell could patch
``torch.equal`` or the graders the judge uses there. :func:`graders.check` therefore sends the answer
(the exercise's names, pickled by value in the kernel and never unpickled by the judge) to a judge
process started once per kernel with a fresh interpreter: ``python -m graders.judge_server``. It runs the
checks exactly as the command line does (each in its own runner) and sends back the report as JSON.

The protocol is one request and one reply at a time over the server's stdin and stdout, each a 8-byte
big-endian length and a JSON body (the answer's pickled bytes travel base64-encoded, and the server never
unpickles anything a kernel sends). The server keeps its real stdout for the protocol and sends anything
else written to fd 1 or 2 to a log file, so nothing reaches the cell's stderr (which nbgrader would score 0).

``make grade`` runs one *shared* judge per worker instead (``python -m graders.judge_server --listen PATH``):
the worker's kernels, one after another, find it through ``$COURSE_JUDGE_SOCKET`` and speak the same protocol
over a Unix socket, so a submission no longer pays a judge's start (about 3.6 s of CPU). Its verdicts are
the kernel's, as before; the grade of record is made apart from it (:mod:`coursekit.record`). A kernel
cannot claim the instructor's rights there unless the server itself runs as the instructor.

Nothing stays in the temporary folder: at the kernel's exit the server is asked to stop (its stdin closes) and
ends as any Python program does, so multiprocessing removes its ``pymp-*`` folder; the server removes its log
then, also when the kernel was killed and could not ask. (Each kernel used to leave both behind in /tmp.)
The kernel does not wait for that: a judge takes about 0.7 s to end, which every autograded submission paid.
The server leads a process group of its own: at shutdown ipykernel terminates every child in the kernel's
group, which killed the judge before it could clean up (a ``pymp-*`` folder left by every Jupyter kernel) and
made each shutdown wait 2.6 s for it.

The server is a second torch import (2-3 s on a laptop). nbgrader's autograde starts a shared one before the
kernel, told which exercises the test cells check, and the kernel connects to it as it starts
(:meth:`JudgeClient.start`, see :mod:`coursekit.autograde`): that import runs beside the kernel's start and the
opening cell instead of after them; where only a later exercise needs torch's compiler stack, a cold helper
answers the first ones meanwhile (:func:`_start_cold_helper`). A kernel interrupted while the shared judge runs
its request (a cell timeout) sends its later requests to a judge of its own rather than queue behind that
request.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import base64
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any, BinaryIO

from graders.outcomes import GRADER_ERROR, CheckResult, Report, StudentError

SOCKET_ENV = "COURSE_JUDGE_SOCKET"
KERNEL_CONNECTED = "shared judge: a kernel connected"
COLD_HELPER_STARTED = "shared judge: its first exercises served by a cold helper, pid"
SHARED_IO_TIMEOUT_S = 10.0  # reading one request or writing one reply; a request is written all at once
SHARED_REQUEST_LIMIT = 1 << 30  # bytes: an answer's names, pickled; a larger header is not a request

_HEADER = struct.Struct(">Q")


def _write(stream: BinaryIO, body: bytes) -> None:
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _read(stream: BinaryIO, limit: int | None = None) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    if limit is not None and size > limit:
        return None
    body = stream.read(size)
    return body if len(body) == size else None


def request_to_json(request: dict[str, Any]) -> bytes:
    """The kernel's request as JSON: the answer (:class:`~graders.isolation.StudentSource`) with its pickled
    names in base64, a load error as its fields."""
    data = dict(request)
    source, error = data.pop("source"), data.pop("load_error")
    if source is not None:
        fields = dataclasses.asdict(source)
        fields["payload"] = None if source.payload is None else base64.b64encode(source.payload).decode("ascii")
        data["source"] = fields
    if error is not None:
        data["load_error"] = dataclasses.asdict(error)
    return json.dumps(data).encode()


def request_from_json(body: bytes) -> dict[str, Any]:
    """Read a request without running anything the kernel sent (no unpickling here: the runner does that)."""
    from graders.isolation import StudentSource

    data = json.loads(body)
    source, error = data.get("source"), data.get("load_error")
    if source is not None:
        payload = source.get("payload")
        data["source"] = StudentSource(label=str(source["label"]), names=tuple(map(str, source["names"])),
                                       path=source.get("path"),
                                       payload=None if payload is None else base64.b64decode(payload),
                                       lines={str(k): list(map(str, v)) for k, v in source.get("lines", {}).items()})
    else:
        data["source"] = None
    if error is not None:
        error["exception_types"] = tuple(error.get("exception_types", ()))
        data["load_error"] = StudentError(**error)
    else:
        data["load_error"] = None
    return data


def report_to_json(report: Report) -> dict[str, Any]:
    return dataclasses.asdict(report)


def report_from_json(data: dict[str, Any]) -> Report:
    results = []
    for r in data["results"]:
        error = r.pop("error", None)
        if error is not None:
            error["exception_types"] = tuple(error.get("exception_types", ()))
            error = StudentError(**error)
        results.append(CheckResult(**r, error=error))
    return Report(data["exercise"], data["device"], results, list(data["notes"]))


# --------------------------------------------------------------------------------------------------
# The server (a fresh interpreter)
# --------------------------------------------------------------------------------------------------
def serve() -> None:
    try:
        _serve()
    finally:  # the kernel has gone, or asked the server to stop
        log = os.environ.get("COURSE_JUDGE_LOG")
        if log:
            with contextlib.suppress(OSError):
                os.unlink(log)


def _serve() -> None:
    protocol_out = os.fdopen(os.dup(1), "wb")
    protocol_in = os.fdopen(os.dup(0), "rb")
    log = os.open(os.environ.get("COURSE_JUDGE_LOG", os.devnull), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    answer, kept = _answerer()
    try:
        while True:
            body = _read(protocol_in)
            if body is None:
                return
            _write(protocol_out, answer(body))
    finally:
        kept.close()  # the runner kept for a next request: its process, ranks and output files


def _answerer(*, shared: bool = False, exercises: list[str] | None = None):
    """Warm up (the forkserver, first), then return what turns a request body into a reply body, and the runner it
    keeps between requests (the caller closes it when it ends). ``exercises``: the only ones it will be asked for,
    when the caller knows (a notebook being autograded), which may spare warming up optimizers
    (:func:`graders.isolation.warm_up`)."""
    from graders.isolation import warm_up

    warm_up(exercises or None)
    import torch

    from graders.isolation import Limits
    from graders.judge import KeptRunner, run_checks
    from graders.registry import get_exercise

    instructor_here = os.environ.get("COURSE_INSTRUCTOR") == "1"
    kept = KeptRunner()  # an exercise's check cells send the same answer one after another

    def answer(body: bytes) -> bytes:
        try:
            request = request_from_json(body)
            exercise = get_exercise(request["exercise"])
            instructor = bool(request["instructor"]) and (instructor_here or not shared)
            limits = Limits(timeout=request["timeout"], memory_mb=request["memory_mb"], instructor=instructor)
            report = run_checks(exercise, request["source"], torch.device(request["device"]), request["checks"],
                                limits=limits, load_error=request["load_error"], keep=kept)
            reply = {"report": report_to_json(report)}
        except Exception as exc:  # noqa: BLE001 - reported to the kernel as the grader's failure
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        return json.dumps(reply).encode()

    return answer, kept


def serve_shared(path: str, exercises: list[str] | None = None) -> None:
    """One judge for the kernels of a ``make grade`` worker, one kernel at a time, until its stdin closes.

    It listens before it warms up, so a kernel that connects early waits in the backlog rather than starting a
    judge of its own. A kernel that connects while an earlier one's connection is still open replaces it: only
    the newest kernel of a worker is alive (an old one may have left its socket to a process it started).
    ``exercises`` (a notebook being autograded) may start a cold helper first (:func:`_start_cold_helper`).
    """
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    # Bound under another name, and renamed once it listens: whoever waits for the path to appear (make grade's
    # worker, the tests) can connect at once; between bind and listen a connection is refused (seen in a test).
    listener.bind(f"{path}.new")
    listener.listen(8)
    os.replace(f"{path}.new", path)
    helper = _start_cold_helper(listener, exercises)
    answer, kept = _answerer(shared=True, exercises=exercises)
    try:
        _serve_kernels(listener, answer, helper=helper)
    finally:
        kept.close()
        if helper is not None:
            with contextlib.suppress(OSError):
                os.waitpid(helper.pid, os.WNOHANG)


@dataclasses.dataclass
class _Helper:
    """The judge's side of its cold helper: the helper's pid, and the socket it hands its kernel over on."""

    pid: int
    handover: socket.socket


def _start_cold_helper(listener: socket.socket, exercises: list[str] | None) -> _Helper | None:
    """Serve a notebook's first exercises from a fork of this judge that never warms torch's compiler stack.

    Where a later exercise of the notebook needs that stack (an optimizer, FakeTensorMode, gradcheck) and the
    first ones do not, the judge still imported it (0.8-1.0 s on a 2-core laptop) before its first answer, and the
    kernel's first check cell waited for it (issue 14: 0.6 s in a chapter-04 autograde, 0.5 s in a chapter-08
    one). So, once torch and the graders are imported, this judge forks a helper that serves the kernel at once
    (its runners forked from a cold forkserver of its own, which also forks them faster), while this judge warms
    up on the other core. At the first request for any other exercise, the helper hands this judge the kernel's
    connection and that request, and ends. Both are forks of one process that has computed nothing yet: verdicts
    are the same whichever answers. None when there is nothing to gain, or this process cannot be forked safely.
    """
    from graders.isolation import WARM_OPTIMIZERS_ENV as WARM_ENV, fork_is_safe, needs_compiler_stack, start_method

    if not exercises or not hasattr(socket, "send_fds") or start_method() != "forkserver":
        return None  # (spawned runners import everything themselves: a cold helper would gain nothing)
    cold = [e for e in exercises if not needs_compiler_stack(e)]
    if exercises[0] not in cold or len(cold) == len(exercises):
        return None
    if not fork_is_safe():  # a GPU, a thread, a forkserver already: no helper (and nothing imported for one)
        return None
    previous = os.environ.get(WARM_ENV)
    os.environ[WARM_ENV] = "0"
    try:
        import graders._preload  # noqa: F401 - torch and the graders, imported once for both; no optimizer yet
    finally:
        if previous is None:
            os.environ.pop(WARM_ENV, None)
        else:
            os.environ[WARM_ENV] = previous
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the helper: serves, then ends as any Python program does (multiprocessing cleans up after it)
        try:
            ours.close()
            answer, kept = _answerer(shared=True, exercises=cold)
            try:
                _serve_kernels(listener, answer, hand_over_to=theirs, serves=set(cold))
            finally:
                kept.close()
        finally:  # never back into the judge's own code
            _end_quickly()
    theirs.close()
    print(f"{COLD_HELPER_STARTED} {pid}", flush=True)  # to the log
    return _Helper(pid, ours)


def _end_quickly() -> None:
    """End the helper without tearing its interpreter down: that took 0.5 s of CPU (torch's modules), on the core the
    judge grades with from then on. What must happen at exit is registered with atexit, and runs first:
    multiprocessing removes its folder and stops the helper's forkserver, the graders close its runners."""
    import atexit

    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)  # CPython's, which a normal exit runs
    if run_exit_functions is None:
        sys.exit(0)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    run_exit_functions()
    os._exit(0)


def _serve_kernels(listener: socket.socket, answer, *, helper: _Helper | None = None,
                   hand_over_to: socket.socket | None = None, serves: set[str] | None = None) -> None:
    """Serve kernels until stdin closes. ``helper``: while it runs, the helper accepts and serves them, and this
    process waits for the connection it hands over. ``hand_over_to`` and ``serves`` (the helper): a request for
    an exercise outside ``serves`` is handed over with its connection, and the helper ends; so it does when the
    judge has gone."""
    stop = sys.stdin.fileno()
    current: socket.socket | None = None
    stream: Any = None
    while True:
        watched = [stop, helper.handover if helper is not None else listener]
        watched += [current] if current is not None else []
        watched += [hand_over_to] if hand_over_to is not None else []
        ready, _, _ = select.select(watched, [], [])
        if stop in ready and not os.read(stop, 4096):
            return  # the worker has gone
        if hand_over_to is not None and hand_over_to in ready:
            return  # the judge has gone
        if helper is not None and helper.handover in ready:
            taken = _take_over(helper.handover)
            helper.handover.close()
            helper = None  # from now on this process accepts kernels itself
            if taken is None:
                continue
            if current is not None:
                _hang_up(current, stream)
            current, body = taken
            current.settimeout(SHARED_IO_TIMEOUT_S)
            stream = current.makefile("rwb")
            try:
                _write(stream, answer(body))
            except OSError:
                _hang_up(current, stream)
                current = stream = None
            continue
        if listener in ready:
            if current is not None:
                _hang_up(current, stream)
            current, _ = listener.accept()
            # A kernel that stops halfway through a request (or never reads its reply) is dropped, rather than
            # keep the next submission's kernel waiting.
            current.settimeout(SHARED_IO_TIMEOUT_S)
            stream = current.makefile("rwb")
            print(KERNEL_CONNECTED, flush=True)  # to the worker's log, which says which kernels used it
            continue
        if current is not None and current in ready:
            try:
                body = _read(stream, limit=SHARED_REQUEST_LIMIT)
                if body is None:
                    raise OSError("the kernel closed its connection, or sent more than a request can hold")
                if serves is not None and hand_over_to is not None and _exercise_of(body) not in serves:
                    _hand_over(hand_over_to, current, body)
                    _hang_up(current, stream)
                    return
                _write(stream, answer(body))
            except OSError:
                _hang_up(current, stream)
                current = stream = None


def _exercise_of(body: bytes) -> str | None:
    try:
        return json.loads(body)["exercise"]
    except (ValueError, KeyError, TypeError):
        return None  # not a request this helper can read: the judge answers it, as it answers any


def _hand_over(to: socket.socket, connection: socket.socket, body: bytes) -> None:
    """The kernel's connection (its descriptor) and the request read from it, to the judge."""
    socket.send_fds(to, [b"k"], [connection.fileno()])
    to.sendall(_HEADER.pack(len(body)) + body)


def _take_over(handover: socket.socket) -> tuple[socket.socket, bytes] | None:
    """The connection and request the helper handed over; None when it ended without one."""
    try:
        marker, fds, _, _ = socket.recv_fds(handover, 1, 1)
    except OSError:
        return None
    if not marker or not fds:
        for fd in fds:
            os.close(fd)
        return None
    connection = socket.socket(fileno=fds[0])
    with handover.makefile("rb") as reader:
        body = _read(reader)
    if body is None:
        connection.close()
        return None
    return connection, body


def _hang_up(connection: socket.socket, stream: Any) -> None:
    for end in (stream, connection):
        with contextlib.suppress(OSError):
            end.close()


# --------------------------------------------------------------------------------------------------
# The kernel's side
# --------------------------------------------------------------------------------------------------
class JudgeClient:
    """The kernel's side: a judge of its own (started on first use, or early by :meth:`start`), or the shared judge
    that ``$COURSE_JUDGE_SOCKET`` names when it answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._shared: socket.socket | None = None
        self._shared_stream: BinaryIO | None = None
        self.log_path: str | None = None  # the own judge's log, made when it starts
        # A request interrupted on the shared judge goes on there until its checks end; the next ones go to a
        # judge of this kernel's own rather than queue behind it.
        self._shared_abandoned = False

    def start(self) -> None:
        """Start the server now (or connect to the shared one), without waiting for it to be ready: the first
        check then finds it warm."""
        with self._lock:
            self._channel()

    def _channel(self) -> tuple[BinaryIO, BinaryIO]:
        """(to the judge, from the judge)."""
        if self._shared_stream is not None:
            return self._shared_stream, self._shared_stream
        if ((self._process is None or self._process.poll() is not None) and os.environ.get(SOCKET_ENV)
                and not self._shared_abandoned):
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.connect(os.environ[SOCKET_ENV])
            except OSError:  # no shared judge there: this kernel starts its own
                connection.close()
            else:
                self._shared, self._shared_stream = connection, connection.makefile("rwb")
                return self._shared_stream, self._shared_stream
        process = self._start_own()
        return process.stdin, process.stdout

    def _start_own(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            if self.log_path is None:
                fd, self.log_path = tempfile.mkstemp(prefix="course-judge-", suffix=".log")
                os.close(fd)
            env = {**os.environ, "COURSE_JUDGE_LOG": self.log_path, "PYTHONUNBUFFERED": "1"}
            self._process = subprocess.Popen([sys.executable, "-m", "graders.judge_server"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                             start_new_session=True)
        return self._process

    def grade(self, request: dict[str, Any], exercise: Any) -> Report:
        with self._lock:
            to_judge, from_judge = self._channel()
            try:
                _write(to_judge, request_to_json(request))
                body = _read(from_judge)
            except BaseException:  # an interrupted kernel: the server may be mid-reply, start afresh next time
                self._shared_abandoned = self._shared_abandoned or self._shared_stream is not None
                self.stop()
                raise
            if body is None:
                self.stop()
                return _broken(exercise, request, "the grading process stopped unexpectedly")
        reply = json.loads(body)
        if "error" in reply:
            return _broken(exercise, request, reply["error"])
        return report_from_json(reply["report"])

    def _disconnect(self) -> None:
        shared, stream, self._shared, self._shared_stream = self._shared, self._shared_stream, None, None
        for end in (stream, shared):
            if end is not None:
                with contextlib.suppress(OSError):
                    end.close()

    def stop(self) -> None:
        self._disconnect()
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def close(self) -> None:
        """At the kernel's exit: ask the server to end (it then cleans up after itself, its log included) and go;
        the kernel need not wait the 0.7 s its exit takes. The shared judge stays for the next kernel."""
        self._disconnect()
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            return
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.log_path)


def _broken(exercise: Any, request: dict[str, Any], why: str) -> Report:
    from graders.judge import REPORT_GRADER_BUG

    checks = exercise.select(request["checks"])
    return Report(exercise.id, request["device"],
                  [CheckResult(c.name, GRADER_ERROR, 0, c.points, REPORT_GRADER_BUG + why) for c in checks])


_CLIENT: JudgeClient | None = None


def client() -> JudgeClient:
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = JudgeClient()
        atexit.register(_CLIENT.close)
    return _CLIENT


def main(argv: list[str] | None = None) -> None:
    global SHARED_IO_TIMEOUT_S
    import argparse

    parser = argparse.ArgumentParser(prog="python -m graders.judge_server")
    parser.add_argument("--listen", metavar="PATH", help="serve kernels one after another on this Unix socket "
                        "until stdin closes (make grade's workers); without it, one kernel over stdin and stdout")
    parser.add_argument("--exercises", metavar="ID,ID", help="with --listen: the only exercises it will be asked "
                        "to grade (another still is, with a colder start)")
    parser.add_argument("--io-timeout", metavar="S", type=float, default=SHARED_IO_TIMEOUT_S,
                        help=f"with --listen: seconds a kernel may take to write one request or read one reply "
                             f"before it is dropped (default {SHARED_IO_TIMEOUT_S:g})")
    args = parser.parse_args(argv)
    if args.io_timeout <= 0:
        parser.error("--io-timeout must be above 0")
    SHARED_IO_TIMEOUT_S = args.io_timeout  # read where each connection is accepted; the cold helper forks after
    if args.listen:
        serve_shared(args.listen, args.exercises.split(",") if args.exercises else None)
    else:
        serve()


if __name__ == "__main__":
    main()
