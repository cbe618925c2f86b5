"""Autograde a whole class in parallel, with one writer to the instructor's gradebook (issue 14).

``python -m coursekit.classgrade CHAPTER [--jobs N] [--student ID ...]`` (``make grade CHAPTER=...``), run in
the course root (where nbgrader_config.py is), after ``nbgrader generate_assignment CHAPTER``:

1. **Workers.** N long-lived worker processes (default: every core; :mod:`coursekit.gradeworker`) take the
   submissions in ``submitted/<student>/<CHAPTER>/`` one after another and autograde each through nbgrader's
   own API. A worker has a gradebook of its own (a SQLite copy of the instructor's, whatever database that is)
   and an autograded folder of its own, so no two processes ever write one database; its kernels talk over
   IPC sockets in a folder of its own, never over TCP ports that two kernels could both pick; every kernel
   runs with one thread (``OMP_NUM_THREADS=1``) and at most ``--memory-mb`` of data per process (Linux), and a
   submission gets ``--timeout`` seconds, after which the worker's whole process group is killed and a fresh
   worker goes on. A worker whose submission only waits on an endless loop (lowered to nice 19 by then, it uses
   only spare CPU until its time limit) does not count towards N meanwhile: another worker takes the next
   submission, so up to 2N may be alive.
2. **The grade of record.** The same worker then grades the submission's answer cells outside any kernel
   (:mod:`coursekit.record`, each check in a process of its own): the score a cell gets there is the one that
   counts, because an answer can fool the kernel it shares with the test cells.
3. **Zero, never stale.** A submission whose kernel run failed (its kernel died: ``os._exit``, a segfault,
   memory; it ran out of time; nbgrader refused it) gets a notebook whose every graded cell shows the reason
   as an error: it scores 0 in the kernel, whatever an earlier run had recorded (nbgrader alone keeps the old
   scores when a kernel dies), and what its answers earn on record.
4. **One writer.** One thread of this process reads each executed notebook into the instructor's gradebook as
   its worker finishes it, as ``nbgrader autograde --no-execute`` does and through nbgrader's own API
   (:class:`GradebookWriter`): it scores a notebook from its outputs exactly as the executing run does, so the
   kernel's grades are those of a serial ``nbgrader autograde``. Where the record differs from the
   kernel, the record is written as the cell's manual score, with a comment saying why; then the class report
   (:mod:`coursekit.classreport`) is written to ``reports/<CHAPTER>/``.

**Past one machine.** ``--shard K/N`` grades every N-th submission (from the K-th, 0-based) into
``.classgrade/<CHAPTER>/shards/K-of-N/`` and leaves the gradebook alone, so N shards run anywhere that sees the
course folder (a Kubernetes Indexed Job, a Slurm array: README, "Grading a class"); ``--merge`` then does
step 4 for all of them, once.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

DEFAULT_TIMEOUT_S = 600.0  # one submission: its kernel run and its grade of record
DEFAULT_MEMORY_MB = 4096  # data of one process (a kernel importing torch uses about 800 MB)
RECORD_MARK = "Grade of record"  # how a comment written here is told from one an instructor wrote
# A worker whose submission loops forever waits for a time limit (a cell's, a check's: up to minutes), while the
# loop, lowered to nice 19 by then (graders.isolation.lower_priority), gets only the CPU nobody else wants. It does
# not count towards --jobs meanwhile: another worker, started when first needed, takes the next submission. So up
# to twice --jobs workers may be alive; looked for every LOOP_POLL_S while submissions wait.
MAX_WORKERS_PER_JOB = 2
LOOP_POLL_S = 0.5


@dataclasses.dataclass
class Outcome:
    student: str
    status: str  # "graded", "kernel died", "timed out", "failed"
    seconds: float
    detail: str = ""
    record: str = ""  # "" when the grade of record was made, else why not


@dataclasses.dataclass
class Course:
    """Where the course's nbgrader_config.py keeps things."""

    root: Path
    source: Path
    release: Path
    submitted: Path
    db_url: str

    @classmethod
    def load(cls, root: str | Path) -> "Course":
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        root = Path(root).resolve()
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        course = CourseDirectory(config=config)
        course.root = str(root)
        return cls(root, root / course.source_directory, root / course.release_directory,
                   root / course.submitted_directory, course.db_url)

    def notebook(self, folder: Path, chapter: str, student: str | None = None) -> Path:
        return (folder / student if student else folder) / chapter / f"{chapter}.ipynb"


