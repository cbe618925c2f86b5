"""The clocks a grading process's limits count on: its running time and its CPU time, not the wall clock.

A limit counted on the wall clock fails a correct answer on a busy machine. CI's run of 78273ed (about 2.7x this
machine's times, 1908 s in all) gave chapter 08's reference ``ddp_accumulation`` 0/3: its two ranks, lowered to
nice 19 after 3 wall-clock seconds beside the other pytest workers, got almost no CPU (nice 19 beside nice 0 gets
about 1.5 % of a core) and "did not finish within 10 s". ``make grade``, a submission on every core, is that
busy machine by design. So:

- **running time** (the deadline): wall time less the time the process was ready to run but waited for a CPU:
  Linux's own account, ``run_delay`` in ``/proc/<pid>/task/<tid>/schedstat`` (which also counts a cgroup's CPU-quota
  throttling), and, for a thread runnable now, what of the interval it did not run (``sample``). Of one interval,
  the most that any thread of the process tree waited is taken off (a DataLoader's main thread sleeps while its
  starved workers wait), up to the share of the CPUs that the tree did not use itself (workers that all loop, more
  of them than CPUs, wait for each other: that is their own doing). Sleeping, waiting on a pipe or a collective counts in full:
  an answer that waits for what never comes still ends at its limit. So that a process starved for ever still
  ends, the wall clock stops it at ``WALL_CAP_FACTOR`` times its limit. Once a process is lowered (``lowered``:
  it used LOWER_PRIORITY_AFTER_S CPU-seconds on one request, which no correct answer does), its waits are what was
  intended and count in full: a loop still ends near its limit on a busy machine.
- **CPU time** (when to lower a process's priority): what the process tree ran, summed over its threads. A
  check that waits holds no core; an endless loop does.

Elsewhere (no ``/proc``: macOS, Windows) both are the wall clock, as before.
"""

from __future__ import annotations

import contextlib
import os
import time

SAMPLE_S = 0.2  # /proc is read at most this often (a tree of a few processes: well under a millisecond)
READ_S = 0.01  # a reading of the tree takes well under a millisecond unless the judge is kept from its CPU
WALL_CAP_FACTOR = 6.0  # a limit of 10 s of running time ends, starved or not, after 60 s on the wall clock

_HAS_SCHEDSTAT = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat")


def _threads_of(pid: int) -> dict[tuple[int, int], tuple[int, int, bool]]:
    """(pid, tid) -> (nanoseconds on a CPU, nanoseconds waited for one, runnable now) of every thread of ``pid``.

    The state comes from ``status``, not ``stat``: reading ``stat`` waits for a process that is starting a program
    (exec) to finish, which a starved one took 2.1 s to do (measured: a nice-19 process on a CPU shared with three
    others)."""
    found: dict[tuple[int, int], tuple[int, int, bool]] = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                on_cpu, waited = _schedstat(pid, int(tid))
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    runnable = "\nState:\tR" in f.read(400)
                found[pid, int(tid)] = on_cpu, waited, runnable
    return found


def _schedstat(pid: int, tid: int) -> tuple[int, int]:
    """Nanoseconds thread ``tid`` of ``pid`` has run, and waited for a CPU (raises OSError when it is gone)."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        on_cpu, waited = f.read().split()[:2]
    return int(on_cpu), int(waited)


def _main_thread(pid: int) -> dict[tuple[int, int], tuple[int, int, bool]] | None:
    try:
        return {(pid, pid): (*_schedstat(pid, pid), False)}
    except (OSError, ValueError):
        return None


def children(pid: int | str) -> list[int]:
    """The processes whose parent is ``pid`` (one of its threads; ``"self"``: this process), from the kernel's own
    lists; [] when it is gone."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/task/{tid}/children") as f:
                found.extend(int(child) for child in f.read().split())
    return found


def _tree(pid: int) -> dict[tuple[int, int], tuple[int, int, bool]]:
    """Every thread of ``pid`` and of the processes below it (the kernel's list of each thread's children: no
    walk of all of /proc, which would wait on any process of the machine that is starting a program)."""
    threads: dict[tuple[int, int], tuple[int, int, bool]] = {}
    queue, seen = [pid], {pid}
    while queue:
        process = queue.pop()
        threads.update(_threads_of(process))
        for child in children(process):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return threads


