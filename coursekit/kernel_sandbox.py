"""The Jupyter kernel that runs a student's notebook for grading, confined by the operating system (issue 34).

``make grade`` runs every submission in a kernel, and the student's answer cells run there with the rights of
whoever grades: without confinement one cell could rewrite its own grade of record, another student's, or read
another student's answers. Each such kernel is confined (:mod:`graders.confine`, the layer the checks' runners use)
before it runs a line of the notebook:

- **files**: it reads the Python environment, the course's code (not ``solutions/``, the chapters' checks or the
  tests), matplotlib's font cache and its own connection file; it writes only its working folder (the copy of its
  one submission that nbgrader executes), a private scratch (``TMPDIR``, ``IPYTHONDIR``), the folder of its own
  IPC sockets and ``/dev/shm``. Nothing else of the course folder: not ``submitted/``, ``autograded/``, the
  gradebook, ``.classgrade/`` (the grades of record), ``course/`` or ``release/``;
- **network**: no TCP at all where the kernel talks over IPC sockets (``make grade``); where it talks over TCP
  (a plain ``nbgrader autograde``), bind on its own five ports only, and never connect;
- **processes**: no signal, ``ptrace`` or ``/proc`` access to any process outside (Landlock's scoping), no new
  privileges, no capabilities, the runners' rlimits.

Its checks are judged outside: the kernel's check cells send the answer to a judge started by the grading process
before the kernel (``$COURSE_JUDGE_SOCKET``), which runs each check in a confined runner of its own.

Two ways in: a kernel forked from ``make grade``'s zygote calls :func:`confine_this_kernel` in the fork
(:mod:`coursekit.kernelzygote`); any other kernel is started through ``python -m coursekit.kernel_sandbox --
<kernel command>``, which confines itself and then starts the kernel in the same process
(:class:`ConfinedKernelManager`, what ``nbgrader_config.py`` names, does this, and starts the judge where nbgrader has
not). A confined kernel's check cells find the exercises in ``graders/outlines.json`` (names, checks, points), since
the checks themselves are not readable there. Off Linux, or where the kernel offers no Landlock,
nothing is applied and the reason is logged (``COURSE_REQUIRE_CONFINEMENT=1`` refuses to grade instead).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTLINES_ENV = "_COURSE_EXERCISE_OUTLINES"  # (graders.registry.OUTLINES_ENV; not imported: the launcher stays light)
SANDBOX_ENV = "_COURSE_KERNEL_SANDBOX"  # "1" in a kernel's environment: confine it as it starts
SOCKETS_ENV = "_COURSE_KERNEL_SOCKETS"  # the folder of this kernel's IPC sockets (written; make grade's workers)
SCRATCH_ENV = "_COURSE_KERNEL_SCRATCH"  # a private folder for TMPDIR and IPYTHONDIR (made if missing)


def connection_file(argv: list[str]) -> str | None:
    """The ``-f`` argument of a kernel command."""
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--f="):
            return arg[4:]
    return None


def _tcp_ports(path: str | None) -> tuple[int, ...]:
    """The ports a kernel binds, from its connection file (none over IPC)."""
    if not path:
        return ()
    with contextlib.suppress(OSError, ValueError), open(path) as f:
        info = json.load(f)
        if info.get("transport", "tcp") == "tcp":
            return tuple(int(info[k]) for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
                         if info.get(k))
    return ()


def _matplotlib_dirs() -> list[str]:
    """Where matplotlib reads its configuration and font cache (found as matplotlib does, without importing it:
    it reads ``MPLBACKEND`` when imported, which the kernel sets later). Read only: a kernel writes no cache
    another kernel reads."""
    if os.environ.get("MPLCONFIGDIR"):
        return [os.environ["MPLCONFIGDIR"]]
    home = os.path.expanduser("~")
    return [os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "matplotlib"),
            os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "matplotlib")]


def kernel_rules(cwd: str, argv: list[str]):
    """What a grading kernel started with ``argv`` in ``cwd`` may touch (graders.confine.Rules)."""
    from graders import confine
    from graders.isolation import course_hidden, process_limit

    connection = connection_file(argv)
    ports = _tcp_ports(connection)
    reads = confine.system_reads()
    # The instructor grading their own notebooks (COURSE_INSTRUCTOR=1 in the grading process, as the round trips
    # and `make notebooks` run) reads the reference answers, as the judge's runners then do; a student never does.
    instructor = os.environ.get("COURSE_INSTRUCTOR") == "1"
    course = [str(ROOT / "coursekit"), str(ROOT / "graders")] + ([str(ROOT / "solutions")] if instructor else [])
    reads += confine.reads_except(course, [] if instructor else course_hidden())
    reads += _matplotlib_dirs()
    if connection:
        reads.append(connection)
    if os.environ.get(OUTLINES_ENV):
        reads.append(os.environ[OUTLINES_ENV])
    # Its folder without links or special files: nbgrader (unconfined) writes the executed notebook into it
    # afterwards, and a symbolic link put in its place would lead that write anywhere (the gradebook, another
    # student's notebook). Its scratch (TMPDIR: multiprocessing's sockets, a DataLoader's workers) and its sockets'
    # folder may hold sockets; nothing outside reads either (the scratch is removed, links unfollowed).
    plain = [cwd]
    writes = [os.environ[SCRATCH_ENV], "/dev/shm"] + ([os.environ[SOCKETS_ENV]] if os.environ.get(SOCKETS_ENV) else [])
    # graders/ is listed, not read: Python lists a package's folder to import from it, and its chapters' checks,
    # beneath it, stay unreadable (their names are no secret: the exercises' list says them)
    return confine.Rules(read=tuple(reads), write=tuple(writes), write_plain=tuple(plain),
                         devices=tuple(confine.default_devices()),
                         listed=(str(ROOT / "graders"),), tcp=False, tcp_bind_ports=ports, processes=process_limit())


def confine_this_kernel(cwd: str, argv: list[str]) -> str:
    """Confine this process, a kernel about to start in ``cwd`` (the line for the log: what was enforced, or why
    nothing was). Irreversible; everything the kernel starts inherits it."""
    from graders import confine
    from graders.isolation import CONFINE_ENV, REQUIRE_CONFINEMENT_ENV

    if os.environ.get(CONFINE_ENV) == "0":
        return f"kernel NOT confined: {CONFINE_ENV}=0 was set"

    import tempfile

    if not os.environ.get(SCRATCH_ENV):
        os.environ[SCRATCH_ENV] = tempfile.mkdtemp(prefix="kernel-")
    scratch = os.environ[SCRATCH_ENV]
    os.makedirs(scratch, exist_ok=True)
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = scratch
    # ipykernel forwards a subprocess's output to the notebook through a TCP socket on an ephemeral port, which a
    # kernel without TCP cannot open: that output goes to the kernel's own stderr (the grading log, never a cell)
    # instead, and ipykernel's warning saying so is not repeated for every submission.
    import warnings

    warnings.filterwarnings("ignore", message="Couldn't bind IOPub Pipe", category=UserWarning)
    os.environ["IPYTHONDIR"] = os.path.join(scratch, "ipython")  # IPython writes its profile there
    tempfile.tempdir = None
    applied = confine.apply(kernel_rules(cwd, argv), required=os.environ.get(REQUIRE_CONFINEMENT_ENV) == "1")
    if applied.abi:
        _children_from_own_proc()
    return confine.describe(applied) if applied.abi else f"kernel NOT confined: {applied.reason}"


def _children_from_own_proc() -> None:
    """ipykernel ends its children at exit by listing every process of the machine (psutil reads all of /proc); a
    confined kernel may read its own /proc entry only, and that failed with a traceback at every kernel's exit. Its
    children are read from there instead (direct children of its process group; the grading process ends the rest)."""
    from ipykernel import kernelbase

    def own_children(kernel) -> list:
        import psutil

        found = []
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as f:
                for pid in f.read().split():
                    with contextlib.suppress(OSError, psutil.Error):
                        if os.getpgid(int(pid)) == os.getpgrp():
                            found.append(psutil.Process(int(pid)))
        return found

    kernelbase.Kernel._process_children = own_children


# --------------------------------------------------------------------------------------------------
# The grading process's side
# --------------------------------------------------------------------------------------------------
_JUDGE = None
_SCRATCHES: list[str] = []  # every kernel scratch this process made: a kernel that died skips its manager's cleanup


def _remove_scratches() -> None:
    import shutil

    while _SCRATCHES:
        shutil.rmtree(_SCRATCHES.pop(), ignore_errors=True)


atexit.register(_remove_scratches)


def _outlines() -> str:
    """The exercises' outlines (names, checks, points: graders/outlines.json, kept equal to the registry by
    tests/test_core.py), which a confined kernel's check cells send their answer with: the checks themselves are not
    readable there. A committed file, not one made here: making it imports every chapter's checks and torch, which
    cost each nbgrader command about 3 s on a 2-core machine."""
    return str(ROOT / "graders" / "outlines.json")


def _judge_outside() -> str:
    """The socket of a judge for the kernels' checks, started by this (unconfined) process on the first kernel and
    given to each kernel in its environment (``$COURSE_JUDGE_SOCKET``): a confined kernel's own judge would be
    confined too, and could not read the chapters' checks. A make grade worker has its own already
    (coursekit.gradeworker). This process's own environment is left as it was: nothing else it starts is sent to
    this judge, which judges with the rights this process had when it started it (the instructor's or not)."""
    global _JUDGE
    from graders.judge_server import SOCKET_ENV

    if os.environ.get(SOCKET_ENV) and _JUDGE is None:
        return os.environ[SOCKET_ENV]
    if _JUDGE is None and os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # nbgrader's autograde starts a judge before each kernel whose notebook uses the graders (coursekit.autograde):
        # none here means none is needed, and starting one would cost a torch import per notebook
        return ""
    if _JUDGE is None:
        import shutil
        import tempfile

        from coursekit.gradeworker import SharedJudge

        folder = Path(tempfile.mkdtemp(prefix="cj"))  # short: a Unix socket's path has about 100 bytes
        before = os.environ.get(SOCKET_ENV)
        _JUDGE = SharedJudge(folder / "judge", folder / "judge.log")
        if before is None:  # (SharedJudge names itself in os.environ, for a worker's kernels)
            os.environ.pop(SOCKET_ENV, None)
        atexit.register(shutil.rmtree, folder, True)
    _JUDGE.ensure_running()
    return str(_JUDGE.path)


class Confining:
    """A kernel manager whose kernels are confined (a mixin for jupyter_client's managers): each gets a private
    scratch, made here and removed with the kernel, the judge outside, and, when launched (not forked), this module's
    launcher in front of its command."""

    def _sandbox_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment of a kernel to confine (unchanged off Linux: there is nothing to confine it with; and for
        a student's own Validate, which runs their notebook on their machine as they would: its demonstrations
        download data and write files where they please)."""
        if not sys.platform.startswith("linux") or env.get(SANDBOX_ENV) == "1":
            return env
        if os.environ.get("NBGRADER_EXECUTION") == "validate":
            return env
        import tempfile

        from graders.judge_server import SOCKET_ENV

        self._course_scratch = tempfile.mkdtemp(prefix="kernel-")
        _SCRATCHES.append(self._course_scratch)  # removed with the kernel, or at the latest when this process exits
        env = {**env, SANDBOX_ENV: "1", SCRATCH_ENV: self._course_scratch, OUTLINES_ENV: _outlines(),
               SOCKET_ENV: env.get(SOCKET_ENV) or _judge_outside()}
        if getattr(self, "transport", "tcp") == "ipc":  # its sockets are files: their folder is written
            env[SOCKETS_ENV] = os.path.dirname(os.path.abspath(self.ip))
        return env

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        env = kw["env"] = self._sandbox_env(dict(kw.get("env") or os.environ))
        if env.get(SANDBOX_ENV) == "1" and kernel_cmd[1:3] != ["-m", __name__]:
            kernel_cmd = [sys.executable, "-m", __name__, "--", *kernel_cmd]
        return await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        scratch = getattr(self, "_course_scratch", None)
        if scratch:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def _managers():
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    class ConfinedKernelManager(Confining, AsyncKernelManager):
        """What ``nbgrader_config.py`` names for ``nbgrader autograde`` (nbclient's managers are asynchronous)."""

    class BlockingConfinedKernelManager(Confining, KernelManager):
        """The same, with jupyter_client's blocking methods (scripts, tests)."""

    return ConfinedKernelManager, BlockingConfinedKernelManager


def __getattr__(name: str):
    # jupyter_client is imported only by the processes that start kernels, not by the kernel this module launches
    if name in ("ConfinedKernelManager", "BlockingConfinedKernelManager"):
        managers = dict(zip(("ConfinedKernelManager", "BlockingConfinedKernelManager"), _managers()))
        globals().update(managers)
        return managers[name]
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """``python -m coursekit.kernel_sandbox -- <kernel command>``: confine this process, then become the kernel
    (unconfined where ``$_COURSE_KERNEL_SANDBOX`` is not "1": only a kernel manager of this module asks for it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m coursekit.kernel_sandbox -- <kernel command>", file=sys.stderr)
        return 2
    said = confine_this_kernel(os.getcwd(), argv) if os.environ.get(SANDBOX_ENV) == "1" else ""
    if said.startswith("kernel NOT"):  # (the kernel's own stderr: the grading process's log, never a cell)
        print(said, file=sys.stderr, flush=True)
    if argv[1:3] != ["-m", "ipykernel_launcher"] or os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        os.execv(argv[0], argv)  # another kernel: as it is, confined
    # This interpreter's kernel: started here (its ipykernel patched as above, and one Python start saved), with
    # the course's own modules imported afresh by it, as a kernel of its own would.
    for name in [m for m in sys.modules if m.split(".")[0] in ("coursekit", "graders")]:
        del sys.modules[name]
    sys.argv = ["ipykernel_launcher", *argv[3:]]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    return 0


if __name__ == "__main__":
    sys.exit(main())
