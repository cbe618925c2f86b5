"""Run a grader scenario on every rank of a real ``torch.distributed`` process group (chapter 08).

A check calls :func:`run_on_ranks`. It starts ``world_size`` runners (:class:`graders.isolation.Runner`:
each loads the student's file or notebook names exactly as a check's own runner does), sends each one
its request at once, then collects the replies against one common deadline. In each runner the rank
first joins a fresh process group, then runs the scenario, then leaves the group::

    def scenario(student: RunnerStudent, rank: RankContext, *args, **kwargs) -> observations

``scenario`` is a module-level function of a ``graders`` module (as for ``Submission.scenario``); it
receives this rank's arguments and a :class:`RankContext` (``rank``, ``world_size``, ``backend``,
``device``: put this rank's tensors there). The group is the default group, so the student's code and
the scenario use ``torch.distributed`` directly. A scenario that wraps a model in ``DistributedDataParallel``
gives it :func:`ddp_group` (torch 2.14.1 crashes on a group checked by DETAIL, below).

How a run is set up, and why:

- the rendezvous is a ``file://`` store in a fresh temporary directory per run, never a TCP port, so
  runs on one machine (two students graded at once, parallel tests) cannot collide;
- backend: gloo on CPU; NCCL only for a CUDA device with at least ``world_size`` GPUs (one per rank);
- every collective times out after ``collective_timeout`` seconds (gloo's default is 30 minutes);
- ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: before each collective the ranks compare what they are about to
  run, so ranks that call different collectives (or shapes, or dtypes) fail at once, on every rank;
- as soon as a rank's scenario has ended (returned or raised) and its observations are back, the judge
  tells it to run one *end-of-run* collective (of a shape no answer uses) and leave the group. A rank
  still waiting in a collective of the student's that this rank never calls therefore fails at once
  ("rank 0 had already returned"), instead of waiting for the timeout; the failure of that end-of-run
  collective on the rank that had finished is expected and ignored, and its observations are already safe;
- once every rank's outcome is back, the ranks are killed rather than left to leave the group and exit:
  leaving (gloo's ``destroy_process_group`` alone takes 20-30 ms) and a torch process's exit cost about
  0.07 s per run, and chapter 08's checks make 10 runs per exercise pass;
- torch's own C++ log lines (``[rank0]:[E… ProcessGroupGloo.cpp…]``) go to a per-rank file of the run
  (:attr:`RankRun.logs`), not to the student's notes; what the student's code prints is still reported;
- a run's ranks are killed and its temporary directory removed before returning, except where a check's ranks
  all returned (or all raised NotImplementedError): then they are kept for that exercise's next run (see
  ``_KeptWorld``), and end with the check's runner at the latest.

What comes back is a :class:`RankRun`: per rank, the scenario's observations or the reason it has none
(a :class:`StudentError` that names the rank, what was raised and the student's own line; a timeout; a
crash; a failed check; a grader error). :meth:`RankRun.values` returns the observations or raises the
one exception that ends the check (the cause first: a rank's own error before the collective failures
it caused on the other ranks).

A wrong collective costs well under a second (DETAIL's comparison); a rank that never reaches a
collective costs ``collective_timeout`` on the others; a rank that never returns is killed at the deadline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from multiprocessing.connection import wait as wait_for_any
from pathlib import Path
from typing import Any

import torch

from graders.isolation import (
    LOWER_PRIORITY_AFTER_S,
    START_TIMEOUT_S,
    GraderBroke,
    Limits,
    Runner,
    RunnerStudent,
    StudentRaised,
    StudentSource,
    _resolve,
)
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, skip
from graders.runclock import SAMPLE_S, RunClock, starved_note

DEFAULT_COLLECTIVE_TIMEOUT_S = 5.0
DEBUG_ENV = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
# The end-of-run collective: an all_reduce of a shape no answer uses. Which ranks were in it is known from how
# their scenarios ended; DETAIL's message shows this shape only when the other rank's fingerprint had as many fields.
END_OF_RUN_SHAPE = (1, 1, 1, 1, 1, 1, 1, 8)
_END_OF_RUN_TEXT = "TensorShape=[" + ", ".join(map(str, END_OF_RUN_SHAPE)) + "]"
LOG_CHARS = 4000

_START_LOCK = threading.Lock()  # isolation's _main_module_hidden swaps sys.modules["__main__"]: not thread-safe


# ==================================================================================================
# What the scenario is given, and what the judge gets back
# ==================================================================================================
@dataclasses.dataclass(frozen=True)
class RankContext:
    """Given to a rank's scenario: which rank it is, and where its tensors go."""

    rank: int
    world_size: int
    backend: str  # "gloo" or "nccl"
    device: str  # "cpu", or "cuda:<rank>" under NCCL