def submissions(course: Course, chapter: str, students: list[str] | None = None) -> list[str]:
    """The students with a submission of ``chapter`` (``submitted/<student>/<chapter>/<chapter>.ipynb``)."""
    found = sorted(p.parent.parent.name for p in course.submitted.glob(f"*/{chapter}/{chapter}.ipynb"))
    if students:
        missing = sorted(set(students) - set(found))
        if missing:
            raise SystemExit(f"no submission of {chapter} from: {', '.join(missing)}")
        found = [s for s in found if s in students]
    return found


def copy_gradebook(db_url: str, target: Path) -> None:
    """A private SQLite copy of the instructor's gradebook, from any database SQLAlchemy reaches (SQLite,
    Postgres): nbgrader's own tables, row by row, parents first, and the schema's alembic version (without
    which nbgrader would run alembic on the copy)."""
    from nbgrader.api import Base
    from sqlalchemy import MetaData, create_engine

    original, copy = create_engine(db_url), create_engine(f"sqlite:///{target}")
    try:
        Base.metadata.create_all(copy)
        versions = MetaData()
        versions.reflect(original, only=["alembic_version"])
        versions.create_all(copy)
        with original.connect() as source, copy.begin() as sink:
            for table in [*Base.metadata.sorted_tables, *versions.sorted_tables]:
                rows = [dict(row._mapping) for row in source.execute(table.select())]
                if rows:
                    sink.execute(table.insert(), rows)
    finally:
        original.dispose()
        copy.dispose()


# Sets the limit, then becomes the command (same process, group and pipes). A preexec_fn would run Python in the
# child of a fork of this process, whose other threads (the gradebook writer, the readers) may hold a lock then:
# Python's documentation calls that unsafe, and a worker restarted after a time limit could hang at its start.
_LIMITED = ("import os, resource, sys; limit = int(sys.argv[1]) << 20; "
            "resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)); os.execv(sys.argv[2], sys.argv[2:])")


def _limited(command: list[str], memory_mb: int | None) -> list[str]:
    """``command`` such that it (and every process it starts, its kernels too) may not exceed ``memory_mb`` of data
    per process. RLIMIT_DATA counts what a process allocates and not the libraries it maps, so torch loads under
    it; only Linux enforces it (elsewhere only the time limit holds)."""
    if not memory_mb or not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", _LIMITED, str(int(memory_mb)), *command]


def _kill_group(process: subprocess.Popen) -> None:
    if hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, signal.SIGKILL)  # nbgrader and its kernel
        except ProcessLookupError:
            pass
    else:  # Windows: no process groups here; the kernel ends when nbgrader's pipes close
        process.kill()
    process.wait()


def _waiting_on_loops(workers: dict[int, "_Worker"]) -> set[int]:
    """The keys of ``workers`` whose process has a descendant lowered to nice 19 and running (or ready to run): a
    loop waiting for its time limit. Linux only (it reads /proc); none elsewhere, and none when this process runs
    at nice 19 itself (everything it started would look lowered)."""
    started = {worker.process.pid: key for key, worker in workers.items() if worker.process is not None}
    if not started or not os.path.isdir("/proc") or os.getpriority(os.PRIO_PROCESS, 0) >= 19:
        return set()
    parent: dict[int, int] = {}
    lowered: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # ended meanwhile
            continue
        fields = text[text.rfind(b")") + 2:].split()  # after the command's name, which may hold spaces
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        if fields[0] == b"R" and int(fields[16]) >= 19:  # state, nice (proc(5): fields 3 and 19)
            lowered.append(pid)
    found = set()
    for pid in lowered:
        for _ in range(len(parent)):  # up the tree to a worker, or to the top
            if pid in started or pid <= 1:
                break
            pid = parent.get(pid, 0)
        if pid in started:
            found.add(started[pid])
    return found


