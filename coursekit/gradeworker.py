"""One worker of ``make grade``: a long-lived process that autogrades submission after submission.

Starting ``nbgrader autograde`` costs about 5 s before any work (Python, nbgrader, its database), and a grade of
record about 2.5 s more (torch, the graders' forkserver). A serial ``nbgrader autograde`` of a whole class pays
the first once; a worker that started a process per submission paid both every time, so on 2 cores it was no
faster than serial (measured: 0.58x). A worker therefore starts once and then, for each student it is sent:

1. autogrades the submission in-process through nbgrader's own API (``NbGraderAPI.autograde``, what the
   formgrader calls), with the worker's private gradebook, autograded folder and IPC kernel sockets; each
   kernel is forked from the worker's zygote, which has imported ipykernel and torch once
   (:mod:`coursekit.kernelzygote`), and the kernels' check cells all use one judge, started once per worker
   (:class:`SharedJudge`);
2. makes its grade of record (:func:`coursekit.record.grade_of_record`) at the same time, in a thread, each check
   in a process of its own from the forkserver this worker forked before doing anything else, once it had
   imported what the chapter's opening cell imports (:func:`coursekit.record.preload_opening_imports`);
3. replies with one JSON line.

It reads one JSON request a line on stdin and writes one JSON reply a line on stdout, through copies of those
descriptors that no child inherits: the kernels' stdin is /dev/null and their stdout the worker's log, so
nothing a submission prints can pass for a reply. The parent owns the time limit: a submission that outlives
it gets the worker's whole process group killed (kernel, checks and all), and a new worker goes on (with
``"autograde": false``, only the grade of record).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path


def _config(root: Path, folder: Path, sockets: Path, *, forked_kernels: bool = False):
    """The course's nbgrader configuration, with this worker's own gradebook, autograded folder and sockets (and
    kernels forked from its zygote)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    (sockets / "kernels").mkdir(exist_ok=True)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.merge(Config({
        "CourseDirectory": {"root": str(root), "db_url": f"sqlite:///{folder / 'gradebook.db'}",
                            "autograded_directory": str(folder / "autograded")},
        # In a folder of their own: a confined kernel writes there (its sockets are files), and nowhere near the
        # judge's and the zygote's sockets (coursekit.kernel_sandbox).
        "KernelManager": {"transport": "ipc", "ip": str(sockets / "kernels" / "k")},
    }))
    if forked_kernels:
        config.merge(Config({"Execute": {"kernel_manager_class": "coursekit.kernelzygote.ZygoteKernelManager"}}))
    return config


class SharedJudge:
    """The judge this worker's kernels share (``python -m graders.judge_server --listen``), one kernel at a time.

    A kernel's own judge costs a second torch import per submission, about 3.6 s of CPU, where a whole
    autograde of one chapter-01 submission costs about 11. The kernels find this one through
    ``$COURSE_JUDGE_SOCKET``; it is in the worker's process group, so a time limit that stops the worker stops
    it too. Where the worker may be forked it is a fork of the worker, made at its start (:meth:`start_forked`);
    otherwise, or if it has died, a new process started on use (:meth:`ensure_running`).
    """

    def __init__(self, path: Path, log: Path) -> None:
        from graders.judge_server import SOCKET_ENV

        self.path, self.log = path, log
        self.process: subprocess.Popen | None = None
        os.environ[SOCKET_ENV] = str(path)  # inherited by every kernel nbgrader starts from here

    def start_forked(self) -> None:
        """Become the judge in a fork of this worker, which has imported torch, the graders and torch's compiler
        stack already (a new judge process imports them again: about 2.5 s of CPU per worker). Only while the
        worker may be forked (:func:`graders.isolation.fork_is_safe`), before it starts its own forkserver."""
        stop_reader, stop_writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(stop_reader, 0)  # closed by the worker (or its end): the judge ends
                log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                os.dup2(log, 1)
                os.dup2(log, 2)
                from graders.isolation import close_descriptors_except
                from graders.judge_server import serve_shared

                close_descriptors_except({0, 1, 2})  # the worker's protocol pipes above all: never the judge's

                serve_shared(str(self.path))
            finally:
                os._exit(0)
        os.close(stop_reader)
        self.process = _ForkedChild(pid, os.fdopen(stop_writer, "wb"))

    def ensure_running(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "graders.judge_server", "--listen", str(self.path)],
                                            stdin=subprocess.PIPE, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while not self.path.exists() and self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # it listens before importing torch: kernels then queue for it