@dataclasses.dataclass
class RankRun:
    """What every rank of one run came back with; exactly one of ``results[r]`` (when ``ok[r]``),
    ``errors[r]``, ``failures[r]`` or ``grader_errors[r]`` describes rank ``r``."""

    world_size: int
    backend: str
    devices: list[str]
    results: list[Any]  # the scenario's observations; None for a rank that has none
    ok: list[bool]
    errors: list[StudentError | None]  # the student's code on that rank did not finish (raised, timed out, crashed)
    collective: list[bool]  # that error is a collective failing (often the consequence of another rank's error)
    failures: list[str | None]  # the scenario called fail(...) on that rank
    grader_errors: list[str | None]  # the grader's own code broke on that rank
    notes: list[str]  # what the student's code printed or warned, "rank r: ..."
    logs: list[str]  # torch's own log lines on each rank (for debugging a grader; never shown to students)
    seconds: float  # from sending the requests to the last reply

    @property
    def passed(self) -> bool:
        return all(self.ok)

    def problem(self) -> BaseException | None:
        """The exception that ends the check, or None when every rank returned.

        The cause comes first: a grader bug (other than a collective failing because of the student's
        code), then the student's own errors (raised, crashed, exited, memory), then ``fail(...)``, then
        ranks stopped at the deadline, then collectives that failed on one rank because of another.
        """
        if self.passed:
            return None
        ranks = range(self.world_size)
        own_grader = [r for r in ranks if self.grader_errors[r] and not _distributed_text(self.grader_errors[r])]
        if own_grader:
            r = own_grader[0]
            return GraderBroke(f"on rank {r} of {self.world_size}: {self.grader_errors[r]}")
        errors = [r for r in ranks if self.errors[r] is not None]
        own = [r for r in errors if self.errors[r].kind != "timeout" and not self.collective[r]]
        timeouts = [r for r in errors if self.errors[r].kind == "timeout"]
        collective = [r for r in errors if r not in own and r not in timeouts]
        failures = [r for r in ranks if self.failures[r] is not None]
        if own:
            return self._student_error(own + timeouts + collective)
        if failures:
            return CheckFailed(self._failure_text(failures))
        if timeouts or collective:
            return self._student_error(timeouts + collective)
        r = next(r for r in ranks if self.grader_errors[r])
        return GraderBroke(f"on rank {r} of {self.world_size}: {self.grader_errors[r]}")

    def raise_problem(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise problem

    def values(self) -> list[Any]:
        """Every rank's observations, in rank order; raises :meth:`problem` when a rank has none."""
        self.raise_problem()
        return list(self.results)

    def _student_error(self, order: list[int]) -> StudentCodeError:
        first = self.errors[order[0]]
        lines = [first.describe()]
        for r in order[1:]:
            lines.append("  and " + self.errors[r].describe().replace("\n", "\n  "))
        return StudentCodeError(dataclasses.replace(first, summary="\n".join(lines), where=None))

    def _failure_text(self, failing: list[int]) -> str:
        by_message: dict[str, list[int]] = {}
        for r in failing:
            by_message.setdefault(self.failures[r], []).append(r)
        parts = []
        for message, ranks in by_message.items():
            which = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))
            parts.append(f"on {which} of {self.world_size}: {message}")
        return "\n".join(parts)


# ==================================================================================================
# The judge's side
# ==================================================================================================
def choose_backend(device: str | torch.device, world_size: int, backend: str | None = None) -> tuple[str, list[str]]:
    """The backend and each rank's device: NCCL (one GPU per rank) only for a CUDA device with enough
    GPUs, otherwise gloo on CPU. Asking for NCCL without enough GPUs skips the check (absent hardware)."""
    device = torch.device(device)
    enough_gpus = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
    if backend is None:
        backend = "nccl" if device.type == "cuda" and enough_gpus and torch.distributed.is_nccl_available() else "gloo"
    if backend == "nccl":
        if not (enough_gpus and torch.distributed.is_nccl_available()):
            skip(f"NCCL needs one CUDA GPU per rank: {world_size} ranks, "
                 f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} GPU(s) here")
        return backend, [f"cuda:{r}" for r in range(world_size)]
    if backend != "gloo":
        raise ValueError(f"backend {backend!r}: use 'gloo' or 'nccl'")
    return backend, ["cpu"] * world_size


