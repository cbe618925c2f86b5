"""coursekit.kernel_sandbox: a grading kernel confined before its first cell, its checks judged outside.

What `nbgrader autograde` starts from the course root (``nbgrader_config.py`` names ConfinedKernelManager): a kernel
over TCP, launched through the sandbox. make grade's kernels, forked from a zygote over IPC, are attacked through a
whole class in tests/test_classgrade.py.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from coursekit import kernel_sandbox
from graders import confine

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kernels are confined on Linux"),
              pytest.mark.skipif(not confine.support().available,
                                 reason=f"no Landlock on this machine: {confine.support().reason}")]

# Each line: what a kernel tries; it prints "GOT <what>" where it succeeds. None of it may.
ATTEMPTS = f"""
import os, socket, subprocess
def attempt(what, action):
    try:
        action()
    except Exception:
        return print("refused", what)
    print("GOT", what)
attempt("the reference", lambda: open({str(ROOT / 'solutions' / 'ch01_tensors.py')!r}).read())
attempt("a chapter's checks", lambda: open({str(ROOT / 'graders' / 'ch01_tensors' / '__init__.py')!r}).read())
attempt("the tests' fixtures", lambda: os.listdir({str(ROOT / 'tests' / 'submissions')!r}))
attempt("a cat of the reference", lambda: subprocess.run(["cat", {str(ROOT / 'solutions' / 'ch01_tensors.py')!r}],
                                                         check=True, capture_output=True))
attempt("a file in the course", lambda: open({str(ROOT / 'planted_by_a_kernel.txt')!r}, "w").write("x"))
attempt("a file beside its folder", lambda: open(os.path.join(os.path.dirname(os.getcwd()), "next.txt"), "w").write("x"))
attempt("a TCP connection", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
attempt("the grading process's environment", lambda: open(f"/proc/{{os.getppid()}}/environ").read())
attempt("a signal out", lambda: os.kill(os.getppid(), 0))
"""


@pytest.fixture
def kernel(tmp_path):
    """A kernel of ConfinedKernelManager (blocking twin) in ``tmp_path/work``, and a way to run code in it."""
    work = tmp_path / "work"
    work.mkdir()
    manager = kernel_sandbox.BlockingConfinedKernelManager()
    manager.start_kernel(cwd=str(work), extra_arguments=["--HistoryManager.hist_file=:memory:"])
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)

    def run(code: str) -> str:
        out: list[str] = []

        def hook(message):
            content = message["content"]
            if message["msg_type"] == "stream":
                out.append(content["text"])
            elif message["msg_type"] == "error":
                out.append(f"[{content['ename']}: {content['evalue']}]")

        client.execute_interactive(code, timeout=60, output_hook=hook)
        return "".join(out)

    try:
        yield run, work, manager
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_kernel_refuses_every_attempt_writes_its_folder_and_its_checks_are_judged_outside(kernel):
    run, work, manager = kernel
    printed = run(ATTEMPTS)
    assert printed.count("refused") == 9 and "GOT" not in printed, printed
    assert not (ROOT / "planted_by_a_kernel.txt").exists()
    assert run("open('mine.txt', 'w').write('x'); print(open('mine.txt').read())") == "x\n"
    assert (work / "mine.txt").exists()  # its own folder: nbgrader's copy of the submission
    scratch = run("import os, tempfile; print(tempfile.gettempdir())").strip()
    assert scratch == manager._course_scratch and not scratch.startswith(str(work))
    # A DataLoader's workers pass tensors through sockets in TMPDIR (its scratch): they work in a confined kernel.
    loaded = run("import torch\nfrom torch.utils.data import DataLoader\n"
                 "print([b.tolist() for b in DataLoader(torch.arange(6), batch_size=3, num_workers=2)])")
    assert loaded.strip() == "[[0, 1, 2], [3, 4, 5]]", loaded
    assert "refused" in run("import os\ntry:\n    os.symlink('/etc/hostname', 'a_link')\n"
                            "except OSError:\n    print('refused')")  # (its folder: nbgrader writes there next)
    # Importing the course works (graders/ is listed, its chapters' checks not readable), and a check cell's
    # check is judged by the judge this process started, outside the sandbox, which reads the checks.
    fixtures = ROOT / "tests" / "submissions" / "ch01_tensors" / "is_contiguous"
    right, wrong = (sorted(fixtures.glob(f"{kind}_*.py"))[0].read_text() for kind in ("correct", "nothing"))
    checks = "check('is_contiguous', globals(), 'contiguous_layouts', 'non_contiguous_layouts')\n"
    verdict = run("from graders import check\n" + right + "\n" + checks + "print('passed')")
    assert verdict.rstrip().endswith("passed"), verdict
    # The judge is named to the kernels alone: a notebook this process runs next (nbval's) starts its own, with its
    # own rights (this one leaked into the test process once, and judged an instructor's notebook as a student's).
    from graders.judge_server import SOCKET_ENV

    assert SOCKET_ENV not in os.environ
    verdict = run(wrong + "\n" + checks)
    assert "[ExerciseNotPassed" in verdict or "[AssertionError" in verdict, verdict


def test_a_kernels_scratch_goes_with_it(tmp_path):
    manager = kernel_sandbox.BlockingConfinedKernelManager()
    manager.start_kernel(cwd=str(tmp_path), extra_arguments=["--HistoryManager.hist_file=:memory:"])
    scratch = manager._course_scratch
    assert os.path.isdir(scratch)
    manager.shutdown_kernel(now=True)
    assert not os.path.exists(scratch)


def test_the_ports_a_kernel_may_bind_are_its_own_over_tcp_and_none_over_ipc(tmp_path):
    tcp = tmp_path / "tcp.json"
    tcp.write_text('{"transport": "tcp", "shell_port": 5001, "iopub_port": 5002, "stdin_port": 5003, '
                   '"control_port": 5004, "hb_port": 5005}')
    ipc = tmp_path / "ipc.json"
    ipc.write_text('{"transport": "ipc", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, '
                   '"hb_port": 5}')
    assert kernel_sandbox._tcp_ports(str(tcp)) == (5001, 5002, 5003, 5004, 5005)
    assert kernel_sandbox._tcp_ports(str(ipc)) == ()
    assert kernel_sandbox.connection_file(["python", "-m", "ipykernel_launcher", "-f", str(tcp)]) == str(tcp)


def test_a_students_own_validate_runs_unconfined(tmp_path, monkeypatch):
    """nbgrader's Validate (the student's button, on their own machine) runs the whole notebook as they would run it:
    its demonstrations download data and write files outside its folder. Only grading is confined."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    manager = kernel_sandbox.BlockingConfinedKernelManager()
    assert kernel_sandbox.SANDBOX_ENV not in manager._sandbox_env(dict(os.environ))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    env = manager._sandbox_env(dict(os.environ))
    assert env[kernel_sandbox.SANDBOX_ENV] == "1"
    shutil.rmtree(env[kernel_sandbox.SCRATCH_ENV])

