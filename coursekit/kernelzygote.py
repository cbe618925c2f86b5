"""Kernels forked from a warm process, for ``make grade``'s workers (issue 14).

Every autograded submission starts a Jupyter kernel, and every kernel imports ipykernel, NumPy and torch again
(about 1.5 s of CPU on a 2-core laptop, a third of a chapter-01 submission's cost in a worker). A worker grades
many submissions one after another, so it keeps one process that has imported them, the **zygote**, and each
kernel is a fork of it: the kernel's own start is then a few milliseconds, and its opening cell finds torch
imported.

What a kernel gets is what a fresh one gets: the zygote imports modules and nothing else (no zmq context, no
thread, no event loop, nothing of the course's own that reads the environment when imported), and the fork
takes the environment, working folder and command line nbgrader gave it, a session of its own (so a signal to
its process group reaches it and its children, as for a launched kernel), ``/dev/null`` as stdin, and fresh seeds
for Python's and NumPy's global generators, which a new interpreter seeds from the OS. Only the kernel command
of this interpreter (``python -m ipykernel_launcher ...``) is forked; anything else is launched as usual, and so
is every kernel off Linux (Windows has no ``fork``; on macOS a fork of a process that loaded Apple's frameworks
is not safe, and nothing would end a kernel with its zygote), where the zygote cannot answer, and everywhere
with ``COURSE_KERNEL_ZYGOTE=0`` (to compare).

The worker (:mod:`coursekit.gradeworker`) starts the zygote and names it in nbgrader's configuration
(``Execute.kernel_manager_class``): :class:`ZygoteKernelManager` asks it for each kernel. A zygote ends when
its stdin closes (the worker has gone); its kernels end when it does (``PR_SET_PDEATHSIG`` on Linux, and
ipykernel's own parent poller), so a worker stopped at a time limit leaves no kernel running.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager, KernelManager
from jupyter_client.provisioning import LocalProvisioner

from coursekit.kernel_sandbox import Confining

KERNEL_MODULE = "ipykernel_launcher"
# What every kernel imports as it starts (ipykernel's application and IPython), and what every chapter's opening
# cell imports first; the worker adds the rest of the opening cell's third-party imports (torchvision in 04).
BASE_PRELOAD = ("ipykernel.kernelapp", "ipykernel.ipkernel", "numpy", "torch")
# Left to each kernel: the course's own packages (light, and they may read the environment when imported), and
# matplotlib, which reads MPLBACKEND when imported (a kernel sets it to its inline backend).
OWN_PACKAGES = ("coursekit", "graders", "solutions")
NOT_PRELOADED = (*OWN_PACKAGES, "matplotlib")
_HEADER = struct.Struct(">I")
_ANSWER_TIMEOUT_S = 30.0


class ZygoteUnavailable(RuntimeError):
    """The zygote could not fork this kernel: it is launched the usual way instead."""


# --------------------------------------------------------------------------------------------------
# The zygote
# --------------------------------------------------------------------------------------------------
def serve(path: str, preload: list[str]) -> None:
    """Import ``preload``, then fork a kernel for every request on the Unix socket ``path`` until stdin closes."""
    for module in preload:
        with contextlib.suppress(Exception):  # a module that fails to import fails in the kernel, as it would
            importlib.import_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels are reaped as they end (no zombies to wait for)
    # What a kernel's code starts and orphans (a double fork, setsid) becomes this process's child, not init's, and
    # is ended before the next kernel starts: nothing of one submission outlives it into the next one's run.
    from graders.isolation import become_subreaper, end_every_child

    become_subreaper()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener.bind(path + ".new")
    listener.listen(8)
    os.rename(path + ".new", path)  # the path appears only once requests can be answered
    stop = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([stop, listener], [], [])
        if stop in ready and not os.read(stop, 4096):
            end_every_child()
            return
        if listener in ready:
            connection, _ = listener.accept()
            with connection:
                connection.settimeout(_ANSWER_TIMEOUT_S)
                try:
                    request = json.loads(_receive(connection))
                    if request.get("alone"):  # a worker runs one kernel at a time: any other is a leftover
                        end_every_child()
                    pid = _fork_kernel(request["argv"], request["env"], request["cwd"], listener, connection)
                    _send(connection, json.dumps({"pid": pid}).encode())
                except Exception as exc:  # noqa: BLE001 - told to the worker, which launches the kernel itself
                    with contextlib.suppress(OSError):
                        _send(connection, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())


def _fork_kernel(argv: list[str], env: dict[str, str], cwd: str, *open_sockets: socket.socket) -> int:
    if not is_kernel_command(argv):
        raise ValueError(f"not this interpreter's {KERNEL_MODULE} command: {argv[:3]}")
    zygote = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the kernel
        for sock in open_sockets:
            sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _die_with(zygote)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        os.environ["JPY_PARENT_PID"] = str(zygote)  # ipykernel's parent poller watches its real parent
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        import random

        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        for name in [m for m in sys.modules if m.split(".")[0] in OWN_PACKAGES]:
            del sys.modules[name]  # this very module included: the kernel imports the course's own afresh
        if env.get("_COURSE_KERNEL_SANDBOX") == "1":  # (kernel_sandbox.SANDBOX_ENV: its manager asked for it)
            from coursekit import kernel_sandbox

            print(f"kernel {os.getpid()}: {kernel_sandbox.confine_this_kernel(cwd, argv)}", file=sys.stderr, flush=True)
        sys.argv = [KERNEL_MODULE, *argv[3:]]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        import atexit

        atexit._run_exitfuncs()  # as a kernel's exit runs them; the interpreter's teardown is skipped
    except SystemExit as exc:
        os._exit(exc.code if isinstance(exc.code, int) else 1)
    except BaseException:  # noqa: BLE001 - a kernel that cannot start dies, as a launched one would
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _die_with(parent: int) -> None:
    """End this kernel when the zygote ends (Linux): a worker stopped at its time limit takes its kernel along."""
    with contextlib.suppress(Exception):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the zygote ended before the line above took effect
        os._exit(1)


def is_kernel_command(argv: list[str]) -> bool:
    return len(argv) >= 3 and os.path.realpath(argv[0]) == os.path.realpath(sys.executable) and \
        argv[1:3] == ["-m", KERNEL_MODULE]


def _send(connection: socket.socket, body: bytes) -> None:
    connection.sendall(_HEADER.pack(len(body)) + body)


def _receive(connection: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = connection.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the other end closed the connection")
            data += chunk
        return data

    (size,) = _HEADER.unpack(exactly(_HEADER.size))
    if size > 1 << 24:
        raise ValueError("a request larger than any kernel command")
    return exactly(size)


# --------------------------------------------------------------------------------------------------
# The worker's side
# --------------------------------------------------------------------------------------------------
class Zygote:
    """The worker's zygote: started at once, answering once it has imported ``preload``."""

    def __init__(self, path: Path, log: Path, preload: list[str]) -> None:
        self.path = path
        with open(log, "ab") as out:
            # A session of its own: a worker stopped at its time limit (its process group killed) leaves the zygote
            # to see its stdin close and end every process it has, its kernels and what they orphaned (it is their
            # subreaper), before it ends; killed with the group, it would leave those to init.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "coursekit.kernelzygote", str(path), "--preload", ",".join(preload)],
                stdin=subprocess.PIPE, stdout=out, stderr=out, start_new_session=True)

    def fork(self, argv: list[str], env: dict[str, str], cwd: str, wait_s: float = 60.0, *, alone: bool = False) -> int:
        """A kernel forked from the zygote (its pid), once the zygote is ready (within ``wait_s``); ``alone``: every
        process the zygote still has (an earlier kernel, what its code left behind) is ended first."""
        if not hasattr(os, "fork") or not is_kernel_command(argv):
            raise ZygoteUnavailable("not a kernel this zygote can fork")
        deadline = time.monotonic() + wait_s
        while not self.path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ZygoteUnavailable("the zygote did not start")
            time.sleep(0.02)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(_ANSWER_TIMEOUT_S)
                connection.connect(str(self.path))
                _send(connection, json.dumps({"argv": argv, "env": env, "cwd": cwd, "alone": alone}).encode())
                answer = json.loads(_receive(connection))
        except (OSError, ValueError) as exc:
            raise ZygoteUnavailable(f"the zygote did not answer: {exc}") from exc
        if "pid" not in answer:
            raise ZygoteUnavailable(answer.get("error", "no pid"))
        return int(answer["pid"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # the zygote ends, and its kernels with it
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_ZYGOTE: Zygote | None = None


def use(zygote: Zygote | None) -> None:
    """Make ``zygote`` the one :class:`ZygoteKernelManager` asks (None: launch kernels as usual)."""
    global _ZYGOTE
    _ZYGOTE = zygote


class ForkedKernel:
    """What jupyter_client's provisioner needs of a ``Popen``, for a kernel that is the zygote's child, not ours."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = -signal.SIGKILL  # its exit status went to the zygote; gone is what counts
            except PermissionError:
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)  # it leads its own session: the kernel and its children

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _ForkFromZygote:
    """Each kernel forked from the worker's zygote where it can be (jupyter_client's launch, overridden)."""

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        provisioner = self.provisioner
        if _ZYGOTE is None or type(provisioner) is not LocalProvisioner:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        env = kw["env"] = self._sandbox_env(dict(kw.get("env") or os.environ))  # (kept if launched after all)
        try:
            pid = _ZYGOTE.fork(kernel_cmd, env, str(kw.get("cwd") or os.getcwd()), alone=True)
        except ZygoteUnavailable as exc:
            self.log.warning("kernel launched as usual: %s", exc)
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        self.log.info("kernel %d forked from the zygote", pid)
        provisioner.process = ForkedKernel(pid)
        provisioner.pid = provisioner.pgid = pid
        provisioner.cwd = kw.get("cwd") or os.getcwd()
        self._reconcile_connection_info(provisioner.connection_info)


class ZygoteKernelManager(_ForkFromZygote, Confining, AsyncKernelManager):
    """nbgrader's kernel manager in a worker (nbclient's are asynchronous)."""


class BlockingZygoteKernelManager(_ForkFromZygote, Confining, KernelManager):
    """The same, with jupyter_client's blocking methods (scripts, tests)."""


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m coursekit.kernelzygote")
    parser.add_argument("path", help="the Unix socket to answer on")
    parser.add_argument("--preload", default="", help="modules to import first, comma-separated")
    args = parser.parse_args(argv)
    preload = [m for m in [*BASE_PRELOAD, *args.preload.split(",")] if m and m.split(".")[0] not in NOT_PRELOADED]
    serve(args.path, list(dict.fromkeys(preload)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