class _Worker:
    """A long-lived grading process (:mod:`coursekit.gradeworker`) with its own gradebook, autograded folder and
    kernel sockets, started again after it was stopped at a time limit or died."""

    def __init__(self, course: Course, chapter: str, folder: Path, out: Path, *, memory_mb: int | None,
                 device: str | None) -> None:
        self.course, self.chapter, self.folder, self.out = course, chapter, folder, out
        self.memory_mb, self.device = memory_mb, device
        # IPC socket paths must stay short (about 100 bytes at most): a short temporary folder.
        self.sockets = Path(tempfile.mkdtemp(prefix="cg"))
        # The worker's and its children's temporary files (the checks' output files, the ranks' folders,
        # multiprocessing's pymp-*): the worker is killed when it is done or out of time, so none of them can
        # clean up, and a class of 24 left about 300 entries in /tmp. Its own folder goes with it instead.
        self.temp = self.sockets / "tmp"
        self.process: subprocess.Popen | None = None
        self.replies: queue.Queue = queue.Queue()

    def _start(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               # nbgrader runs `alembic` by name: from this environment, even when it is not activated.
               "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
        self.temp.mkdir(exist_ok=True)
        env.update(TMPDIR=str(self.temp), TEMP=str(self.temp), TMP=str(self.temp))  # tempfile reads all three
        with open(self.folder / "worker.log", "ab") as log:
            self.process = subprocess.Popen(_limited(self.command(), self.memory_mb), cwd=self.folder, env=env,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                            start_new_session=True)
        self.replies = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout, self.replies), daemon=True).start()

    def command(self) -> list[str]:
        return [sys.executable, "-m", "coursekit.gradeworker", self.chapter, "--root", str(self.course.root),
                "--folder", str(self.folder), "--out", str(self.out), "--sockets", str(self.sockets),
                *(["--device", self.device] if self.device else [])]

    @staticmethod
    def _read(stream, replies: queue.Queue) -> None:
        for line in stream:
            replies.put(json.loads(line))
        replies.put(None)  # the worker ended

    def ask(self, student: str, *, autograde: bool, timeout: float) -> dict | None:
        """The worker's reply for ``student``; None when it did not come in time (the worker is then stopped)
        or the worker died (then the reply says so)."""
        if self.process is None:
            self._start()
        try:
            self.process.stdin.write(json.dumps({"student": student, "autograde": autograde}) + "\n")
            self.process.stdin.flush()
            reply = self.replies.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            return None
        except BrokenPipeError:
            reply = None
        if reply is None:
            self.stop()
            return {"student": student, "success": False, "record_error": "the grading worker died",
                    "log": "the grading worker died (see worker.log)"}
        return reply

    def stop(self) -> None:
        if self.process is not None:
            _kill_group(self.process)
            self.process = None
        shutil.rmtree(self.temp, ignore_errors=True)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.sockets, ignore_errors=True)


MAX_NOTEBOOK_BYTES = 50 * 2**20  # a chapter's notebook with its outputs is under 2 MiB; more is not a submission


def refusal(course: Course, chapter: str, student: str) -> str:
    """Why ``student``'s folder is not graded at all ("" when it is): a symbolic link anywhere in it (it could lead to
    another student's notebook or any file of the machine), more than one notebook, or an enormous notebook."""
    top = course.submitted / student
    if top.is_symlink():
        return "the submission folder is a symbolic link"
    for folder, dirs, files in os.walk(top):  # (os.walk does not follow links into folders)
        for name in dirs + files:
            if os.path.islink(os.path.join(folder, name)):
                return f"a symbolic link in the submission: {os.path.relpath(os.path.join(folder, name), top)}"
    notebooks = sorted(p.name for p in (top / chapter).glob("*.ipynb"))
    if len(notebooks) > 1:
        return f"{len(notebooks)} notebooks in the submission ({', '.join(notebooks[:4])}): hand in {chapter}.ipynb alone"
    size = course.notebook(course.submitted, chapter, student).stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        return f"the notebook is {size / 2**20:.0f} MiB, over the {MAX_NOTEBOOK_BYTES >> 20} MiB a submission may be"
    return ""