ZYGOTE_ENV = "COURSE_KERNEL_ZYGOTE"  # "0": every kernel launched as nbgrader launches it (to compare)


def kernelzygote_possible() -> bool:
    """Linux only: a kernel must die with its zygote (PR_SET_PDEATHSIG), and macOS frameworks are not fork-safe."""
    return hasattr(os, "fork") and sys.platform.startswith("linux")


class _ForkedChild:
    """A forked child, as much of a ``Popen`` as :class:`SharedJudge` uses."""

    def __init__(self, pid: int, stdin) -> None:
        self.pid, self.stdin, self.returncode = pid, stdin, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def serve(root: Path, chapter: str, folder: Path, out: Path, sockets: Path, device: str | None, requests, replies) -> None:
    import nbformat

    from coursekit import record
    from coursekit.classgrade import Course

    course = Course.load(root)
    instructor = course.notebook(course.source, chapter)
    instructor_notebook = nbformat.read(str(instructor), as_version=4)
    checks_used = any(cell.checks for cell in record.graded_cells(instructor_notebook))
    zygote = None
    if kernelzygote_possible() and os.environ.get(ZYGOTE_ENV) != "0":
        from coursekit import kernelzygote

        # Started first: it imports torch beside this process's own imports below.
        zygote = kernelzygote.Zygote(sockets / "zygote", folder / "zygote.log", record.opening_imports(instructor_notebook))
        kernelzygote.use(zygote)
    judge = SharedJudge(sockets / "judge", folder / "judge.log") if checks_used else None
    if checks_used:
        from graders.isolation import fork_is_safe, warm_up

        record.preload_opening_imports(instructor_notebook)  # inherited by every program's process
        if fork_is_safe():
            importlib.import_module("graders._preload")  # what the forkserver and the judge would import
            judge.start_forked()
        warm_up()  # first, while this process has computed nothing and runs no thread (graders.isolation)

    from nbgrader.apps import NbGraderAPI

    api = NbGraderAPI(config=_config(course.root, folder, sockets, forked_kernels=zygote is not None))
    try:
        for line in requests:
            request = json.loads(line)
            student = request["student"]
            reply: dict = {"student": student}
            made = out / "records" / f"{student}.json"

            # The record is made from a copy taken before the kernel starts, in this worker's folder, which no
            # kernel may read or write (coursekit.kernel_sandbox); so is the record itself (out/records).
            copy = folder / "copies" / f"{student}.ipynb"
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(course.notebook(course.submitted, chapter, student), copy)

            def make_record(reply=reply, made=made, copy=copy) -> None:
                try:
                    record.write_record(copy, instructor, made, device=device)
                    reply["record_error"] = ""
                except Exception:  # noqa: BLE001 - the record could not be made: said, and the worker goes on
                    made.unlink(missing_ok=True)
                    reply["record_error"] = traceback.format_exc(limit=3)[-2000:]

            # The record runs beside the kernel: they share nothing, and the kernel mostly waits (on its judge, or
            # on a looping cell until nbgrader's cell timeout while the record's own time limit runs out).
            recording = threading.Thread(target=make_record, name=f"record {student}")
            recording.start()
            if request.get("autograde", True):
                if judge is not None:
                    judge.ensure_running()
                start = time.monotonic()
                result = api.autograde(chapter, student, force=True, create=True)
                text = result.get("log", "") + result.get("error", "")
                (folder / f"{student}.log").write_text(text, encoding="utf-8")
                reply.update(success=bool(result.get("success")), log=text[-8000:], autograde_s=time.monotonic() - start)
            recording.join()
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
    finally:
        if zygote is not None:
            zygote.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.gradeworker")
    parser.add_argument("chapter")
    parser.add_argument("--root", required=True)
    parser.add_argument("--folder", required=True, help="this worker's gradebook, autograded folder and logs")
    parser.add_argument("--out", required=True, help="the shard's folder: records/<student>.json go there")
    parser.add_argument("--sockets", required=True, help="a short folder for the kernels' IPC sockets")
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    # The protocol keeps private copies of stdin and stdout (os.dup makes them non-inheritable); what children
    # inherit as 0 and 1 becomes /dev/null and the log (stderr).
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    with open(os.devnull, "rb") as null:
        os.dup2(null.fileno(), 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(Path(args.root), args.chapter, Path(args.folder), Path(args.out), Path(args.sockets), args.device,
          requests, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
