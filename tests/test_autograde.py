"""coursekit.autograde: what nbgrader's autograde runs (the graded part only) and the judge it starts early."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import coursekit.autograde as autograde
from coursekit.autograde import NOT_RUN, RunGradedPartOnly, exercises_checked, uses_the_graders
from graders.judge_server import SOCKET_ENV
from tests.processes import niceness


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "solution": False, "grade": False, "locked": False,
                                     **nbgrader}
    return cell


# What the first graded cell reports: which judge the kernel was connected to before any cell asked for one
# ("shared": the one autograde started before the kernel; "own": one the kernel started), and where it listens.
_PROBE = ("import os, sys\njudge = sys.modules.get('graders.judge_server')\nclient = judge and judge._CLIENT\n"
          "own = bool(client and client._process and client._process.poll() is None)\n"
          "print('judge:', 'shared' if client and client._shared_stream else 'own' if own else 'none')\n"
          "print('socket:', os.environ.get('COURSE_JUDGE_SOCKET'))")


def _judges_listening_on(path: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"graders.judge_server" in command and path.encode() in command:
            found.append(int(pid))
    return found


@pytest.mark.parametrize("opening, judge_expected", [
    ("import graders\nx = 1", "shared"),   # a chapter: its opening cell imports the graders
    ("x = 1", "none"),                     # a notebook that never checks anything pays for no judge
])
def test_the_judge_is_started_before_the_kernel_only_where_the_graders_are_used(opening, judge_expected, monkeypatch):
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    nb = new_notebook(cells=[
        _cell(opening, locked=True, grade_id="opening"),
        _cell("raise SystemExit('a demonstration cell must not run')"),
        _cell(_PROBE, grade=True, grade_id="probe", points=1, locked=True),
    ])
    assert uses_the_graders(nb) is (judge_expected != "none")
    executed, _ = RunGradedPartOnly(timeout=60).preprocess(nb, {"metadata": {"path": "."}})
    opening_cell, demonstration, probe = executed.cells
    assert [o.get("text") for o in demonstration.outputs] == [NOT_RUN]
    printed = "".join(o.get("text", "") for o in probe.outputs)
    assert f"judge: {judge_expected}\n" in printed, printed
    assert SOCKET_ENV not in os.environ  # nbgrader's own environment is as it was
    if judge_expected == "shared":
        socket_path = re.search(r"socket: (\S+)", printed)[1]
        assert not Path(socket_path).parent.exists()  # its private folder is gone
        if Path("/proc").is_dir():  # and the judge ends by itself once its warm-up is over
            deadline = time.monotonic() + 60
            while _judges_listening_on(socket_path) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _judges_listening_on(socket_path)


def test_a_judge_shared_already_is_not_started_again(monkeypatch):
    """make grade's workers share one judge among their kernels: autograde there starts none of its own."""
    monkeypatch.setenv(SOCKET_ENV, "/nonexistent/worker-judge")
    monkeypatch.setattr(autograde.subprocess, "Popen", lambda *a, **k: pytest.fail("a second judge was started"))
    with autograde.judge_started_early(["sliding_window"]):
        assert os.environ[SOCKET_ENV] == "/nonexistent/worker-judge"
    assert os.environ[SOCKET_ENV] == "/nonexistent/worker-judge"


def test_the_judge_is_told_which_exercises_the_test_cells_check():
    """They decide whether its runners need optimizers warmed (about 1 s), so only test cells count, hidden
    ones included, each exercise once, in order; an answer cell that calls check counts for nothing."""
    nb = new_notebook(cells=[
        _cell("import graders", locked=True, grade_id="opening"),
        _cell("check('sliding_window', globals())", solution=True, grade_id="answer"),
        _cell('check("is_contiguous", globals(), "a")\ncheck( "pad_collate" , globals())', grade=True,
              grade_id="t1", points=1, locked=True),
        _cell("### BEGIN HIDDEN TESTS\ncheck(\"is_contiguous\", globals(), 'b')\n### END HIDDEN TESTS",
              grade=True, grade_id="t2", points=1, locked=True),
        _cell("check('lr_range_test', globals())"),  # a demonstration cell
    ])
    assert exercises_checked(nb) == ["is_contiguous", "pad_collate"]


