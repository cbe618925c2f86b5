"""coursekit.kernelzygote: make grade's kernels, forked from a process that imported torch once."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest

from coursekit import kernelzygote
from coursekit.kernelzygote import BlockingZygoteKernelManager, ForkedKernel, Zygote, ZygoteKernelManager, ZygoteUnavailable
from tests.processes import alive

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"),
                                reason="kernels are forked only where fork exists (tested on Linux)")


_MADE: list[Path] = []


def _short(prefix: str) -> Path:
    """A folder with a short path (a Unix socket's path holds about 100 bytes; pytest's tmp_path under xdist is
    longer), removed when the module's tests end (_remove_short_folders)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    _MADE.append(folder)
    return folder


@pytest.fixture(scope="module", autouse=True)
def _remove_short_folders():
    yield
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)


@pytest.fixture(scope="module")
def zygote():
    folder = _short("kz")
    started = Zygote(folder / "zygote", folder / "zygote.log", ["json"])
    yield started
    started.close()


@pytest.fixture
def forked(zygote, tmp_path):
    """A kernel manager whose kernels come from the zygote, and a way to run code in its kernel."""
    kernelzygote.use(zygote)
    manager = BlockingZygoteKernelManager(transport="ipc", ip=str(_short("kk") / "k"))
    manager.start_kernel(cwd=str(tmp_path), env={**os.environ, "COURSE_ZYGOTE_PROBE": "given"})
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)

    def run(code: str, timeout: float = 30) -> str:
        printed = []
        reply = client.execute_interactive(code, timeout=timeout, output_hook=lambda m: printed.append(
            m["content"].get("text", "") if m["msg_type"] == "stream" else ""))
        return "".join(printed) + ("" if reply["content"]["status"] == "ok" else f"[{reply['content']['status']}]")

    try:
        yield manager, run
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        kernelzygote.use(None)


def test_a_forked_kernel_is_a_fork_with_what_nbgrader_gave_it(forked, zygote, tmp_path):
    assert issubclass(ZygoteKernelManager, kernelzygote._ForkFromZygote)  # what nbgrader uses: the same launch
    manager, run = forked
    assert isinstance(manager.provisioner.process, ForkedKernel)  # forked, not launched
    assert os.getppid() != manager.provisioner.pid
    printed = run("import os, sys\n"
                  "print(os.getcwd(), os.environ['COURSE_ZYGOTE_PROBE'], os.getsid(0) == os.getpid(),"
                  " os.getppid(), 'torch' in sys.modules, 'coursekit.kernelzygote' in sys.modules,"
                  " os.readlink('/proc/self/fd/0'))")
    cwd, probe, own_session, parent, torch_loaded, zygote_module, stdin = printed.split()
    assert (cwd, probe, own_session) == (str(tmp_path), "given", "True")
    assert int(parent) == zygote.process.pid
    assert torch_loaded == "True"          # imported once, in the zygote
    assert zygote_module == "False"        # the course's own modules are imported afresh
    assert stdin == os.devnull


def test_two_forked_kernels_do_not_share_their_global_random_state(zygote, tmp_path):
    """A new interpreter seeds Python's and NumPy's global generators from the OS; two forks of one process would
    otherwise draw the same numbers."""
    drawn = []
    for _ in range(2):
        kernelzygote.use(zygote)
        manager = BlockingZygoteKernelManager(transport="ipc", ip=str(_short("kk") / "k"))
        manager.start_kernel(cwd=str(tmp_path))
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            out = []
            client.execute_interactive("import random, numpy\nprint(random.random(), numpy.random.rand())",
                                       timeout=30, output_hook=lambda m: out.append(m["content"].get("text", "")))
            drawn.append("".join(out))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
            kernelzygote.use(None)
    assert drawn[0].strip() and drawn[0] != drawn[1]


def test_an_interrupt_reaches_a_forked_kernel_and_a_kill_ends_it(forked):
    manager, run = forked
    started = time.monotonic()
    import threading

    threading.Timer(1.0, manager.interrupt_kernel).start()
    assert "[error]" in run("import time\nwhile True: time.sleep(0.01)", timeout=30)  # KeyboardInterrupt
    assert time.monotonic() - started < 20
    pid = manager.provisioner.pid
    manager.shutdown_kernel(now=True)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
    assert not manager.is_alive()


def test_a_kernel_ends_with_its_zygote(tmp_path):
    """A worker stopped at its time limit is killed with its process group, its zygote included: the kernels that
    zygote forked (each in a session of its own) must not outlive it."""
    folder = _short("kz")
    own = Zygote(folder / "zygote", folder / "zygote.log", [])
    kernelzygote.use(own)
    manager = BlockingZygoteKernelManager(transport="ipc", ip=str(folder / "k"))
    try:
        manager.start_kernel(cwd=str(tmp_path))
        pid = manager.provisioner.pid
        own.process.kill()
        own.process.wait()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        kernelzygote.use(None)
        manager.shutdown_kernel(now=True)
        own.close()


def test_what_the_zygote_cannot_fork_is_launched_as_usual(zygote, tmp_path):
    with pytest.raises(ZygoteUnavailable):
        zygote.fork(["/bin/echo", "-m", "ipykernel_launcher"], dict(os.environ), str(tmp_path))
    gone = Zygote(_short("kz") / "none", tmp_path / "log", [])
    gone.process.kill()
    gone.process.wait()
    with pytest.raises(ZygoteUnavailable):
        gone.fork([sys.executable, "-m", "ipykernel_launcher", "-f", "x.json"], dict(os.environ), str(tmp_path), wait_s=5)
    # and the kernel manager then launches the kernel itself
    kernelzygote.use(gone)
    manager = BlockingZygoteKernelManager(transport="ipc", ip=str(_short("kk") / "k"))
    try:
        manager.start_kernel(cwd=str(tmp_path))
        assert not isinstance(manager.provisioner.process, ForkedKernel)
        assert manager.is_alive()
    finally:
        kernelzygote.use(None)
        manager.shutdown_kernel(now=True)
        os.kill(os.getpid(), 0)  # (this test process is untouched)


def test_a_forked_kernel_reports_its_death(forked):
    """nbgrader learns that a kernel died (os._exit in an answer) from the kernel manager: a fork must say so too."""
    manager, run = forked
    pid = manager.provisioner.pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while manager.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not manager.is_alive()