class RunClock:
    """Started at creation, for the process ``pid`` and all below it (read from the judge).

    ``running()``: seconds of running time (see the module); ``cpu()``: CPU-seconds the tree used;
    ``expired(limit)``: running time or the wall cap has reached ``limit``; ``wall()``.
    """

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.started = self._sampled_at = time.monotonic()
        self._waited = 0.0  # seconds of wall time taken off: the tree was starved
        self._cpu = 0.0
        self._frozen_cpu: float | None = None  # once lowered: what it had used then
        self._debts: dict[tuple[int, int], float] = {}  # waits counted before the kernel reported them
        self.exact = bool(_HAS_SCHEDSTAT and pid)
        # Only the main thread is read now (one small file, about 10 us: most requests take under a millisecond,
        # hundreds to a check); the whole tree first at the first sample, SAMPLE_S in, its other threads counted
        # from then.
        self._threads: dict | None = _main_thread(pid) if self.exact else None
        try:
            self._cpus = len(os.sched_getaffinity(pid or 0))
        except (AttributeError, OSError):
            self._cpus = os.cpu_count() or 1

    def lowered(self) -> None:
        """The process was given the lowest priority (it used LOWER_PRIORITY_AFTER_S CPU-seconds: most likely an
        endless loop): from now on its waits for a CPU are what was intended, and count as running time."""
        if self.exact:
            self.sample()
            self._frozen_cpu = self._cpu
        self.exact = False

    def wall(self) -> float:
        return time.monotonic() - self.started

    def sample(self) -> None:
        """Read the tree now (``running``/``cpu`` do when SAMPLE_S has passed).

        The kernel adds a wait to ``run_delay`` only when the thread gets a CPU again, so a thread starved now has
        not reported its wait yet: a thread runnable at the reading is taken to have waited for what of the
        interval it did not run, a debt that the wait it reports later pays off first (never counted twice).

        A reading that took longer than READ_S (the judge itself waited for a CPU meanwhile) does not say when its
        figures were taken: it is dropped, and the next one covers both intervals."""
        if not self.exact:
            self._sampled_at = time.monotonic()
            return
        began = time.monotonic()
        threads = _tree(self.pid)  # type: ignore[arg-type]
        now = time.monotonic()
        if now - began > READ_S and self._threads is not None:
            return
        interval = now - self._sampled_at
        if interval <= 0:  # read twice within the clock's resolution: nothing to add
            return
        if self._threads is None:
            self._threads, self._sampled_at = threads, now
            return
        most = 0.0
        cpu = 0
        debts: dict[tuple[int, int], float] = {}
        for key, (on_cpu, waited, runnable) in threads.items():
            before = self._threads.get(key)
            if before is None:  # a thread first seen now counts from now
                continue
            ran = max(on_cpu - before[0], 0)
            cpu += ran
            reported = max(waited - before[1], 0) / 1e9
            debt = self._debts.get(key, 0.0)
            new, debt = max(reported - debt, 0.0), max(debt - reported, 0.0)
            if runnable:
                pending = max(interval - ran / 1e9 - new, 0.0)
                new, debt = new + pending, debt + pending
            if debt:
                debts[key] = debt
            most = max(most, new)
        # What the tree waited while it kept the machine's CPUs busy itself (more threads spinning than CPUs: a
        # DataLoader whose workers all loop) is its own doing, not a busy machine's: at most the share of the
        # machine it did not use is taken off.
        self._waited += min(most, interval * max(0.0, 1.0 - cpu / 1e9 / (interval * self._cpus)))
        self._cpu += cpu / 1e9
        self._threads, self._debts, self._sampled_at = threads, debts, now

    def _fresh(self) -> None:
        if time.monotonic() - self._sampled_at >= SAMPLE_S:
            self.sample()

    def running(self) -> float:
        self._fresh()
        return self.wall() - self._waited

    def cpu(self) -> float:
        """CPU-seconds; without /proc, the wall clock (the old rule: whatever ran that long held a core)."""
        self._fresh()
        if not self.exact:
            return self.wall() if self._frozen_cpu is None else self._frozen_cpu
        return self._cpu

    def expired(self, limit: float | None) -> bool:
        if not limit:
            return False
        if self.wall() >= limit * WALL_CAP_FACTOR:
            return True
        if self.running() < limit:
            return False
        self.sample()  # the estimate between samples counts no waiting: decide on a fresh reading
        return self.wall() - self._waited >= limit

    def remaining(self, limit: float | None) -> float | None:
        """Wall seconds to wait at most before asking ``expired`` again."""
        if not limit:
            return None
        return max(min(limit - self.running(), limit * WALL_CAP_FACTOR - self.wall()), 0.0)


def starved_note(clock: RunClock, limit: float | None) -> str:
    """What a timeout message adds when the wall cap, not the running time, ended the process."""
    if limit and clock.wall() >= limit * WALL_CAP_FACTOR and clock.wall() - clock._waited < limit:
        return (f" of running time (it was stopped after {clock.wall():.0f} s on the wall clock, most of them "
                "waiting for a CPU: the machine is too busy)")
    return ""
