"""nbgrader's autograde runs the graded part of a chapter only: the opening cell, the answers, the tests.

A chapter's demonstration cells (every code cell nbgrader knows nothing of, and any cell a student added)
train models, time loops and start processes: autograding a whole chapter cost up to 3.2 times a trivial
notebook (issue 14). They cannot change a score: a graded cell calls ``check`` on the answer cells' names
only, and the grade of record (``coursekit.record``) is made from the opening cell and the answer cells alone,
as ``python -m graders check`` grades a file. So while autograding they are not run; each gets a one-line
output saying so, which the feedback shows. The opening cell is a locked nbgrader cell, so autograde also
restores it if a student edited it (nbgrader's OverwriteCells), as the grade of record does.

The check cells' judge (the clean process that makes their verdicts, a second torch import) is started here,
before the kernel, and the kernel finds it through ``$COURSE_JUDGE_SOCKET`` (:mod:`graders.judge_server`'s
shared mode): its import then runs beside the kernel's start and the opening cell instead of inside the first
check (in chapter 01 the first check cell went from 2.4 s to 0.9 s on a 2-core laptop when the kernel started
its own judge as it started; starting it before the kernel gains the kernel's start, about 0.45 s). Where no
judge can be shared (no Unix sockets: Windows), or one is shared already (``make grade``'s workers), the
kernel starts or finds its own as it starts.

``nbgrader validate`` (the student's Validate button) and JupyterLab still run every cell.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import Execute

from graders.isolation import LOWER_PRIORITY_AFTER_S, lower_priority

NOT_RUN = "(not run while autograding: a demonstration cell; graded cells use only the opening cell and your answers)\n"


def is_demonstration(cell) -> bool:
    """A code cell that is not the opening cell, an answer or a test (a student's own added cells too)."""
    return cell.cell_type == "code" and not (utils.is_solution(cell) or utils.is_grade(cell) or utils.is_locked(cell))


# Run by the kernel as it starts (IPython's exec_lines): no name is left in the student's namespace.
START_JUDGE = '__import__("graders.judge_server", fromlist=["client"]).client().start()'


class RunGradedPartOnly(Execute):
    """nbgrader's Execute (its configuration applies: timeouts, kernel), skipping demonstration cells; the
    kernel starts its judge as it starts."""

    def preprocess(self, nb, resources=None, km=None):
        if not uses_the_graders(nb):
            return super().preprocess(nb, resources, km)
        start_judge = f"--IPKernelApp.exec_lines={START_JUDGE}"
        if start_judge not in self.extra_arguments:
            self.extra_arguments = [*self.extra_arguments, start_judge]
        with judge_started_early(exercises_checked(nb)):
            return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if is_demonstration(cell):
            cell.outputs = [new_output("stream", name="stdout", text=NOT_RUN)]
            cell.execution_count = None
            return cell, resources
        if utils.is_locked(cell):  # the opening cell: the instructor's imports, which may take seconds on a laptop
            return super().preprocess_cell(cell, resources, index)
        # An answer (or test) cell whose kernel has used a few CPU-seconds is most likely an endless loop, which
        # holds a core until the cell times out: its kernel then gets only the CPU nothing else wants (make grade
        # grades a submission on every core; graders.isolation.lower_priority). CPU-seconds, not wall-clock ones
        # (graders.runclock): a cell that waits for its check, or for a CPU on a busy machine, is never lowered,
        # and a lowered kernel stays so for the rest of the notebook. The timeout itself is unchanged.
        done = threading.Event()
        lowering = threading.Thread(target=_lower_when_busy, args=(self.km, done), daemon=True)
        lowering.start()
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            done.set()


def _lower_when_busy(km, done: threading.Event) -> None:
    from graders.runclock import SAMPLE_S, RunClock

    group = getattr(getattr(km, "provisioner", None), "pgid", None)  # a kernel leads its own process group
    if not group:
        return
    clock = RunClock(group)
    while not done.wait(SAMPLE_S):
        if clock.cpu() > LOWER_PRIORITY_AFTER_S:
            lower_priority(group)
            return


def uses_the_graders(nb) -> bool:
    """Whether a cell of the instructor's (the opening cell, a test) imports the graders: only then is a judge
    worth its torch import."""
    return any(_IMPORTS_GRADERS.search(cell.source) for cell in nb.cells
               if cell.cell_type == "code" and (utils.is_grade(cell) or utils.is_locked(cell)))


def exercises_checked(nb) -> list[str]:
    """The exercises the instructor's test cells check (``check("id", ...)``), in order, each once."""
    found = [m[1] for cell in nb.cells if cell.cell_type == "code" and utils.is_grade(cell)
             for m in _CHECK_CALL.finditer(cell.source)]
    return list(dict.fromkeys(found))


_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""")
_IMPORTS_GRADERS = re.compile(r"^\s*(from|import)\s+graders\b", re.M)


@contextlib.contextmanager
def judge_started_early(exercises: list[str]):
    """A judge for the kernel started next, listening before that kernel exists; told to stop (its stdin closes)
    when the notebook is done. It cleans up after itself, so nobody waits for it to end."""
    from graders.judge_server import SOCKET_ENV

    if os.environ.get(SOCKET_ENV) or not hasattr(socket, "AF_UNIX"):
        yield
        return
    folder = tempfile.mkdtemp(prefix="cj")  # private (0700), and short: a socket path holds about 100 bytes
    path = os.path.join(folder, "judge")
    hint = ["--exercises", ",".join(exercises)] if exercises else []
    judge = subprocess.Popen([sys.executable, "-m", "graders.judge_server", "--listen", path, *hint], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    threading.Thread(target=judge.wait, daemon=True).start()  # collected when it ends, never waited for
    os.environ[SOCKET_ENV] = path  # the kernel inherits nbgrader's environment
    try:
        yield
    finally:
        os.environ.pop(SOCKET_ENV, None)
        with contextlib.suppress(OSError):
            judge.stdin.close()
        shutil.rmtree(folder, ignore_errors=True)