def run_on_ranks(student: Any, scenario: Callable[..., Any], world_size: int,
                 args_per_rank: Sequence[Sequence[Any]] | None = None, *,
                 kwargs_per_rank: Sequence[dict[str, Any]] | None = None,
                 device: str | torch.device = "cpu", backend: str | None = None,
                 timeout: float | None = None, collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT_S,
                 limits: Limits | None = None, seed: int | None = None) -> RankRun:
    """Run ``scenario(runner_student, RankContext, *args_per_rank[r], **kwargs_per_rank[r])`` on rank
    ``r`` of a fresh ``world_size``-rank process group, for every rank at once; collect every rank's outcome.

    ``student``: the check's :class:`graders.student.Submission` (its source and limits are used, and the
    ranks' notes are added to the check's notes) or a :class:`StudentSource` (then ``limits``).
    ``timeout``: one deadline for all ranks, counted once every rank has loaded the student's code
    (default: the limits' per-request timeout); a rank still running then is killed and reported as
    timed out, the others as they ended. ``collective_timeout``: how long one collective waits for the
    other ranks (at most half the deadline). ``seed``: every rank is seeded with it (default: the
    judge's current seed, which the judge set for this check). ``device`` and ``backend``: see
    :func:`choose_backend`.

    Raises :class:`StudentCodeError` when the student's code cannot even be loaded (then on every rank);
    everything that happens on the ranks is in the returned :class:`RankRun` (``.values()`` raises it).
    """
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    source, limits, notes_sink = _student_parts(student, limits)
    args_per_rank = [tuple(a) for a in args_per_rank] if args_per_rank is not None else [()] * world_size
    kwargs_per_rank = [dict(k) for k in kwargs_per_rank] if kwargs_per_rank is not None else [{}] * world_size
    if len(args_per_rank) != world_size or len(kwargs_per_rank) != world_size:
        raise ValueError(f"args_per_rank and kwargs_per_rank need one entry per rank ({world_size})")
    if not scenario.__module__.startswith("graders.") or "<" in scenario.__qualname__:
        raise ValueError(f"the scenario must be a module-level function of a graders module, not "
                         f"{scenario.__module__}.{scenario.__qualname__}")
    backend, devices = choose_backend(device, world_size, backend)
    if seed is None:
        seed = torch.initial_seed() % 2**32
    if timeout is None:
        timeout = limits.timeout
    if timeout:  # a rank waiting for one that never comes says so before the deadline stops them both
        collective_timeout = min(collective_timeout, timeout / 2)
    workdir = tempfile.mkdtemp(prefix="run-", dir=_ranks_root())
    owner = _owner(student)
    env_base = {**DEBUG_ENV, **loopback_env(), "WORLD_SIZE": str(world_size)}
    if backend == "nccl":
        env_base["TORCH_NCCL_BLOCKING_WAIT"] = "1"  # a timed-out NCCL collective raises, not aborts
    envs = [{**env_base, "RANK": str(r), "LOCAL_RANK": str(r)} for r in range(world_size)]
    runners, spare = _reuse(owner, backend, envs, seed)
    outcomes: list[tuple] = []
    try:
        rendezvous = f"file://{Path(workdir, 'rendezvous').as_posix()}"
        if len(runners) < world_size:
            with _START_LOCK:
                for r in range(len(runners), world_size):
                    runners.append(_RankRunner(source, seed=seed, device=devices[r], limits=limits, env=envs[r]))
        for runner in runners:  # they load at the same time; a load error is the same on every rank
            runner.ready()
        messages = []
        for r in range(world_size):
            setup = {"module": scenario.__module__, "qualname": scenario.__qualname__, "rank": r,
                     "world_size": world_size, "backend": backend, "device": devices[r],
                     "init_method": rendezvous, "collective_timeout": float(collective_timeout),
                     "log": str(Path(workdir, f"rank{r}.log"))}
            rank_args = (setup, args_per_rank[r], kwargs_per_rank[r])
            messages.append(("scenario", __name__, _rank_main.__qualname__, rank_args, {}))
        start = time.monotonic()
        outcomes = _send_all_and_collect(runners, messages, timeout)
        seconds = time.monotonic() - start
    finally:
        if owner is not None and _fit_to_keep(outcomes, runners):
            run_notes = _keep(owner, backend, runners, spare, workdir)
        else:
            run_notes = _close_all(runners)
            _close_all(spare)
            workdir = _removed(workdir)
        logs = [_read_log(Path(workdir, f"rank{r}.log")) if workdir else "" for r in range(world_size)]
    run = _assemble(outcomes, world_size, backend, devices, run_notes, logs, seconds)
    if notes_sink is not None:
        for note in run.notes:
            if note not in notes_sink:
                notes_sink.append(note)
    return run


_RANKS_ROOT: str | None = None