def _grade_one(course: Course, chapter: str, student: str, worker: _Worker, out: Path, *, timeout: float) -> Outcome:
    """Autograde one submission on a worker, then make its grade of record; the executed notebook goes to
    ``out/executed``, the record to ``out/records``. A submission :func:`refusal` refuses is neither run nor read:
    the released notebook failed on every graded cell with the reason stands for it."""
    start = time.monotonic()
    why = refusal(course, chapter, student)
    if why:
        target = course.notebook(out / "executed", chapter, student)
        target.parent.mkdir(parents=True, exist_ok=True)
        release = course.notebook(course.release, chapter)
        nbformat.write(_zero_notebook(release, release, f"refused: {why}"), str(target))
        return Outcome(student, "refused", time.monotonic() - start, why, record=f"refused: {why}")
    reply = worker.ask(student, autograde=True, timeout=timeout)
    seconds = time.monotonic() - start
    executed = worker.folder / "autograded" / student / chapter / f"{chapter}.ipynb"
    text = (reply or {}).get("log", "")
    if reply is None:
        outcome = Outcome(student, "timed out", seconds, f"still running after {timeout:g} s; stopped")
        # the grade of record, which the stopped run never reached, on a fresh worker
        reply = worker.ask(student, autograde=False, timeout=timeout) or {"record_error": "timed out"}
    elif reply["success"] and executed.exists():
        outcome = Outcome(student, "graded", seconds)
    elif "DeadKernelError" in text or "Kernel died" in text:
        outcome = Outcome(student, "kernel died", seconds, "the notebook's kernel died (os._exit, a crash, or memory)")
    else:
        errors = [line for line in text.splitlines() if "ERROR" in line or "Error" in line]
        outcome = Outcome(student, "failed", seconds, errors[0][:300] if errors else "nbgrader could not grade it")
    if reply.get("record_error"):
        outcome.record = reply["record_error"].strip().splitlines()[-1][:300]

    target = course.notebook(out / "executed", chapter, student)
    target.parent.mkdir(parents=True, exist_ok=True)
    submitted = course.notebook(course.submitted, chapter, student)
    if (submitted.parent / "timestamp.txt").exists():
        shutil.copy(submitted.parent / "timestamp.txt", target.parent / "timestamp.txt")
    if outcome.status == "graded":
        shutil.copy(executed, target)
    else:
        nbformat.write(_zero_notebook(submitted, course.notebook(course.release, chapter),
                                      f"not graded: {outcome.detail}"), str(target))
    outcome.seconds = time.monotonic() - start
    return outcome


def _eta(done: list[Outcome], total: int, jobs: int) -> str:
    """About how long the rest will take: the mean time per submission so far, over the workers."""
    left = total - len(done)
    if not left:
        return ""
    seconds = sum(o.seconds for o in done) / len(done) * left / jobs
    return f"; about {seconds / 60:.0f} min left" if seconds >= 90 else f"; about {seconds:.0f} s left"


def _zero_notebook(submitted: Path, release: Path, reason: str) -> nbformat.NotebookNode:
    """The submission (the released notebook if it cannot even be read) with every output cleared and every
    graded cell failed with ``reason``."""
    try:
        nb = nbformat.read(str(submitted), as_version=4)
    except Exception:  # noqa: BLE001 - not JSON, not a notebook: nothing of it can be graded
        nb = nbformat.read(str(release), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=reason, traceback=[reason])]
    return nb


