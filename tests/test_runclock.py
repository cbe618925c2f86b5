"""graders.runclock: a grading process's time limit counts the time it could run, so a busy machine fails no
correct answer, and an endless loop or a wait for what never comes still ends.

Starvation is made for real: the process under test and ``HOGS`` spinning processes share one CPU (affinity), each
in a session of its own (Linux shares CPU between sessions first, where autogroups are on).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest

from graders import runclock
from graders.isolation import Limits, Runner, StudentSource
from graders.outcomes import StudentCodeError
from graders.runclock import RunClock
from tests.processes import descendants

pytestmark = pytest.mark.skipif(not runclock._HAS_SCHEDSTAT or not hasattr(os, "sched_setaffinity"),
                                reason="no per-thread scheduler statistics here (Linux /proc): the wall clock "
                                       "is the clock, as the module says")

HOGS = 3  # with the one under test: a quarter of the CPU each
SPIN = "while True: pass"


def _python(code: str, cpu: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    os.sched_setaffinity(process.pid, {cpu})
    return process


@pytest.fixture
def one_busy_cpu():
    """A CPU this test's processes share with HOGS spinning ones; yields the CPU's number."""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    hogs = [_python(SPIN, cpu) for _ in range(HOGS)]
    try:
        yield cpu
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@contextlib.contextmanager
def _sleeping_parent_of_spinners(children: int, cpu: int, parent_too: bool):
    """A sleeping process, in a session of its own, with ``children`` spinning ones on ``cpu`` (``parent_too``:
    pinned there itself first, so they inherit it), once they run; all are killed after."""
    pin = "os.sched_setaffinity(0, {%d})\n" % cpu if parent_too else ""
    code = ("import os, subprocess, sys, time\n" + pin +
            f"workers = [subprocess.Popen([sys.executable, '-c', {SPIN!r}]) for _ in range({children})]\n"
            f"for worker in workers:\n    os.sched_setaffinity(worker.pid, {{{cpu}}})\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(descendants(parent.pid)) < children and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(descendants(parent.pid)) >= children, "its children never started"
        yield parent
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()


def _measure(process: subprocess.Popen, seconds: float) -> RunClock:
    clock = RunClock(process.pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        clock.running()
        time.sleep(0.05)
    clock.sample()
    return clock


def test_a_sleeping_process_runs_all_the_time_and_uses_no_cpu():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.5)  # its interpreter has started
        clock = _measure(sleeper, 1.0)
        assert clock.wall() - clock.running() < 0.1, (clock.wall(), clock.running())
        assert clock.cpu() < 0.1
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_process_that_waits_for_a_cpu_is_not_charged_for_the_wait(one_busy_cpu):
    spinner = _python(SPIN, one_busy_cpu)
    try:
        clock = _measure(spinner, 2.0)
        # A quarter of the CPU (one of HOGS + 1 sessions): running time is about its CPU time, far below the wall's.
        assert clock.running() < 0.6 * clock.wall(), (clock.running(), clock.wall())
        assert abs(clock.running() - clock.cpu()) < 0.35, (clock.running(), clock.cpu())
    finally:
        spinner.kill()
        spinner.wait()


def test_once_lowered_a_process_is_charged_for_its_waits(one_busy_cpu):
    """Lowered (a likely endless loop), a process waits for a CPU because it was meant to: a loop still ends near
    its limit on a busy machine. What it had been credited before stays; CPU time stops at what it had used."""
    spinner = _python(SPIN, one_busy_cpu)
    try:
        clock = _measure(spinner, 1.0)
        credited = clock.wall() - clock.running()
        assert credited > 0.4, "not starved: the test proves nothing"
        clock.lowered()
        used = clock.cpu()
        time.sleep(1.0)
        assert abs(clock.wall() - clock.running() - credited) < 0.1, (clock.wall(), clock.running(), credited)
        assert clock.cpu() == used
    finally:
        spinner.kill()
        spinner.wait()


def test_a_starved_child_counts_while_its_parent_sleeps(one_busy_cpu):
    """A DataLoader's main thread sleeps while its workers wait for a CPU: the tree's most-starved thread counts."""
    with _sleeping_parent_of_spinners(1, one_busy_cpu, parent_too=False) as parent:
        clock = _measure(parent, 2.0)
        assert clock.running() < 0.7 * clock.wall(), (clock.running(), clock.wall())
        assert clock.cpu() > 0.2  # the child's CPU time is the tree's


def test_workers_that_wait_for_each_other_are_charged_for_it():
    """Three looping workers on one CPU wait for each other (each 2/3 of the time), not for a busy machine: the
    tree is charged at least the CPU time it used, so a DataLoader whose workers all hang still ends near its
    limit. (Other tests may load that CPU too: then it is credited what they took, never more.)"""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    with _sleeping_parent_of_spinners(3, cpu, parent_too=True) as parent:
        clock = _measure(parent, 2.0)
        assert clock.cpu() > 0.2, "the workers did not run: the test proves nothing"
        assert clock.running() >= clock.cpu() - 0.05, (clock.running(), clock.cpu(), clock.wall())


def test_a_starved_process_still_ends_at_the_wall_cap(one_busy_cpu, monkeypatch):
    monkeypatch.setattr(runclock, "WALL_CAP_FACTOR", 2.0)
    spinner = _python(SPIN, one_busy_cpu)
    try:
        with contextlib.suppress(OSError), open(f"/proc/{spinner.pid}/autogroup", "w") as f:
            f.write("19")  # its session at the lowest priority (where Linux has autogroups): about 1.5 % of the CPU
        os.setpriority(os.PRIO_PROCESS, spinner.pid, 19)
        clock = RunClock(spinner.pid)
        while not clock.expired(1.0):
            time.sleep(0.05)
        assert 1.9 < clock.wall() < 4, clock.wall()  # at 2 s; this test's own loop may wait for a CPU too
        assert clock.wall() - clock._waited < 1.0
        assert "waiting for a CPU" in runclock.starved_note(clock, 1.0)
    finally:
        spinner.kill()
        spinner.wait()


def test_without_scheduler_statistics_the_clock_is_the_wall_clock(monkeypatch):
    monkeypatch.setattr(runclock, "_HAS_SCHEDSTAT", False)
    clock = RunClock(os.getpid())
    time.sleep(0.3)
    assert not clock.exact and abs(clock.running() - clock.wall()) < 0.01 and clock.cpu() >= 0.3
    assert not clock.expired(1.0) and runclock.starved_note(clock, 1.0) == ""


ANSWER = """\
import time