def _ranks_root() -> str:
    """One folder per judge for every run's rendezvous and logs: a kept rank, confined once (graders.confine),
    may write only there, in whichever run it serves next."""
    global _RANKS_ROOT
    if _RANKS_ROOT is None or not os.path.isdir(_RANKS_ROOT):
        import atexit
        import shutil

        _RANKS_ROOT = tempfile.mkdtemp(prefix="course-ranks-")
        atexit.register(shutil.rmtree, _RANKS_ROOT, True)
    return _RANKS_ROOT


_NETWORK: Any = None  # graders.confine.NetworkHolder: one per judge, for its CPU ranks


def _network() -> Any:
    """The judge's network namespace for its CPU ranks (graders.confine.NetworkHolder), started at first use."""
    global _NETWORK
    if _NETWORK is None or (_NETWORK.pid is not None and not _NETWORK.alive):
        import atexit

        from graders import confine

        _NETWORK = confine.NetworkHolder()
        atexit.register(_NETWORK.close)
    return _NETWORK


class _RankRunner(Runner):
    """A runner that can also be sent a request only when idle, and asked whether a reply is waiting
    (``send``, ``receive`` and ``waitables`` come from :class:`Runner`)."""

    def confinement(self) -> dict[str, Any]:
        # gloo connects the ranks over TCP on loopback; the rendezvous is a file in the judge's ranks folder. CPU
        # ranks join the judge's network namespace first, where loopback is their own and TCP reaches nothing else.
        # (GPU ranks do not yet: NCCL in a user namespace is not measured on a GPU; they have TCP as before.)
        extra = {**super().confinement(), "write": [*super().confinement()["write"], _ranks_root()], "tcp": True}
        if not str(self.device).startswith("cuda") and os.environ.get(NETWORK_ENV) != "0":
            network = _network()
            extra["network"] = network.pid
            extra["network_reason"] = network.reason
        return extra

    sent_end = False  # told to run the end-of-run collective and leave the group; its reply is not read yet

    def send_quietly(self, message: tuple) -> bool:
        """Send when the runner is alive and idle; True when sent."""
        if self._dead is not None or not self.process.is_alive():
            return False
        try:
            self._conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, EOFError, ValueError):
            return False
        return True

    def has_reply(self) -> bool:
        try:
            return self._conn.poll(0) or not self.process.is_alive()
        except (OSError, EOFError, ValueError):
            return True

    def receive(self, timeout: float | None = START_TIMEOUT_S) -> Any:
        """The reply (in a run: already there, or the runner is gone: then how it ended is raised)."""
        return self._receive(timeout, waiting_for=None)


# A check's ranks are kept for its exercise's next run, whatever its number of ranks: a rank's process costs
# about 0.07 s of CPU to fork, load the answer and tear down, and chapter 08 makes 10 runs of 2-4 ranks per
# exercise pass, twice per submission under make grade (its kernel, then its grade of record). Rank r of the next
# run is the kept rank r (a run of fewer ranks leaves the others aside, one of more starts the missing ones), so
# an exercise's checks start as many processes as its largest run, where a world per size started 2 + 3 + ...
# They are kept only when every rank's scenario returned (or every rank raised NotImplementedError: _fit_to_keep)
# and the ranks then left the group together; the next run resets each one's torch state and seeds, gives it
# its rank's environment (RANK, WORLD_SIZE, ...) and loads the answer afresh (a module-level flag or cache of the
# student's must not carry a check's state into the next: fixtures bug_only_first_call and
# bug_caches_group_size), then joins a fresh group. Anything else (an error, a timeout, a crash, a rank that
# could not leave) ends them. They end with the check's runner.
NETWORK_ENV = "COURSE_RANK_NETWORK"  # "0": CPU ranks keep the machine's network (TCP anywhere), as GPU ranks do
LEAVE_TIMEOUT_S = 5.0  # for a kept world's ranks to have left the last group


@dataclasses.dataclass
class _KeptWorld:
    runners: list["_RankRunner"]  # rank r of the last run (sent_end: it was in it, and its leaving is not read yet)
    workdir: str  # the last run's rendezvous, removed once the ranks have left it

    def close(self) -> None:
        _close_all(self.runners)
        _removed(self.workdir)


def _owner(student: Any) -> Runner | None:
    runner = getattr(student, "_runner", None)
    return runner if isinstance(runner, Runner) and not isinstance(runner, _RankRunner) else None