def shard_folder(course: Course, chapter: str, shard: int, shards: int) -> Path:
    return course.root / ".classgrade" / chapter / "shards" / f"{shard}-of-{shards}"


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` (K counted from 0, as Kubernetes' JOB_COMPLETION_INDEX and Slurm's array index are)."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not int(match[1]) < int(match[2]):
        raise SystemExit(f"--shard wants K/N with 0 <= K < N (K from 0, as JOB_COMPLETION_INDEX is), not {text!r}")
    return int(match[1]), int(match[2])


def grade_shard(root: str | Path, chapter: str, *, shard: int = 0, shards: int = 1, jobs: int | None = None,
                students: list[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                memory_mb: int | None = DEFAULT_MEMORY_MB, device: str | None = None, progress=print,
                on_graded=None) -> Path:
    """Grade every ``shards``-th submission from the ``shard``-th (all of them by default) into the shard's
    folder, which it returns; the instructor's gradebook is only read. ``on_graded(student)`` is called as each
    submission's executed notebook and record are in that folder."""
    course = Course.load(root)
    names = submissions(course, chapter, students)[shard::shards]
    if not course.notebook(course.source, chapter).exists():
        raise SystemExit(f"no {course.notebook(course.source, chapter)}: the grade of record needs the instructor's notebook")
    out = shard_folder(course, chapter, shard, shards)
    shutil.rmtree(out, ignore_errors=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names) or 1))
    workers: list[_Worker] = []
    # Copied once, before anything is graded: a worker started later gets the same gradebook as the first ones (and
    # nothing is read from a gradebook that the single writer may be writing then).
    gradebook = out / "gradebook-for-workers.db"

    def another_worker() -> int:
        worker = _Worker(course, chapter, out / f"worker{len(workers)}", out, memory_mb=memory_mb, device=device)
        worker.folder.mkdir(parents=True)
        shutil.copyfile(gradebook, worker.folder / "gradebook.db")
        workers.append(worker)
        return len(workers) - 1

    outcomes: dict[str, Outcome] = {}
    try:
        out.mkdir(parents=True)
        copy_gradebook(course.db_url, gradebook)
        free = [another_worker() for _ in range(jobs)][::-1]
        with concurrent.futures.ThreadPoolExecutor(MAX_WORKERS_PER_JOB * jobs) as pool:
            pending: dict[concurrent.futures.Future, int] = {}
            queue_ = list(names)
            while queue_ or pending:
                looping = _waiting_on_loops({k: workers[k] for k in pending.values()}) if queue_ else set()
                while queue_ and len(pending) - len(looping) < jobs:
                    if not free:
                        if len(workers) >= MAX_WORKERS_PER_JOB * jobs:
                            break
                        free.append(another_worker())
                    k, student = free.pop(), queue_.pop(0)
                    pending[pool.submit(_grade_one, course, chapter, student, workers[k], out, timeout=timeout)] = k
                # While some submission is graded and others wait, look again now and then for a worker that only
                # waits on a loop; otherwise wait for a submission to finish.
                poll = LOOP_POLL_S if queue_ and pending else None
                done, _ = concurrent.futures.wait(pending, timeout=poll, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    free.append(pending.pop(future))
                    outcome = future.result()
                    outcomes[outcome.student] = outcome
                    if on_graded is not None:
                        on_graded(outcome.student)
                    notes = [outcome.detail] if outcome.detail else []
                    notes += [f"no grade of record: {outcome.record}"] if outcome.record else []
                    progress(f"[{len(outcomes)}/{len(names)}] {outcome.student}: {outcome.status} "
                             f"({outcome.seconds:.1f} s){''.join(' - ' + n for n in notes)}"
                             f"{_eta(list(outcomes.values()), len(names), jobs)}")
    finally:
        for worker in workers:
            worker.close()
    (out / "shard.json").write_text(json.dumps({
        "chapter": chapter, "shard": shard, "shards": shards,
        "outcomes": [dataclasses.asdict(outcomes[s]) for s in names]}, indent=1))
    return out


def _shard_folders(course: Course, chapter: str) -> list[Path]:
    """Every shard of the last sharded run, checked to be all there."""
    found = sorted((course.root / ".classgrade" / chapter / "shards").glob("*-of-*"))
    counts = {int(p.name.split("-of-")[1]) for p in found}
    if len(counts) != 1:
        raise SystemExit(f"no shards of {chapter} to merge" if not counts else
                         f"shards of runs with different N ({sorted(counts)}) in .classgrade/{chapter}/shards/: "
                         "remove the older run's folders")
    shards = counts.pop()
    unfinished = [k for k in range(shards) if not (course.root / ".classgrade" / chapter / "shards" /
                                                   f"{k}-of-{shards}" / "shard.json").exists()]
    if unfinished:
        raise SystemExit(f"shards {unfinished} of {shards} have not finished (no shard.json): nothing merged")
    return [course.root / ".classgrade" / chapter / "shards" / f"{k}-of-{shards}" for k in range(shards)]


class GradebookWriter:
    """The single writer to the instructor's gradebook: executed notebooks in, one student at a time, as
    ``nbgrader autograde --no-execute`` reads them (it scores a notebook from its outputs as the executing run
    does), through nbgrader's own API in this process. Grading a class on one machine feeds it each submission as
    its worker finishes (:func:`grade_class`), so the gradebook fills while the others are still graded."""

    def __init__(self, course: Course, chapter: str) -> None:
        from nbgrader.apps import NbGraderAPI
        from traitlets.config import Config
        from traitlets.config.loader import PyFileConfigLoader

        self.course, self.chapter = course, chapter
        self.work = course.root / ".classgrade" / chapter
        self.staging = self.work / "merged"  # submitted/ as nbgrader reads it: <student>/<chapter>/
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging.mkdir(parents=True)
        self.log = self.work / "merge.log"
        self.log.unlink(missing_ok=True)
        # nbgrader runs `alembic` by name: from this environment, even when it is not activated.
        os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course.root)).load_config()
        config.merge(Config({"CourseDirectory": {"root": str(course.root), "submitted_directory": str(self.staging)},
                             "Execute": {"enabled": False}, "ClearOutput": {"enabled": False}}))
        self.api = NbGraderAPI(config=config)
        self.failed: list[str] = []  # not even their zero could be written
        self.refused: dict[str, str] = {}  # student -> why nbgrader refused the notebook (scored 0 instead)

    def add(self, executed: Path, student: str) -> None:
        """Score ``student``'s executed notebook (the folder ``executed/<student>/<chapter>/``) into the gradebook.
        A notebook nbgrader refuses (cell metadata or checksums edited, cells it cannot match) costs only its
        student: the released notebook failed on every graded cell, with nbgrader's reason, is scored instead."""
        shutil.copytree(executed / student, self.staging / student, dirs_exist_ok=True)
        result = self._autograde(student)
        if result.get("success"):
            return
        reason = _refusal(result.get("log", "") + result.get("error", ""))
        staged = self.course.notebook(self.staging, self.chapter, student)
        nbformat.write(_zero_notebook(self.course.notebook(self.course.release, self.chapter),
                                      self.course.notebook(self.course.release, self.chapter),
                                      f"refused: {reason}"), str(staged))
        if self._autograde(student).get("success"):
            self.refused[student] = reason
        else:
            self.failed.append(student)

    def _autograde(self, student: str) -> dict:
        result = self.api.autograde(self.chapter, student, force=True, create=True)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(result.get("log", "") + result.get("error", ""))
        return result

    def check(self) -> list[str]:
        """What went wrong, in one line each (the merge goes on for everyone else)."""
        return ([f"{student}: nbgrader refused the notebook ({reason}); scored 0" for student, reason
                 in sorted(self.refused.items())] +
                [f"{student}: not even a zero could be written to the gradebook; see {self.log}" for student
                 in self.failed])


def _refusal(log: str) -> str:
    """nbgrader's reason, from its log: the exception its traceback ends with (``RuntimeError: Inconsistent
    checksums for cell t2``), else its first error line, without the logger's prefix."""
    raised = [m.group(0) for m in re.finditer(r"^\s*\w+(?:Error|Exception): .+$", log, re.M)
              if "NbGraderException" not in m.group(0)]
    errors = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    text = raised[0] if raised else errors[0] if errors else "nbgrader could not score it"
    return re.sub(r"^\[[^\]]*\]\s*", "", text).strip()[:300]


def merge(root: str | Path, chapter: str, folders: list[Path] | None = None, *, progress=print,
          merged: tuple[GradebookWriter, set[str]] | None = None):
    """The single writer: every shard's executed notebooks into the gradebook (:class:`GradebookWriter`; those in
    ``merged`` are in already), then the grade of record where it differs, then the class report."""
    from coursekit import classreport

    course = Course.load(root)
    folders = folders if folders is not None else _shard_folders(course, chapter)
    work = course.root / ".classgrade" / chapter
    writer, done = merged if merged is not None else (None, set())
    outcomes: dict[str, Outcome] = {}
    (work / "records").mkdir(exist_ok=True)
    for folder in folders:
        for item in json.loads((folder / "shard.json").read_text())["outcomes"]:
            outcome = outcomes[item["student"]] = Outcome(**item)
            # The class's records stay across runs (the report is of the whole class), but never an earlier
            # run's record of a submission graded now.
            made = folder / "records" / f"{outcome.student}.json"
            kept = work / "records" / f"{outcome.student}.json"
            shutil.copy(made, kept) if made.exists() else kept.unlink(missing_ok=True)
            if outcome.student not in done:
                # Only the notebooks graded now are scored, so only their students' scores change.
                writer = writer or GradebookWriter(course, chapter)
                writer.add(folder / "executed", outcome.student)
    (work / "outcomes").mkdir(exist_ok=True)
    for outcome in outcomes.values():
        (work / "outcomes" / f"{outcome.student}.json").write_text(json.dumps(dataclasses.asdict(outcome)))
    refused = {o.student: o.detail for o in outcomes.values() if o.status == "refused"}  # not even run (refusal)
    refused.update(writer.refused if writer is not None else {})
    for student in writer.failed if writer is not None else []:
        refused[student] = "it could not be written to the gradebook"
    for student, reason in refused.items():  # the report and scores.csv say why; its record gives nothing
        outcomes[student].status, outcomes[student].detail = "refused", reason
        (work / "outcomes" / f"{student}.json").write_text(json.dumps(dataclasses.asdict(outcomes[student])))
        (work / "records" / f"{student}.json").unlink(missing_ok=True)
    if outcomes:
        write_records(course, chapter, sorted(outcomes), work, refused=refused)
    report = classreport.write(course, chapter, work)
    progress(report.summary())
    for line in writer.check() if writer is not None else []:
        progress(f"refused: {line}")
    return report


def write_records(course: Course, chapter: str, students: list[str], work: Path,
                  refused: dict[str, str] | None = None) -> None:
    """Make each student's grade of record the score of each graded cell where it differs from the kernel's:
    nbgrader's manual score (which it counts instead of the auto score), and a comment on the exercise's answer
    cell that says why. ``work/record_scores.json`` remembers what was written, so that a manual score written
    here that no longer differs is taken back (and one an instructor wrote is not)."""
    from nbgrader.api import Gradebook, MissingEntry

    from coursekit.record import Record, answer_cells, unreadable

    instructor = nbformat.read(str(course.notebook(course.source, chapter)), as_version=4)
    answer_of = answer_cells(instructor)
    ledger_path = work / "record_scores.json"
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else {}
    with Gradebook(course.db_url) as gradebook:
        for student in students:
            path = work / "records" / f"{student}.json"
            if student in (refused or {}):  # a refused notebook scores 0, whatever its answers would earn
                cells = unreadable(course.notebook(course.source, chapter), f"refused: {refused[student]}").cells
            elif path.exists():
                cells = Record.from_json(json.loads(path.read_text())).cells
            else:  # the record could not be made: nothing counts until it is
                cells = unreadable(course.notebook(course.source, chapter), "the grade of record could not be made").cells
            written, ledger[student] = ledger.get(student, {}), {}
            notes: dict[str, list[str]] = {answer: [] for answer in set(answer_of.values())}
            for cell in cells:
                try:
                    grade = gradebook.find_grade(cell.grade_id, chapter, chapter, student)
                except MissingEntry:
                    continue
                if cell.on_record and abs((grade.auto_score or 0.0) - cell.score) > 1e-9:
                    notes.setdefault(answer_of.get(cell.grade_id, ""), []).append(
                        f"{cell.grade_id}: {cell.score:g} of {cell.max_score:g} ({_failed_text(cell)}), where the "
                        f"notebook's run gave {grade.auto_score or 0:g}")
                    grade.manual_score, grade.needs_manual_grade = cell.score, False
                    ledger[student][cell.grade_id] = cell.score
                elif cell.grade_id in written and grade.manual_score == written[cell.grade_id]:
                    grade.manual_score = None
            for answer, lines in notes.items():
                try:
                    comment = gradebook.find_comment(answer, chapter, chapter, student)
                except MissingEntry:
                    continue
                if lines:
                    comment.manual_comment = (f"{RECORD_MARK}: your answer cells, graded on their own (as `python -m "
                                              "graders check` grades a file), decide these scores: " + "; ".join(lines))
                elif (comment.manual_comment or "").startswith(RECORD_MARK):
                    comment.manual_comment = None
        gradebook.db.commit()
    ledger_path.write_text(json.dumps(ledger, indent=1))