class _Provisioner:
    def __init__(self, pgid: int) -> None:
        self.pgid = pgid


class _KernelManager:
    def __init__(self, pgid: int) -> None:
        self.provisioner = _Provisioner(pgid)


@pytest.mark.parametrize("cell, kernel, lowered", [
    (_cell("while True: pass", solution=True, grade_id="answer"), "while True: pass", True),  # an endless loop
    (_cell("check('x', globals())", grade=True, grade_id="t", points=1, locked=True),
     "import time; time.sleep(30)", False),  # a check that waits for its runner: the kernel holds no core
    (_cell("def f(): return 1", solution=True, grade_id="answer"), None, False),  # done at once
    (_cell("import torch", locked=True, grade_id="opening"), "while True: pass", False),  # the instructor's imports
])
def test_a_kernel_whose_cell_keeps_a_core_busy_is_lowered_to_spare_cpu(cell, kernel, lowered, monkeypatch):
    """An answer cell that loops holds a core until nbgrader's cell timeout: once its kernel has used
    LOWER_PRIORITY_AFTER_S CPU-seconds on the cell it gets only spare CPU (make grade grades on every core). A cell
    that only waits as long (its check's runner working, or a busy machine) is not lowered: a lowered kernel stays
    so for the rest of the notebook. The opening cell is never taken for one."""
    from nbgrader.preprocessors import Execute

    calls: list = []
    monkeypatch.setattr(autograde, "LOWER_PRIORITY_AFTER_S", 0.3)
    monkeypatch.setattr(autograde, "lower_priority", lambda group: calls.append(group))
    process = None if kernel is None else subprocess.Popen([sys.executable, "-c", kernel], start_new_session=True)

    def the_cell_runs(self, cell, resources, index):
        time.sleep(0.0 if kernel is None else 1.5)
        return cell, resources

    monkeypatch.setattr(Execute, "preprocess_cell", the_cell_runs)
    runner = RunGradedPartOnly()
    runner.km = _KernelManager(process.pid if process else os.getpid())
    try:
        assert runner.preprocess_cell(cell, {}, 0) == (cell, {})
        time.sleep(0.5)  # a watch not stopped would lower it now
    finally:
        if process:
            process.kill()
            process.wait()
    assert calls == ([process.pid] if lowered else [])


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities on this system (Windows)")
def test_lowering_a_kernel_lowers_its_session_and_nothing_else(monkeypatch):
    """A kernel leads its own session (so its own Linux autogroup): both its nice and its session's become 19."""
    import threading

    monkeypatch.setattr(autograde, "LOWER_PRIORITY_AFTER_S", 0.3)
    kernel = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        ours, before = niceness(os.getpid()), niceness(kernel.pid)
        done = threading.Event()
        watch = threading.Thread(target=autograde._lower_when_busy, args=(_KernelManager(kernel.pid), done))
        watch.start()
        watch.join(timeout=20)  # it returns once it has lowered the kernel
        assert not watch.is_alive(), "a kernel that kept a core busy for 20 s was not lowered"
        # Its session's nice exists where it has an autogroup of its own (a new session gets one whenever Linux has
        # autogroups), whether or not ours has one: CI's pytest runs in the root autogroup, which shows none.
        assert niceness(kernel.pid) == (19, 19 if before[1] is not None else None)
        assert niceness(os.getpid()) == ours
        autograde._lower_when_busy(_KernelManager(None), done)  # no kernel (yet): nothing to do, no error
    finally:
        kernel.kill()
        kernel.wait()