def _fit_to_keep(outcomes: list[tuple], runners: list["_RankRunner"]) -> bool:
    """Every rank is alive and ended its scenario together with the others: all returned, or all raised
    NotImplementedError (an answer not written yet: a blank notebook's checks then reuse their ranks too, where
    each check started 2-3 processes; what the ranks ran before raising was the same on each, so they leave
    the group together). Otherwise (a rank raised something else, or alone) they are all ended.

    A rank that was lowered (it used LOWER_PRIORITY_AFTER_S of CPU on one run) is never kept: it would stay at the
    lowest priority for every later check of every answer, which a busy machine then starves."""
    if not (len(outcomes) == len(runners) > 0 and all(kind == "ok" for kind, _ in outcomes)
            and all(runner.alive and not runner.lowered for runner in runners)):
        return False
    endings = [body for _, body in outcomes]
    return (all(ending["status"] == "ok" for ending in endings)
            or all(ending["status"] == "student" and ending["body"].get("exception_type") == "NotImplementedError"
                   for ending in endings))


def _keep(owner: Runner, backend: str, runners: list["_RankRunner"], spare: list["_RankRunner"],
          workdir: str) -> list[list[str]]:
    """Every rank of the run leaves the group (the end-of-run collective, all together) and waits for the next run,
    with the kept ranks this run did not need after them."""
    for runner in runners:
        if not runner.sent_end and not runner.send_quietly(_END_MESSAGE):
            notes = _close_all(runners)
            _close_all(spare)
            _removed(workdir)
            return notes
        runner.sent_end = True
    previous = owner.kept.pop(backend, None)
    if previous is not None:
        previous.close()
    owner.kept[backend] = _KeptWorld([*runners, *spare], workdir)
    return [runner.take_notes() for runner in runners]


def _reuse(owner: Runner | None, backend: str, envs: list[dict[str, str]],
           seed: int) -> tuple[list["_RankRunner"], list["_RankRunner"]]:
    """The kept ranks for a run of ``len(envs)`` ranks on ``backend``: the first of them, each once it has left the
    last group and been reset, seeded, given rank r's environment and the answer afresh; and the others, set aside
    for a later run. ([], []) when none are kept or one is not fit to go on (then they are all ended)."""
    world = owner.kept.pop(backend, None) if owner is not None else None
    if world is None:
        return [], []
    used, spare = world.runners[:len(envs)], world.runners[len(envs):]
    try:
        for runner in world.runners:
            if not runner.sent_end:  # set aside by the last run: it left its group before
                continue
            left = runner.receive(LEAVE_TIMEOUT_S)
            runner.take_notes()  # what leaving printed belongs to no check
            if left is not True:
                raise GraderBroke("a rank could not leave its process group")
            runner.sent_end = False
        for runner, env in zip(used, envs):  # all at once: torch's state reset, seeded, the answer loaded afresh
            runner.source = owner.source  # with the notebook's cells as they are now (Runner.reload)
            runner.send(("reload", seed, owner.source.lines, env))
        for runner in used:
            runner.receive(LEAVE_TIMEOUT_S)
    except (StudentCodeError, GraderBroke, CheckFailed):
        world.close()
        return [], []
    _removed(world.workdir)
    return used, spare


def _removed(workdir: str) -> str:
    shutil.rmtree(workdir, ignore_errors=True)
    return ""


def _student_parts(student: Any, limits: Limits | None) -> tuple[StudentSource, Limits, list[str] | None]:
    if isinstance(student, StudentSource):
        return student, limits or Limits(), None
    runner = getattr(student, "_runner", None)  # a graders.student.Submission
    if isinstance(runner, Runner):
        return runner.source, limits or runner.limits, runner.notes
    raise TypeError(f"run_on_ranks needs the check's Submission or a StudentSource, not {type(student).__name__}")


def loopback_env() -> dict[str, str]:
    """Ranks talk over the loopback interface (one machine; nothing else need be reachable): ``lo`` on Linux,
    ``lo0`` on macOS (gloo only: NCCL is Linux-only). A variable already set is left alone. The notebooks'
    helper (coursekit.distributed) uses this too."""
    if sys.platform.startswith("linux") and Path("/sys/class/net/lo").exists():
        wanted = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
    elif sys.platform == "darwin":
        wanted = {"GLOO_SOCKET_IFNAME": "lo0"}
    else:
        wanted = {}
    return {name: value for name, value in wanted.items() if name not in os.environ}


