"""Run a function on several real processes ("ranks") of a ``torch.distributed`` process group, from a notebook.

Chapter 08 uses it for every multi-process demonstration::

    from coursekit.distributed import Ranks, run_on_ranks

    def total(rank, world_size):
        t = torch.tensor([rank + 1.0])
        dist.all_reduce(t)            # the group is ready: no init_process_group here
        return t.item()

    run_on_ranks(total, 2)            # -> [3.0, 3.0], one value per rank, in rank order

    with Ranks(2) as ranks:           # the same, with processes that stay up between runs
        ranks.run(total)
        ranks.run(total)

Why it is built this way:

- **Functions defined in a notebook work under every start method.** ``spawn`` (the default on macOS and
  Windows) starts a fresh interpreter that finds the target function by importing its module; a notebook's
  functions live in ``__main__``, which the new interpreter does not have, so ``Process(target=f)`` fails
  there. Here the function travels *by value* (cloudpickle copies its code and the notebook globals it
  uses) to :func:`_worker_main`, a module-level function that every start method can import. ``fork``
  works too. The start method is ``multiprocessing``'s default, which :func:`coursekit.apply_start_method`
  sets from ``COURSE_START_METHOD``.
- **No TCP port.** The ranks meet through a ``file://`` store in a fresh temporary directory for every run,
  so two notebooks (or two students) on one machine can never collide on a port, and no port must be free.
- **Mistakes fail in seconds.** Every collective on the group gives up after ``collective_timeout`` seconds
  (torch's default is 30 minutes for gloo), and the whole run after ``timeout``. Only joining the group may
  take longer (``RENDEZVOUS_TIMEOUT_S``): on a busy machine one rank can start seconds after another.
- **One CPU thread per rank** unless asked otherwise: two ranks that each use every core of the machine fight
  over the cores and run many times slower (chapter 08 measures it).
- **Nothing is left behind.** When a rank hangs or dies, or the caller is interrupted (Ctrl-C), every rank
  process is killed at once; :meth:`Ranks.close` (and :func:`run_on_ranks`, always) kills them and removes the
  temporary directory. If the process that started them ends without that (a notebook kernel killed), the
  ranks notice, remove the directory and exit, even in the middle of a job.
- **Processes can be reused.** A new process under spawn pays for importing torch (and, for DDP or an
  optimizer, its compiler stack): seconds. :class:`Ranks` pays that once and then runs each function in a
  fresh process group, as a ``torchrun`` job runs a whole training in processes started once.
- **Quiet.** A rank's stdout and stderr (file descriptors 1 and 2, so torch's C++ log lines too) go to files;
  what a rank printed is shown afterwards, prefixed with its rank, and its stderr is attached to its error.
  Nothing a rank writes lands on the notebook's stderr.
"""

from __future__ import annotations

import contextlib
import datetime
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import cloudpickle

DEFAULT_TIMEOUT_S = 60.0  # the whole run: joining the group, the function, leaving the group
DEFAULT_COLLECTIVE_TIMEOUT_S = 5.0  # one collective waiting for the other ranks
RENDEZVOUS_TIMEOUT_S = 60.0  # joining the group: on a busy machine one rank can get there seconds after another
START_TIMEOUT_S = 60.0  # a new rank process reporting that it is ready (importing torch under spawn takes seconds)
FIT_FOR_NEXT_RUN = b"+"  # the first byte of a rank's reply: it joined and left its group (else b"-": see _run_job)
ERROR_GRACE_S = 1.0  # once a rank has failed, how long the others may take to reply before they are killed
_STDERR_TAIL = 2000  # characters of a failed rank's stderr kept in its error


class RankError(RuntimeError):
    """A rank raised or died. ``rank`` is which one, ``error_type`` the name of what it raised (None when it
    died without reporting), ``remote_traceback`` its traceback as text, ``stderr`` the end of what it wrote there."""

    def __init__(self, message: str, *, rank: int, error_type: str | None = None, remote_traceback: str = "",
                 stderr: str = "") -> None:
        super().__init__(message)
        self.rank = rank
        self.error_type = error_type
        self.remote_traceback = remote_traceback
        self.stderr = stderr


