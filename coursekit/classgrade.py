"""Autograde a whole class in parallel, with one writer to the instructor's gradebook (issue 14, first part).

``python -m coursekit.classgrade CHAPTER [--jobs N] [--student ID ...]`` (``make grade CHAPTER=...``), run in
the course root (where nbgrader_config.py is), after ``nbgrader generate_assignment CHAPTER``:

1. **Workers.** Each submission in ``submitted/<student>/<CHAPTER>/`` is autograded by plain ``nbgrader
   autograde`` on one of N workers (default: every core). A worker has a gradebook of its own (a copy of the
   instructor's) and an autograded folder of its own, so no two processes ever write one database; its
   kernels talk over IPC sockets in a folder of its own, never over TCP ports that two kernels could both
   pick; every kernel runs with one thread (``OMP_NUM_THREADS=1``), and a submission gets ``--timeout``
   seconds in all, after which its whole process group is killed.
2. **Zero, never stale.** A submission whose grading failed (its kernel died: ``os._exit``, a segfault,
   memory; it ran out of time; nbgrader refused it) gets a notebook whose every graded cell shows the reason
   as an error: it scores 0 on every cell, whatever an earlier run had recorded (nbgrader alone keeps the old
   scores when a kernel dies).
3. **One writer.** ``nbgrader autograde --no-execute`` then reads every worker's executed notebook (and the
   zero notebooks) into the instructor's gradebook in a single process. It scores a notebook from its outputs
   exactly as the executing run does, so the grades are those of a serial ``nbgrader autograde``.

What each submission came to is printed and returned (:class:`Outcome`); the workers' logs stay in
``.classgrade/<CHAPTER>/``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

DEFAULT_TIMEOUT_S = 600.0  # one submission, all of its cells


@dataclasses.dataclass
class Outcome:
    student: str
    status: str  # "graded", "kernel died", "timed out", "failed"
    seconds: float
    detail: str = ""


def submissions(root: Path, chapter: str, students: list[str] | None = None) -> list[str]:
    """The students with a submission of ``chapter`` (``submitted/<student>/<chapter>/<chapter>.ipynb``)."""
    found = sorted(p.parent.parent.name for p in (root / "submitted").glob(f"*/{chapter}/{chapter}.ipynb"))
    if students:
        missing = sorted(set(students) - set(found))
        if missing:
            raise SystemExit(f"no submission of {chapter} from: {', '.join(missing)}")
        found = [s for s in found if s in students]
    return found


def _nbgrader(*args: str, cwd: Path, env: dict[str, str], log: Path, timeout: float | None = None) -> int | None:
    """Run nbgrader in a process group of its own; its return code, or None when it ran out of time (then the
    whole group, kernel included, is killed)."""
    # nbgrader runs `alembic` by name: from this environment, even when it is not activated.
    env = {**env, "PATH": os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])}
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return None
        except BaseException:  # Ctrl-C: leave nothing running
            _kill_group(process)
            raise


def _kill_group(process: subprocess.Popen) -> None:
    if hasattr(os, "killpg"):
        os.killpg(process.pid, signal.SIGKILL)  # nbgrader and its kernel
    else:  # Windows: no process groups here; the kernel ends when nbgrader's pipes close
        process.kill()
    process.wait()


def _grade_one(root: Path, chapter: str, student: str, worker: Path, sockets: Path, timeout: float) -> Outcome:
    """Autograde one submission on a worker: its own gradebook, autograded folder and kernel sockets."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log = worker / f"{student}.log"
    start = time.monotonic()
    code = _nbgrader("autograde", chapter, "--student", student, "--force",
                     f"--CourseDirectory.root={root}",
                     f"--CourseDirectory.db_url=sqlite:///{worker / 'gradebook.db'}",
                     f"--CourseDirectory.autograded_directory={worker / 'autograded'}",
                     "--KernelManager.transport=ipc", f"--KernelManager.ip={sockets / 'kernel'}",
                     cwd=root, env=env, log=log, timeout=timeout)
    seconds = time.monotonic() - start
    executed = worker / "autograded" / student / chapter / f"{chapter}.ipynb"
    if code == 0 and executed.exists():
        return Outcome(student, "graded", seconds)
    text = log.read_text(errors="replace") if log.exists() else ""
    if code is None:
        return Outcome(student, "timed out", seconds, f"still running after {timeout:g} s; stopped")
    if "DeadKernelError" in text or "Kernel died" in text:
        return Outcome(student, "kernel died", seconds, "the notebook's kernel died (os._exit, a crash, or memory)")
    last = [line for line in text.splitlines() if "ERROR" in line]
    return Outcome(student, "failed", seconds, last[0][:300] if last else f"nbgrader exited with {code}")


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