def _send_all_and_collect(runners: list[_RankRunner], messages: list[tuple], timeout: float | None) -> list[tuple]:
    """Send every rank its request, then wait for all replies until one deadline.

    A rank whose scenario has ended is told at once to run the end-of-run collective and leave the group
    (a second request, :func:`_rank_end`), so a rank still waiting in a collective of the student's that
    this rank never calls fails now; the judge does not wait for that, only (briefly) for the ranks to
    leave the group when every rank got that far.

    Each outcome is ``("ok", wrapper's report)``, ``("student", StudentError)``, ``("failed", message)`` or
    ``("grader", detail)``.
    """
    world_size = len(runners)
    outcomes: list[tuple | None] = [None] * world_size
    for r, runner in enumerate(runners):
        try:
            runner.send(messages[r])
        except StudentCodeError as exc:
            outcomes[r] = ("student", exc.error)
    # Each rank's running time and CPU time (graders.runclock): a rank starved by a busy machine is neither lowered
    # nor out of time; the ranks still running are out of time when every one of them is (one waiting in a
    # collective for a starved one is not).
    clocks = {r: RunClock(runners[r].process.pid) for r in range(world_size)}
    pending = [r for r in range(world_size) if outcomes[r] is None]
    while pending:
        for r in pending:
            if not runners[r].lowered and clocks[r].cpu() > LOWER_PRIORITY_AFTER_S:
                runners[r].lower_priority()
                clocks[r].lowered()
        remaining = None if not timeout else max(clocks[r].remaining(timeout) or 0.0 for r in pending)
        if remaining is not None and remaining <= 0 and all(clocks[r].expired(timeout) for r in pending):
            for r in pending:
                runners[r].kill()
                outcomes[r] = ("student", StudentError(
                    "timeout", f"did not finish within {timeout:g} s{starved_note(clocks[r], timeout)} and was "
                               "stopped (an endless loop, far too much work, or waiting for something the other "
                               "ranks never do?)"))
            break
        wait_for_any([w for r in pending for w in runners[r].waitables()],
                     timeout=min(max(remaining, 0.01), SAMPLE_S) if remaining is not None else SAMPLE_S)
        for r in list(pending):
            if not runners[r].has_reply():
                continue
            pending.remove(r)
            try:
                outcomes[r] = ("ok", runners[r].receive())
            except StudentCodeError as exc:
                outcomes[r] = ("student", exc.error)
            except CheckFailed as exc:
                outcomes[r] = ("failed", str(exc))
            except GraderBroke as exc:
                outcomes[r] = ("grader", str(exc).strip())
            if len(pending) > 0:  # a rank may still wait in a collective that only this rank's end unblocks
                runners[r].sent_end = runners[r].send_quietly(_END_MESSAGE)
    return outcomes  # type: ignore[return-value]


def _close_all(runners: list[_RankRunner]) -> list[list[str]]:
    """Kill every rank (the run is over: what each returned, printed and warned is already back)."""
    for runner in runners:  # all at once: each process's teardown takes milliseconds, side by side
        runner.kill()
    return [runner.close(at_once=True) for runner in runners]


def _read_log(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:LOG_CHARS]
    except OSError:
        return ""


def _assemble(outcomes: list[tuple], world_size: int, backend: str, devices: list[str],
              run_notes: list[list[str]], logs: list[str], seconds: float) -> RankRun:
    results: list[Any] = [None] * world_size
    ok = [False] * world_size
    errors: list[StudentError | None] = [None] * world_size
    collective = [False] * world_size
    failures: list[str | None] = [None] * world_size
    grader_errors: list[str | None] = [None] * world_size
    raw: list[StudentError | None] = [None] * world_size
    left: dict[int, str] = {}  # ranks whose scenario ended on its own, so they were in the end-of-run collective
    for r, (kind, body) in enumerate(outcomes):
        if kind == "ok":  # the rank wrapper's own report of how the scenario ended
            kind, body = body["status"], body.get("body")
            if kind == "ok":
                results[r], ok[r] = body, True
                left[r] = "had already returned from your code"
            elif kind == "student":
                body = StudentError(**body)
                if not is_collective_error(body):
                    left[r] = f"had already stopped (your code {body.summary.splitlines()[0]})"
            else:
                left[r] = "had already finished"
        if kind == "student":
            raw[r] = body
        elif kind == "failed":
            failures[r] = body
        elif kind == "grader":
            grader_errors[r] = body
    for r, error in enumerate(raw):
        if error is not None:
            errors[r], collective[r] = _on_rank(error, r, world_size, logs[r], left)
    notes: list[str] = []
    for r, rank_notes in enumerate(run_notes):
        for note in rank_notes:
            labelled = f"rank {r}: {note}"
            if labelled not in notes:
                notes.append(labelled)
    return RankRun(world_size, backend, devices, results, ok, errors, collective, failures, grader_errors, notes, logs,
                   seconds)


# ==================================================================================================
# Saying what happened on a rank
# ==================================================================================================
_DISTRIBUTED_MARKERS = ("Detected mismatch between collectives", "monitoredBarrier", "Connection closed by peer",
                        "Connection reset by peer", "ProcessGroup", "Timed out waiting", "NCCL error",
                        "Socket Timeout", "torch.distributed")