class RankTimeout(TimeoutError):
    """Some ranks had not finished when the run's ``timeout`` ran out; every rank was killed. ``ranks`` lists
    the ones still running."""

    def __init__(self, message: str, *, ranks: list[int]) -> None:
        super().__init__(message)
        self.ranks = ranks


def default_backend(world_size: int) -> str:
    """NCCL when there is one CUDA GPU per rank, else gloo (CPU). NCCL cannot put two ranks on one GPU, so
    with fewer GPUs than ranks (one GPU and two ranks, say) the ranks run on gloo, on the CPU."""
    import torch
    import torch.distributed as dist

    if torch.cuda.is_available() and torch.cuda.device_count() >= world_size and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def rank_device() -> Any:
    """The device this rank's tensors belong on: ``cuda:<rank>`` under NCCL, the CPU under gloo."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", dist.get_rank())
    return torch.device("cpu")


def run_on_ranks(function: Callable[..., Any], world_size: int, *args: Any, timeout: float = DEFAULT_TIMEOUT_S,
                 collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT_S, backend: str | None = None,
                 threads: int | None = 1, env: Mapping[str, str] | None = None,
                 start_method: str | None = None) -> list[Any]:
    """Start ``world_size`` processes, run ``function(rank, world_size, *args)`` on each, stop them; return the
    values in rank order. The arguments are those of :class:`Ranks` and :meth:`Ranks.run`."""
    with Ranks(world_size, start_method=start_method) as ranks:
        return ranks.run(function, *args, timeout=timeout, collective_timeout=collective_timeout,
                         backend=backend, threads=threads, env=env)


class Ranks:
    """``world_size`` rank processes that stay up between runs; each :meth:`run` is a fresh process group.

    ``start_method``: ``fork``, ``spawn`` or ``forkserver`` (default: ``multiprocessing``'s default; never
    fork for NCCL, since a forked child cannot use CUDA). The processes start at the first :meth:`run`. After
    a run in which every rank replied (with a value or an error) and left its group they are kept for the next
    run; after a rank died, did not reply in time or could not join or leave the group, all are killed, and the
    next run starts new ones. Use it as a context
    manager, or call :meth:`close`. A process keeps what a function leaves in its modules (seed what you use
    in every function). Under fork, start the ranks while this process has run torch on one thread only: a
    child forked from a process whose OpenMP threads have run can hang at its first multi-threaded operation.
    """

    def __init__(self, world_size: int, *, start_method: str | None = None) -> None:
        if world_size < 1:
            raise ValueError(f"world_size must be at least 1, got {world_size}")
        self.world_size = world_size
        self._start_method = start_method
        self._method: str | None = None  # how the running processes were started
        self._state = _State()
        self._runs = 0
        # Forgotten without close() (a notebook variable overwritten, the kernel shutting down): clean up anyway.
        self._finalizer = weakref.finalize(self, _State.close, self._state)

    def __enter__(self) -> Ranks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pids(self) -> list[int]:
        """The process ids of the running ranks (empty when none runs)."""
        return [process.pid for process in self._state.processes]

    def run(self, function: Callable[..., Any], *args: Any, timeout: float = DEFAULT_TIMEOUT_S,
            collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT_S, backend: str | None = None,
            threads: int | None = 1, env: Mapping[str, str] | None = None) -> list[Any]:
        """Run ``function(rank, world_size, *args)`` on every rank; return the values in rank order.

        Each rank has joined a fresh default process group before ``function`` starts, and leaves it after.
        ``backend``: ``"gloo"`` or ``"nccl"`` (default: :func:`default_backend`). ``threads``: torch's CPU
        threads per rank (None: torch's default, one per core). ``env``: environment variables set on the
        ranks for this run, before the group is made (``{"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}``, say).
        ``args`` and the values travel by pickling: keep them small, and on the CPU.

        Raises :class:`RankError` for the rank whose failure came first (a rank that died, else the earliest
        exception: the other ranks' errors are usually its consequences, such as a collective whose peer has
        gone), :class:`RankTimeout` when ranks were still running after ``timeout`` seconds (every rank is
        killed first).
        """
        from graders.ranks import loopback_env  # the graders' ranks meet the same way

        job = {"backend": backend or default_backend(self.world_size), "threads": threads,
               "collective_timeout": float(collective_timeout), "env": {**loopback_env(), **dict(env or {})},
               "payload": cloudpickle.dumps((function, args))}  # by value: no notebook needed to find it
        all_replied = False
        try:
            self._start(job["backend"])
            assert self._state.folder is not None
            self._runs += 1
            folder = self._state.folder / f"run{self._runs}"
            folder.mkdir()
            job.update(folder=str(folder), init_method=(folder / "rendezvous").as_uri())
            for connection in self._state.connections:
                connection.send_bytes(cloudpickle.dumps(job))
            try:
                replies = self._collect(time.monotonic() + timeout)
                all_replied = (len(replies) == self.world_size and all(kind != "died" for kind, _ in replies.values())
                               and not self._state.unfit)
                return self._values(replies, folder)
            finally:
                _echo_stdout(folder, self.world_size)
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            if not all_replied:  # a death, a timeout, Ctrl-C or a rank unfit for the next run (see _run_job): no
                # rank may stay half-way through a collective, and the next run starts new ones
                self._state.stop()

    def close(self) -> None:
        """Stop every rank and remove the temporary directory. Safe to call twice."""
        self._state.close()

    # -- the parent's side ---------------------------------------------------------------------------------
    def _start(self, backend: str) -> None:
        """Start the rank processes unless they all run (and can use ``backend``); wait until each is ready."""
        method = self._start_method or multiprocessing.get_start_method()
        if backend == "nccl" and method == "fork":
            # CUDA does not survive fork: once a process has asked CUDA anything (torch.cuda.is_available()
            # does), a child forked from it cannot use the GPU. NCCL ranks are started by spawn.
            method = "spawn"
        state = self._state
        alive = bool(state.processes) and all(process.is_alive() for process in state.processes)
        if alive and self._method in (method, "spawn"):  # spawned processes can do anything
            return
        state.stop()
        context = multiprocessing.get_context(method)
        self._method = method
        if state.folder is None:
            state.folder = Path(tempfile.mkdtemp(prefix="course-distributed-"))
        for rank in range(self.world_size):
            parent_end, child_end = context.Pipe(duplex=True)
            process = context.Process(target=_worker_main, name=f"rank-{rank}", daemon=True,
                                      args=(rank, self.world_size, child_end, str(state.folder)))
            process.start()
            child_end.close()  # only the child holds it now: when the child dies, reading gives end of file
            state.processes.append(process)
            state.connections.append(parent_end)
        deadline = time.monotonic() + START_TIMEOUT_S
        for rank, connection in enumerate(state.connections):  # each says "ready" once it has imported torch
            if not connection.poll(max(deadline - time.monotonic(), 0.0)):
                raise RankTimeout(f"rank {rank} did not start within {START_TIMEOUT_S:.0f} s", ranks=[rank])
            try:
                connection.recv_bytes()
            except EOFError:
                raise RankError(f"rank {rank} died while starting", rank=rank) from None

    def _collect(self, deadline: float) -> dict[int, tuple[str, Any]]:
        """Each rank's reply, ``(kind, body)`` with kind "ok", "error" or "died", until every rank has replied.

        Raises :class:`RankTimeout` at ``deadline`` if no rank has failed. Once one has, the others get
        ``ERROR_GRACE_S`` more (a rank waiting in a collective for the failed one fails quickly too); the
        ranks still silent then are left out.
        """
        processes, connections = self._state.processes, self._state.connections
        replies: dict[int, tuple[str, Any]] = {}
        failed_at: float | None = None
        while len(replies) < self.world_size:
            waiting = [r for r in range(self.world_size) if r not in replies]
            limit = deadline if failed_at is None else min(deadline, failed_at + ERROR_GRACE_S)
            remaining = limit - time.monotonic()
            ready = wait([connections[r] for r in waiting], timeout=remaining) if remaining > 0 else []
            if not ready and failed_at is not None:
                break
            if not ready:
                raise RankTimeout(f"rank(s) {', '.join(map(str, waiting))} of {self.world_size} had not finished "
                                  f"when the run's timeout ran out; every rank was stopped", ranks=waiting)
            for rank in waiting:
                if connections[rank] not in ready:
                    continue
                try:
                    reply = connections[rank].recv_bytes()
                    if reply[:1] != FIT_FOR_NEXT_RUN:
                        self._state.unfit.add(rank)
                    replies[rank] = cloudpickle.loads(reply[1:])
                except EOFError:  # it ended without replying: killed, crashed, os._exit, an abort in C++
                    processes[rank].join(timeout=1.0)
                    replies[rank] = ("died", processes[rank].exitcode)
                if replies[rank][0] != "ok" and failed_at is None:
                    failed_at = time.monotonic()
        return replies

    def _values(self, replies: dict[int, tuple[str, Any]], folder: Path) -> list[Any]:
        """The values in rank order, or the error of the rank that failed first."""
        died = [rank for rank, (kind, _) in sorted(replies.items()) if kind == "died"]
        if died:
            rank = died[0]
            raise RankError(f"rank {rank} died (exit code {replies[rank][1]}) without returning", rank=rank,
                            stderr=_tail(folder / f"rank{rank}.err"))
        errors = [rank for rank, (kind, _) in replies.items() if kind == "error"]
        if errors:
            rank = min(errors, key=lambda r: (replies[r][1]["raised_at"], r))
            error = replies[rank][1]
            raise RankError(f"rank {rank} raised {error['type']}: {error['message']}", rank=rank,
                            error_type=error["type"], remote_traceback=error["traceback"],
                            stderr=_tail(folder / f"rank{rank}.err"))
        return [replies[rank][1] for rank in range(self.world_size)]


class _State:
    """What a :class:`Ranks` owns: its processes, their connections, its temporary directory. Apart from
    the Ranks object, so that a finalizer can clean it up without keeping the Ranks object alive."""

    def __init__(self) -> None:
        self.processes: list[Any] = []
        self.connections: list[Connection] = []
        self.unfit: set[int] = set()  # ranks whose last run left torch's distributed state in doubt
        self.folder: Path | None = None

    def stop(self) -> None:
        """Kill every rank process and wait for it, so that none outlives its Ranks."""
        for process in self.processes:
            if process.is_alive():
                process.kill()
        for process in self.processes:
            process.join(timeout=5.0)
        for connection in self.connections:
            connection.close()
        self.processes, self.connections, self.unfit = [], [], set()

    def close(self) -> None:
        self.stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _echo_stdout(folder: Path, world_size: int) -> None:
    """Print what each rank printed, each line prefixed with its rank (nothing when the ranks were silent)."""
    for rank in range(world_size):
        path = folder / f"rank{rank}.out"
        text = path.read_text(errors="replace") if path.exists() else ""
        for line in text.splitlines():
            print(f"[rank {rank}] {line}")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-_STDERR_TAIL:]
    except OSError:
        return ""


# ------------------------------------------------------------------------------------------------------
# In the rank's process
# ------------------------------------------------------------------------------------------------------
def _worker_main(rank: int, world_size: int, connection: Connection, folder: str) -> None:
    """The target of every rank process, importable by spawn: runs the jobs it is sent, one at a time.

    For each job it sends back exactly one message, ``("ok", value)`` or ``("error", {...})``. It exits when
    the parent closes the connection; and when the parent itself ends, even in the middle of a job.
    """
    _redirect_output(os.devnull, os.devnull, flush=False)  # under fork, the inherited streams are the notebook's
    if hasattr(os, "setpgrp"):
        # A process group of its own: Jupyter stops a kernel by killing the kernel's process group, which would
        # kill the ranks before they could remove the temporary directory. They follow the parent out instead.
        os.setpgrp()
    threading.Thread(target=_exit_with_the_parent, args=(rank, folder), daemon=True).start()
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size))
    import torch  # noqa: F401 - imported before saying "ready", so that the first run does not pay for it

    connection.send_bytes(b"ready")
    while True:
        try:
            job = cloudpickle.loads(connection.recv_bytes())
        except EOFError:  # the parent closed the connection
            return
        except KeyboardInterrupt:  # Ctrl-C in a notebook reaches the whole process group; the parent decides
            continue
        message, fit = _run_job(rank, world_size, job)
        try:
            connection.send_bytes((FIT_FOR_NEXT_RUN if fit else b"-") + message)
        except (BrokenPipeError, OSError):
            return


def _exit_with_the_parent(rank: int, folder: str) -> None:
    """Wait for the parent to end; then remove its temporary directory (a parent that was killed could not)
    and end this process, even if a job is still running in it."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    wait([parent.sentinel])
    if rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


def _run_job(rank: int, world_size: int, job: dict[str, Any]) -> tuple[bytes, bool]:
    """Join a fresh process group, run the function, leave the group; the reply, pickled, and whether this rank may
    serve the next run: it joined the group and left it. One that failed halfway through joining stays one group
    ahead in torch's count of groups, which names the next group's rendezvous keys: at the next run it and the
    others would wait for each other's keys under different names until the timeout (seen: 60 s)."""
    import torch
    import torch.distributed as dist

    folder = Path(job["folder"])
    joined = False
    _redirect_output(folder / f"rank{rank}.out", folder / f"rank{rank}.err")
    saved_env = {name: os.environ.get(name) for name in job["env"]}
    try:
        os.environ.update(job["env"])
        dist.set_debug_level_from_env()  # torch read TORCH_DISTRIBUTED_DEBUG when it was imported: read it again
        if job["threads"] is not None:
            torch.set_num_threads(job["threads"])
        if job["backend"] == "nccl":
            torch.cuda.set_device(rank)
        collective_timeout = datetime.timedelta(seconds=job["collective_timeout"])
        set_timeout = getattr(dist, "set_timeout", None) or getattr(dist.distributed_c10d, "_set_pg_timeout", None)
        dist.init_process_group(job["backend"], init_method=job["init_method"], rank=rank, world_size=world_size,
                                timeout=max(collective_timeout, datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
                                if set_timeout else collective_timeout)
        if set_timeout:  # the group is made: from now on, a collective waits collective_timeout at most
            set_timeout(collective_timeout)
        joined = True
        try:
            # Every rank has joined before any runs the function: a function that failed at once let its rank leave
            # while another was still connecting to the group, and that one's joining failed halfway (see above).
            _wait_until_all_joined(folder, rank, world_size, collective_timeout)
            function, args = cloudpickle.loads(job["payload"])
            data = cloudpickle.dumps(("ok", function(rank, world_size, *args)))
        except BaseException as error:
            data = _error_reply(error)  # before leaving the group: the time stamp must precede the consequences
        else:
            # Leave together: a rank that returned could otherwise tear the group down while another still runs a
            # collective with it. If another rank failed, this fails too; the value is kept anyway.
            with contextlib.suppress(Exception):
                dist.barrier()
        finally:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
    except BaseException as error:  # joining the group failed (KeyboardInterrupt too: the parent must hear why)
        data = _error_reply(error)
    finally:
        for name, value in saved_env.items():  # the next run starts from the same environment
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _redirect_output(os.devnull, os.devnull)  # the run's files are closed before the parent removes them
    return data, joined and not dist.is_initialized()


def _wait_until_all_joined(folder: Path, rank: int, world_size: int, timeout: datetime.timedelta) -> None:
    """A barrier of the run's own, outside the group: a collective would be the function's first in the group's
    count, and shift the sequence numbers that TORCH_DISTRIBUTED_DEBUG=DETAIL shows (chapter 08 shows one)."""
    import torch.distributed as dist

    store = dist.FileStore(str(folder / "joined"), world_size)
    store.set(f"rank {rank}", "joined")
    store.wait([f"rank {r}" for r in range(world_size)], timeout)


def _error_reply(error: BaseException) -> bytes:
    """The reply for an exception, stamped with when it was raised: when one rank fails, a rank whose
    collective then loses its peer fails later, so the earliest stamp names the cause."""
    return cloudpickle.dumps(("error", {"type": type(error).__name__, "message": str(error),
                                        "traceback": traceback.format_exc(), "raised_at": time.time()}))


def _redirect_output(stdout: str | Path, stderr: str | Path, *, flush: bool = True) -> None:
    """Point this process's file descriptors 1 and 2 (and sys.stdout/stderr) at the given files.

    A forked rank would otherwise write into the notebook's output machinery, and every rank's C++ log
    lines would reach the notebook's stderr (which nbgrader scores as a failure).
    """
    for stream in (sys.stdout, sys.stderr) if flush else ():
        with contextlib.suppress(Exception):
            stream.flush()
    for fd, path in ((1, stdout), (2, stderr)):
        file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(file, fd)
        os.close(file)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