def grade_class(root: Path, chapter: str, *, jobs: int | None = None, students: list[str] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S, progress=print) -> list[Outcome]:
    root = Path(root).resolve()
    names = submissions(root, chapter, students)
    gradebook = root / "gradebook.db"
    if not gradebook.exists():
        raise SystemExit(f"no gradebook in {root}: run `nbgrader generate_assignment {chapter}` first")
    work = root / ".classgrade" / chapter
    shutil.rmtree(work, ignore_errors=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names) or 1))
    workers = [work / f"worker{k}" for k in range(jobs)]
    # IPC socket paths must stay short (about 100 bytes at most), so they live in a short temporary folder.
    sockets = [Path(tempfile.mkdtemp(prefix="cg")) for _ in range(jobs)]
    outcomes: dict[str, Outcome] = {}
    try:
        for worker in workers:
            worker.mkdir(parents=True)
            shutil.copy(gradebook, worker / "gradebook.db")
        free = list(range(jobs))
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            pending = {}
            queue = list(names)
            while queue or pending:
                while queue and free:
                    k, student = free.pop(), queue.pop(0)
                    pending[pool.submit(_grade_one, root, chapter, student, workers[k], sockets[k], timeout)] = k
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    free.append(pending.pop(future))
                    outcome = future.result()
                    outcomes[outcome.student] = outcome
                    progress(f"[{len(outcomes)}/{len(names)}] {outcome.student}: {outcome.status} "
                             f"({outcome.seconds:.1f} s){' - ' + outcome.detail if outcome.detail else ''}"
                             f"{_eta(list(outcomes.values()), len(names), jobs)}")
        staging = work / "executed"
        for student in names:
            target = staging / student / chapter / f"{chapter}.ipynb"
            target.parent.mkdir(parents=True)
            submitted = root / "submitted" / student / chapter
            if (submitted / "timestamp.txt").exists():
                shutil.copy(submitted / "timestamp.txt", target.parent / "timestamp.txt")
            outcome = outcomes[student]
            if outcome.status == "graded":
                executed = next(w for w in workers if (w / "autograded" / student / chapter).exists())
                shutil.copy(executed / "autograded" / student / chapter / f"{chapter}.ipynb", target)
            else:
                release = root / "release" / chapter / f"{chapter}.ipynb"
                nbformat.write(_zero_notebook(submitted / f"{chapter}.ipynb", release, f"not graded: {outcome.detail}"),
                               str(target))
        # Only the notebooks just graded are in the staging folder, so only their scores change.
        merge = ["autograde", chapter, "--no-execute", "--force", f"--CourseDirectory.root={root}",
                 f"--CourseDirectory.submitted_directory={staging}"]
        code = _nbgrader(*merge, cwd=root, env=dict(os.environ), log=work / "merge.log")
        if code != 0:
            raise SystemExit(f"merging into the gradebook failed; see {work / 'merge.log'}")
    finally:
        for folder in sockets:
            shutil.rmtree(folder, ignore_errors=True)
    return [outcomes[s] for s in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.classgrade", description=__doc__.splitlines()[0])
    parser.add_argument("chapter")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: every core)")
    parser.add_argument("--student", action="append", help="grade only this student (repeat for more)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per submission")
    parser.add_argument("--root", default=".", help="the course root (where nbgrader_config.py is)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    outcomes = grade_class(Path(args.root), args.chapter, jobs=args.jobs, students=args.student, timeout=args.timeout)
    failed = [o for o in outcomes if o.status != "graded"]
    print(f"{len(outcomes)} submissions in {time.monotonic() - start:.1f} s; "
          f"{len(failed)} scored 0 because they could not be graded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