# Words of a collective that failed because of another rank (it left, stopped, or never came).
_GONE_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Timed out", "timed out", "Socket Timeout",
                 "NCCL error", "monitoredBarrier")
_FINGERPRINT = re.compile(r"Rank (\d+) is running collective:")
_FIELD = re.compile(r"(OpType|TensorShape|TensorDtypes)=(\[[^\]]*\]|\w+)")
# DETAIL prints another rank's fingerprint in this short form when it could not read it (its serialised
# length differed: another collective, or a tensor with another number of dimensions); its OpType is then noise.
_UNREADABLE = re.compile(r"^\s*CollectiveFingerPrint\(SequenceNumber=\d+OpType=")
_MISSING_RANKS = re.compile(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier")
_SAME_CALLS = "every rank must make the same collective calls, in the same order"


def is_collective_error(error: StudentError) -> bool:
    """The student's code raised inside a torch.distributed collective (often because of another rank)."""
    if any(t.startswith("torch.distributed.") for t in error.exception_types):
        return True
    return error.kind == "raised" and _distributed_text(error.exception_message)


def _distributed_text(text: str) -> bool:
    return any(marker in text for marker in _DISTRIBUTED_MARKERS)


def _describe_fingerprint(text: str) -> str:
    """``ALLREDUCE on a float tensor of shape [4]``, from DETAIL's fingerprint of a collective."""
    fields = dict(_FIELD.findall(text))
    op = fields.get("OpType", "a collective")
    shape = fields.get("TensorShape")
    dtype = fields.get("TensorDtypes")
    tensor = " ".join(x for x in (dtype and dtype.lower(), shape and f"tensor of shape {shape}") if x)
    return f"{op} on a {tensor}" if tensor else op


def _on_rank(error: StudentError, rank: int, world_size: int, log: str,
             left: dict[int, str]) -> tuple[StudentError, bool]:
    """The rank's error, said of that rank, with a collective's failure explained in the course's words;
    and whether it is a collective failing."""
    summary, collective = error.summary, False
    if is_collective_error(error):
        summary, collective = _explain_collective(error, rank, left), True
    elif error.kind == "crashed" and _aborted_by_torch(log):
        summary, collective = f"{summary}: torch.distributed ended the process ({_aborted_by_torch(log)})", True
    return dataclasses.replace(error, summary=f"on rank {rank} of {world_size}: {summary}"), collective


def _aborted_by_torch(log: str) -> str | None:
    """gloo and NCCL abort the process on some errors (``terminate called … what(): …``); the reason."""
    found = re.search(r"what\(\):\s*(.*)", log)
    if "terminate called" not in log or not found:
        return None
    return re.sub(r"\[enforce fail at [^\]]*\]\s*", "", found.group(1)).strip()[:200]


def _explain_collective(error: StudentError, rank: int, left: dict[int, str]) -> str:
    message = error.exception_message
    heads = list(_FINGERPRINT.finditer(message))
    prints = {int(m.group(1)): message[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(message)]
              for i, m in enumerate(heads)}
    if "Detected mismatch between collectives" in message and rank in prints:
        mine = _describe_fingerprint(prints[rank])
        others = sorted(r for r in prints if r != rank)
        gone = [r for r in others if r in left or _END_OF_RUN_TEXT in prints[r]]
        if others and gone == others:
            who = " and ".join(f"rank {r}" for r in gone)
            why = "; ".join(f"rank {r} {left.get(r, 'had already left your code')}" for r in gone)
            return f"called {mine}, which {who} never called: {why} ({_SAME_CALLS})"
        theirs = []
        for r in others:
            if r in gone:
                theirs.append(f"rank {r} {left.get(r, 'had already left your code')}")
            elif _UNREADABLE.match(prints[r]):
                theirs.append(f"rank {r} called another collective, or the same one on a tensor with another "
                              "number of dimensions")
            else:
                theirs.append(f"rank {r} called {_describe_fingerprint(prints[r])}")
        return (f"the ranks called different collectives: rank {rank} called {mine}, but " + "; ".join(theirs) +
                f" ({_SAME_CALLS}, on tensors of the same shape and dtype)")
    missing = _MISSING_RANKS.search(message)
    if missing:
        ranks = missing.group(1).strip().rstrip(",")
        return (f"waited in a collective for rank {ranks} (numbered within that collective's group), which never "
                f"joined it, and timed out "
                f"({error.exception_type}); "
                f"rank {ranks} was still busy, had stopped, or never makes that call ({_SAME_CALLS})")
    first = message.strip().splitlines()[0][:200] if message.strip() else ""
    if any(marker in message for marker in _GONE_MARKERS):
        return (f"a collective failed ({error.exception_type}: {first}); another rank probably stopped, left, or "
                "called a different collective")
    return f"a collective refused its arguments ({error.exception_type}: {first})"


# ==================================================================================================
# Inside each rank's runner
# ==================================================================================================
def ddp_group(backend: str, timeout: float = DEFAULT_COLLECTIVE_TIMEOUT_S) -> "torch.distributed.ProcessGroup":
    """A group of every rank for ``DistributedDataParallel`` in a scenario: made without the checking wrapper
    that ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` puts around every group, with a short timeout.

    torch 2.14.1 crashes (SIGSEGV, in DDP's constructor, where it logs) when DDP is given a group that
    DETAIL wrapped. The student's own collectives still go through the default group, which is checked.
    """
    import torch.distributed as dist

    level = dist.get_debug_level()
    dist.set_debug_level(dist.DebugLevel.OFF)
    try:
        return dist.new_group(backend=backend, timeout=timedelta(seconds=timeout))
    finally:
        dist.set_debug_level(level)


def _rank_main(student: RunnerStudent, setup: dict, args: tuple, kwargs: dict) -> dict:
    """Join the group and run the scenario (the group stays: :func:`_rank_end` leaves it).

    Always returns ``{"status": "ok"|"student"|"failed"|"grader", "body": ...}``: the scenario's own ending.
    """
    import torch.distributed as dist

    global _LOGS
    scenario = _resolve(setup["module"], setup["qualname"])
    rank, world_size, backend, device = setup["rank"], setup["world_size"], setup["backend"], setup["device"]
    _LOGS = _TorchLogs(setup["log"])
    dist.set_debug_level_from_env()  # torch read TORCH_DISTRIBUTED_DEBUG when the forkserver imported it
    try:
        if backend == "nccl":
            torch.cuda.set_device(torch.device(device))
        dist.init_process_group(backend, init_method=setup["init_method"], rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=setup["collective_timeout"]))
    except Exception as exc:  # noqa: BLE001 - the grader's machinery, not the student
        return {"status": "grader", "body": f"rank {rank} could not join the process group: "
                                            f"{type(exc).__name__}: {str(exc)[:500]}"}
    try:
        value = scenario(student, RankContext(rank, world_size, backend, device), *args, **kwargs)
        _flush_output()
        return {"status": "ok", "body": value}
    except StudentRaised as exc:
        _flush_output()
        return {"status": "student", "body": dataclasses.asdict(exc.error)}
    except CheckFailed as exc:
        _flush_output()
        return {"status": "failed", "body": str(exc)}
    except BaseException:  # noqa: BLE001 - a broken scenario is the grader's bug, reported as such
        _flush_output()
        return {"status": "grader", "body": traceback.format_exc(limit=-6)}


