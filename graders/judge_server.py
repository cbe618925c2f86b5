"""A clean judge for notebooks: the check cells' verdicts are made outside the student's kernel.

In a notebook the student's code and the check cells share one kernel, so a student cell could patch
``torch.equal`` or the graders the judge uses there. :func:`graders.check` therefore sends the answer
(the exercise's names, pickled by value in the kernel and never unpickled by the judge) to a judge
process started once per kernel with a fresh interpreter: ``python -m graders.judge_server``. It runs the
checks exactly as the command line does (each in its own runner) and sends back the report as JSON.

The protocol is one request and one reply at a time over the server's stdin and stdout, each a 8-byte
big-endian length and a body (request: pickle, written by the kernel; reply: JSON). The server keeps
its real stdout for the protocol and sends anything else written to fd 1 or 2 to a log file, so nothing
reaches the cell's stderr (which nbgrader would score 0).

Nothing stays in the temporary folder: at the kernel's exit the server is asked to stop (its stdin closes) and
ends as any Python program does, so multiprocessing removes its ``pymp-*`` folder; the server removes its log
then, also when the kernel was killed and could not ask. (Each kernel used to leave both behind in /tmp.)
The kernel does not wait for that: a judge takes about 0.7 s to end, which every autograded submission paid.
The server leads a process group of its own: at shutdown ipykernel terminates every child in the kernel's
group, which killed the judge before it could clean up (a ``pymp-*`` folder left by every Jupyter kernel) and
made each shutdown wait 2.6 s for it.

The server is a second torch import (2-3 s on a laptop). A kernel started to grade starts its judge as it
starts (:meth:`JudgeClient.start`, see :mod:`coursekit.autograde`), so that import runs beside the opening
cell's instead of after it.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any, BinaryIO

from graders.outcomes import GRADER_ERROR, CheckResult, Report, StudentError

_HEADER = struct.Struct(">Q")


def _write(stream: BinaryIO, body: bytes) -> None:
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _read(stream: BinaryIO) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    body = stream.read(size)
    return body if len(body) == size else None


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
    from graders.isolation import warm_up

    warm_up()
    import torch

    from graders.isolation import Limits
    from graders.judge import run_checks
    from graders.registry import get_exercise

    while True:
        body = _read(protocol_in)
        if body is None:
            return
        request = pickle.loads(body)
        try:
            exercise = get_exercise(request["exercise"])
            limits = Limits(timeout=request["timeout"], memory_mb=request["memory_mb"],
                            instructor=request["instructor"])
            report = run_checks(exercise, request["source"], torch.device(request["device"]), request["checks"],
                                limits=limits, load_error=request["load_error"])
            reply = {"report": report_to_json(report)}
        except Exception as exc:  # noqa: BLE001 - reported to the kernel as the grader's failure
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        _write(protocol_out, json.dumps(reply).encode())


# --------------------------------------------------------------------------------------------------
# The kernel's side
# --------------------------------------------------------------------------------------------------
class JudgeClient:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        fd, self.log_path = tempfile.mkstemp(prefix="course-judge-", suffix=".log")
        os.close(fd)

    def start(self) -> None:
        """Start the server now, without waiting for it to be ready: the first check then finds it warm."""
        with self._lock:
            self._start()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            env = {**os.environ, "COURSE_JUDGE_LOG": self.log_path, "PYTHONUNBUFFERED": "1"}
            self._process = subprocess.Popen([sys.executable, "-m", "graders.judge_server"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                             start_new_session=True)
        return self._process

    def grade(self, request: dict[str, Any], exercise: Any) -> Report:
        with self._lock:
            process = self._start()
            try:
                _write(process.stdin, pickle.dumps(request))
                body = _read(process.stdout)
            except BaseException:  # an interrupted kernel: the server may be mid-reply, start afresh next time
                self.stop()
                raise
            if body is None:
                self.stop()
                return _broken(exercise, request, "the grading process stopped unexpectedly")
        reply = json.loads(body)
        if "error" in reply:
            return _broken(exercise, request, reply["error"])
        return report_from_json(reply["report"])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def close(self) -> None:
        """At the kernel's exit: ask the server to end (it then cleans up after itself) and go; the kernel need
        not wait the 0.7 s its exit takes. A server that never started leaves only the log to remove."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            return
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


if __name__ == "__main__":
    serve()