def _failed_text(cell) -> str:
    if not cell.failed:
        return "every check passed"
    return "did not pass " + ", ".join(cell.failed[:4]) + (" and more" if len(cell.failed) > 4 else "")


def grade_class(root: str | Path, chapter: str, *, jobs: int | None = None, students: list[str] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S, memory_mb: int | None = DEFAULT_MEMORY_MB,
                device: str | None = None, progress=print) -> list[Outcome]:
    """Grade on this machine and merge: one shard of one, each submission written to the gradebook as it is graded
    (by one thread of this process, the single writer)."""
    course = Course.load(root)
    shutil.rmtree(course.root / ".classgrade" / chapter / "shards", ignore_errors=True)
    graded: queue.Queue = queue.Queue()
    folder = shard_folder(course, chapter, 0, 1)
    written: set[str] = set()
    writers: list[GradebookWriter] = []

    def write_as_graded() -> None:
        writers.append(GradebookWriter(course, chapter))  # here: nbgrader's import runs beside the workers' start
        while (student := graded.get()) is not None:
            try:
                writers[0].add(folder / "executed", student)
                written.add(student)
            except Exception:  # noqa: BLE001 - merge() scores it again, and says so if it fails again
                pass

    thread = threading.Thread(target=write_as_graded, name="gradebook writer", daemon=True)
    thread.start()
    try:
        grade_shard(root, chapter, jobs=jobs, students=students, timeout=timeout, memory_mb=memory_mb,
                    device=device, progress=progress, on_graded=graded.put)
    finally:
        graded.put(None)
        thread.join()
    merge(root, chapter, [folder], progress=progress, merged=(writers[0], written) if writers else None)
    outcomes = course.root / ".classgrade" / chapter / "outcomes"  # as merged: a refused notebook says so there
    return [Outcome(**json.loads((outcomes / f"{o['student']}.json").read_text()))
            for o in json.loads((folder / "shard.json").read_text())["outcomes"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.classgrade", description=__doc__.splitlines()[0])
    parser.add_argument("chapter")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: every core)")
    parser.add_argument("--student", action="append", help="grade only this student (repeat for more)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per submission")
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help="data per grading process, in MiB (Linux; 0: no limit)")
    parser.add_argument("--device", default=None, help="the device the grade of record runs the checks on")
    parser.add_argument("--root", default=".", help="the course root (where nbgrader_config.py is)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--shard", metavar="K/N", help="grade only shard K of N (K from 0) and leave the gradebook alone")
    where.add_argument("--merge", action="store_true", help="merge every finished shard into the gradebook")
    args = parser.parse_args(argv)
    start = time.monotonic()
    options = dict(jobs=args.jobs, students=args.student, timeout=args.timeout, memory_mb=args.memory_mb or None,
                   device=args.device)
    if args.merge:
        merge(args.root, args.chapter)
        return 0
    if args.shard:
        shard, shards = parse_shard(args.shard)
        folder = grade_shard(args.root, args.chapter, shard=shard, shards=shards, **options)
        print(f"shard {shard} of {shards} graded in {time.monotonic() - start:.1f} s into {folder}; "
              f"when every shard has finished: python -m coursekit.classgrade {args.chapter} --merge")
        return 0
    outcomes = grade_class(args.root, args.chapter, **options)
    failed = [o for o in outcomes if o.status not in ("graded", "refused")]
    refused = [o for o in outcomes if o.status == "refused"]
    print(f"{len(outcomes)} submissions in {time.monotonic() - start:.1f} s; "
          f"{len(failed)} could not be run in a kernel (their grade is their record alone); "
          f"{len(refused)} refused (scored 0, the reason in scores.csv)")
    unconfined = unconfined_kernels(Path(args.root).resolve(), args.chapter)
    if unconfined:
        print(f"WARNING: {unconfined}")
    return 0


def unconfined_kernels(root: Path, chapter: str) -> str:
    """Why some kernel of this chapter's last run was NOT confined (its workers' zygote logs say so, with the reason;
    coursekit.kernel_sandbox), or "" when every kernel was."""
    said = []
    for log in sorted((root / ".classgrade" / chapter / "shards").rglob("zygote.log")):
        said += [line.split(": ", 1)[1] for line in log.read_text(errors="replace").splitlines()
                 if line.startswith("kernel ") and "kernel NOT confined" in line]
    if not said:
        return ""
    return (f"{len(said)} kernel(s) ran the students' code NOT confined by the operating system "
            f"({sorted(set(s.removeprefix('kernel NOT confined: ') for s in said))[0]}): "
            "a submission could read or change the class's files (COURSE_REQUIRE_CONFINEMENT=1 refuses to grade so)")


if __name__ == "__main__":
    sys.exit(main())