def _flush_output() -> None:
    """What the student's code printed without a newline reaches its file now: the judge kills a rank whose run
    is over, and reads that file for the notes only after."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()


def _rank_end(student: RunnerStudent) -> bool:
    """After the scenario: the end-of-run collective, then leave the group. True when both went well (the rank
    may then serve the next run).

    The end-of-run collective unblocks (with a clear mismatch) a rank that waits in a collective this rank
    never called; its own failure says nothing about this rank, so it is ignored.
    """
    import torch.distributed as dist

    global _LOGS
    clean = True
    try:
        if dist.is_initialized():
            device = "cuda" if dist.get_backend() == "nccl" else "cpu"
            try:
                dist.all_reduce(torch.zeros(END_OF_RUN_SHAPE, dtype=torch.int32, device=device))
                if device == "cuda":
                    torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - another rank's doing (see above)
                clean = False
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001
                clean = False
        return clean and not dist.is_initialized()
    finally:
        _flush_output()
        if _LOGS is not None:
            _LOGS.stop()
            _LOGS = None


_END_MESSAGE = ("scenario", __name__, _rank_end.__qualname__, (), {})


class _TorchLogs:
    """Point file descriptor 2 (where torch's C++ logging writes) at ``path`` until :meth:`stop`; Python's
    ``sys.stderr`` keeps writing where the runner sends the student's stderr (reported as notes)."""

    def __init__(self, path: str) -> None:
        self._saved = os.dup(2)
        self._previous = sys.stderr
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(target, 2)
        os.close(target)
        sys.stderr = open(self._saved, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stderr = self._previous
        os.dup2(self._saved, 2)
        os.close(self._saved)


_LOGS: _TorchLogs | None = None