def needs_cpu(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return "done"


def waits(seconds):
    time.sleep(seconds)
    return "done"
"""


@pytest.fixture
def runner(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text(ANSWER)
    runner = Runner(StudentSource.from_file(str(path), ["needs_cpu", "waits"]), seed=0, device="cpu",
                    limits=Limits(timeout=1.5))
    runner.ready()
    yield runner
    runner.close()


def test_an_answer_starved_by_a_busy_machine_is_not_timed_out(runner, one_busy_cpu):
    """0.8 CPU-seconds on a quarter of a CPU take about 3.2 s on the wall clock: over a 1.5 s wall-clock limit
    (CI's failure of 08's reference ddp_accumulation), within a 1.5 s limit of running time."""
    os.sched_setaffinity(runner.process.pid, {one_busy_cpu})
    start = time.monotonic()
    assert runner.request(("call", "needs_cpu", (0.8,), {}, False)) == "done"
    assert time.monotonic() - start > 1.5, "not starved: the test proves nothing"
    assert not runner.lowered  # 0.8 CPU-seconds are under LOWER_PRIORITY_AFTER_S


@pytest.mark.parametrize("call", [("needs_cpu", 100.0), ("waits", 100.0)])
def test_an_answer_that_never_ends_still_ends_at_its_limit(runner, call):
    start = time.monotonic()
    with pytest.raises(StudentCodeError) as stopped:
        runner.request(("call", call[0], (call[1],), {}, False))
    assert stopped.value.error.kind == "timeout"
    # At its limit of running time; a busy test machine may starve the spinner (never past the wall cap).
    assert 1.4 < time.monotonic() - start < 1.5 * runclock.WALL_CAP_FACTOR + 1


RANKS_ANSWER = """\
import time

import torch.distributed as dist


def busy_average(t):
    start = time.process_time()
    while time.process_time() - start < 0.8:
        pass
    dist.all_reduce(t)
    return t / dist.get_world_size()
"""


def test_ranks_starved_by_a_busy_machine_are_not_timed_out(tmp_path, one_busy_cpu, monkeypatch):
    """Two ranks on one busy CPU (with HOGS others): 0.8 CPU-seconds each take about 4 s on the wall clock, over
    their 1.5 s limit had it been a wall-clock one (CI's failure of 08's ddp_accumulation); neither is lowered."""
    from graders import _rank_demos as demos
    from graders import ranks

    pinned: list = []

    class Pinned(ranks._RankRunner):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            os.sched_setaffinity(self.process.pid, {one_busy_cpu})
            pinned.append(self)

    monkeypatch.setattr(ranks, "_RankRunner", Pinned)
    path = tmp_path / "answer.py"
    path.write_text(RANKS_ANSWER)
    source = StudentSource.from_file(str(path), ["busy_average"])
    start = time.monotonic()
    run = ranks.run_on_ranks(source, demos.call_on_rank, 2, [("busy_average", 1.0), ("busy_average", 3.0)],
                             timeout=1.5)
    assert time.monotonic() - start > 1.5, "not starved: the test proves nothing"
    assert run.passed, run.problem()
    assert [r["out"].tolist() for r in run.values()] == [[2.0] * 4] * 2
    assert len(pinned) == 2 and not any(runner.lowered for runner in pinned)
