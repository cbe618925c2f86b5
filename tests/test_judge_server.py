"""graders.judge_server: the kernel's judge, its JSON protocol, and the judge a make grade worker's kernels share."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from graders.isolation import StudentSource
from graders.judge_server import COLD_HELPER_STARTED, SOCKET_ENV, request_from_json, request_to_json
from graders.outcomes import StudentError
from tests.processes import alive, ended, with_command_line

SLIDING = Path(__file__).parent / "submissions" / "ch01_tensors" / "sliding_window"


def _request(source=None, load_error=None, instructor=False) -> dict:
    return {"exercise": "sliding_window", "checks": ["contiguous_input"], "device": "cpu", "timeout": 10.0,
            "memory_mb": None, "instructor": instructor, "source": source, "load_error": load_error}


@pytest.mark.parametrize("source, load_error", [
    (StudentSource(label="your notebook", names=("f", "g"), payload=bytes(range(256)),
                   lines={"<ipython-input-1>": ["def f():\n", "    return 1\n"]}), None),
    (StudentSource.from_file(__file__, ["sliding_window"]), None),
    (None, StudentError("unsendable", "why", exception_types=("a.B", "builtins.Exception"))),
    (None, None),
])
def test_a_request_survives_json_unchanged(source, load_error):
    """The judge reads requests as JSON: nothing a kernel sends is unpickled in the judge."""
    request = _request(source, load_error)
    assert request_from_json(request_to_json(request)) == request


# A "kernel": a process that grades one answer through graders.check, as a notebook's check cell does.
# argv: the answer file, then how it behaves: "" (plainly), "claims the instructor" (answers with the reference,
# as the instructor's own notebook does) or "killed" (killed after its check, as Jupyter kills a stuck kernel).
_KERNEL = """
import os, signal, sys, graders
from graders.judge_server import client
namespace = {}
exec(open(sys.argv[1]).read(), namespace)
if sys.argv[2] == "claims the instructor":
    namespace["sliding_window"] = __import__("solutions.ch01_tensors", fromlist=["x"]).sliding_window
try:
    graders.check("sliding_window", namespace, "contiguous_input")
except AssertionError:
    pass
print("own judge started:", client()._process is not None, flush=True)
print("judge log:", bool(client().log_path) and os.path.exists(client().log_path), flush=True)
if sys.argv[2] == "killed":  # a kernel killed by Jupyter cannot clean up: its judge must
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _kernel(answer: Path, env: dict, how: str = "") -> str:
    done = subprocess.run([sys.executable, "-c", _KERNEL, str(answer), how], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == (-signal.SIGKILL if how == "killed" else 0), done.stderr
    return done.stdout


@contextlib.contextmanager
def _listening_judge(*options: str, prefix: str, own_tmpdir: bool = False, stdout=subprocess.DEVNULL):
    """A shared judge (``--listen``), as make grade's worker or nbgrader's autograde starts one, once its socket is
    there: yields it, the socket's path, the environment a kernel needs to find it, and the judge's folder. On the
    way out it is told to stop as a worker does (its stdin closes), and waited for."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))  # a short path: a Unix socket's may not exceed ~100 bytes
    path = folder / "judge"
    env = {k: v for k, v in os.environ.items() if k != "COURSE_INSTRUCTOR"}
    if own_tmpdir:  # so that what it leaves behind can be told from anything else's
        env["TMPDIR"] = str(folder)
    judge = subprocess.Popen([sys.executable, "-m", "graders.judge_server", "--listen", str(path), *options],
                             stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        yield judge, path, {**env, SOCKET_ENV: str(path)}, folder
    finally:
        judge.stdin.close()  # the worker has gone: the judge ends by itself
        try:
            judge.wait(timeout=30)
        finally:
            judge.kill()
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared_judge():
    # A hostile half request is dropped after --io-timeout: 2 s rather than the default 10 keeps 8 s of make test.
    with _listening_judge("--io-timeout", "2", prefix="sj") as (judge, _, env, _):
        yield judge, env


def test_kernels_one_after_another_share_one_judge_and_each_gets_its_own_verdict(shared_judge):
    judge, env = shared_judge
    correct = sorted(SLIDING.glob("correct_*.py"))[0]
    wrong = SLIDING / "bug_as_strided_in_place.py"
    first, second = _kernel(correct, env), _kernel(wrong, env)
    assert "PASS  sliding_window: contiguous_input" in first and "own judge started: False" in first
    assert "FAIL  sliding_window: contiguous_input" in second and "own judge started: False" in second
    assert judge.poll() is None  # still there for the next kernel


def test_a_kernel_cannot_claim_the_instructors_rights_from_the_shared_judge(shared_judge):
    """A kernel's request says whether it is the instructor's (reference imports allowed); the shared judge of a
    class's grading runs as no instructor, so the claim is ignored."""
    _, env = shared_judge
    correct = sorted(SLIDING.glob("correct_*.py"))[0]
    out = _kernel(correct, {**env, "COURSE_INSTRUCTOR": "1"}, "claims the instructor")
    assert "FAIL  sliding_window: contiguous_input" in out and "reference" in out, out


def test_without_a_shared_judge_listening_a_kernel_starts_its_own(tmp_path):
    correct = sorted(SLIDING.glob("correct_*.py"))[0]
    out = _kernel(correct, {**os.environ, SOCKET_ENV: str(tmp_path / "nobody-listens")})
    assert "PASS  sliding_window: contiguous_input" in out and "own judge started: True" in out


def test_a_hostile_connection_neither_crashes_the_shared_judge_nor_keeps_the_next_kernel_waiting(shared_judge):
    """A kernel that claims an enormous request, or sends half of one, is dropped; the next kernel is served."""
    import struct

    judge, env = shared_judge
    for hostile in (struct.pack(">Q", 1 << 62), struct.pack(">Q", 100) + b"{"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(env[SOCKET_ENV])
            connection.sendall(hostile)
            connection.settimeout(30)
            assert connection.recv(1) == b""  # hung up on
    out = _kernel(sorted(SLIDING.glob("correct_*.py"))[0], env)
    assert "PASS  sliding_window: contiguous_input" in out and judge.poll() is None


# (a kernel that exits by itself: CI's full run; make test has the two endings that used to leave files behind)
@pytest.mark.parametrize("ending", [pytest.param("exits", marks=pytest.mark.full), "killed", "jupyter"])
def test_a_kernels_judge_leaves_no_temporary_files(ending):
    """Every kernel used to leave a judge log and a pymp-* folder in /tmp (hundreds after a day of tests).

    "jupyter" is a real IPython kernel shut down as JupyterLab and nbgrader do it: ipykernel then terminates
    every child in its process group, which used to kill the judge before it could clean up (a pymp-* folder
    left per kernel) and made each shutdown take 2.6 s. The judge now leads a process group of its own."""
    answer = sorted(SLIDING.glob("correct_*.py"))[0]
    # A folder of its own with a short path: multiprocessing puts a socket in it, and a socket's path may not
    # exceed about 100 bytes (pytest's tmp_path under xdist is too long for that).
    temp = Path(tempfile.mkdtemp(prefix="judge-test-"))
    try:
        _kernel_leaves_nothing(temp, answer, ending)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _kernel_leaves_nothing(temp, answer, ending):
    if ending == "jupyter":
        _in_a_jupyter_kernel(temp, answer)
    else:
        printed = _kernel(answer, {**os.environ, "TMPDIR": str(temp)}, "killed" if ending == "killed" else "")
        assert "judge log: True" in printed, printed
    # The kernel does not wait for its judge to end: the judge notices its stdin close and cleans up after,
    # the runner it kept for the kernel's next check included (its output files: course-check-*).
    prefixes = ("course-judge-", "course-check-", "course-ranks-") + (() if ending == "killed" else ("pymp-",))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(p.name.startswith(prefixes) for p in temp.iterdir()):
        time.sleep(0.1)
    left = sorted(p.name for p in temp.iterdir() if p.name.startswith(prefixes))
    assert not left, f"the judge left {left} behind"


def _in_a_jupyter_kernel(temp, answer):
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env={**os.environ, "TMPDIR": str(temp)})
    kernel = manager.client()
    kernel.start_channels()
    try:
        kernel.wait_for_ready(timeout=60)
        printed = []
        code = _KERNEL.replace("sys.argv[1]", repr(str(answer))).replace("sys.argv[2]", repr(""))
        reply = kernel.execute_interactive(code, timeout=60, output_hook=lambda msg: printed.append(
            msg["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", printed
        assert "judge log: True" in "".join(printed), printed
    finally:
        kernel.stop_channels()
        manager.shutdown_kernel()


def test_a_request_interrupted_on_the_shared_judge_sends_the_next_ones_to_a_judge_of_the_kernels_own(
        shared_judge, monkeypatch):
    """An interrupted check cell (Jupyter's cell timeout) leaves its request running on the shared judge until its
    checks end; the kernel's next check cells must not queue behind it, so they go to a judge of its own."""
    import graders.judge_server as judge_server
    from graders.registry import get_exercise

    _, env = shared_judge
    monkeypatch.setenv(SOCKET_ENV, env[SOCKET_ENV])
    client = judge_server.JudgeClient()
    real_read = judge_server._read
    monkeypatch.setattr(judge_server, "_read", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    request = _request(StudentSource.from_file(str(sorted(SLIDING.glob("correct_*.py"))[0]), ["sliding_window"]))
    with pytest.raises(KeyboardInterrupt):
        client.grade(request, get_exercise("sliding_window"))
    monkeypatch.setattr(judge_server, "_read", real_read)


    class StartedItsOwn(Exception):
        pass

    def start_own():
        raise StartedItsOwn  # instead of starting one for real

    monkeypatch.setattr(client, "_start_own", start_own)
    try:
        with pytest.raises(StartedItsOwn):
            client._channel()
    finally:
        client.stop()


# --------------------------------------------------------------------------------------------------
# An autograded notebook's judge: its first exercises served by a cold helper while it warms up
# --------------------------------------------------------------------------------------------------
LR_RANGE = Path(__file__).parent / "submissions" / "ch04_data" / "lr_range_test"


def _ask(stream, exercise: str, checks: list[str], answer: Path, names: list[str]) -> dict:
    from graders.judge_server import _read, _write

    request = {**_request(StudentSource.from_file(str(answer), names)), "exercise": exercise, "checks": checks}
    _write(stream, request_to_json(request))
    reply = json.loads(_read(stream))
    assert "report" in reply, reply
    return {check["name"]: check["status"] for check in reply["report"]["results"]}


def _helper_in_log(log) -> int | None:
    """The helper's pid from what the judge has written so far (never waiting for more)."""
    written = b""
    while select.select([log], [], [], 0)[0] and (chunk := os.read(log.fileno(), 1 << 16)):
        written += chunk
    for line in written.decode().splitlines():
        if line.startswith(COLD_HELPER_STARTED):
            return int(line.split()[-1])
    return None


@contextlib.contextmanager
def _hinted_judge(hint: str):
    """A judge started as nbgrader's autograde starts one (told the notebook's exercises), its temporary files in a
    folder of their own; yields it, a kernel's connection to it, and that folder's leftovers once it has ended."""
    with _listening_judge("--exercises", hint, prefix="hj", own_tmpdir=True, stdout=subprocess.PIPE) as (
            judge, path, _, folder):
        left: list[str] = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(str(path))
                yield judge, connection.makefile("rwb"), left
        finally:
            judge.stdin.close()
            judge.wait(timeout=30)
            judge.stdout.read()  # its end: every process that held it (helper, forkservers) has ended
            # torchinductor_<user>: torch's own cache, one per user (in /tmp, shared by every torch process), made by
            # its compiler stack's import whoever imports it
            left.extend(sorted(p.name for p in folder.iterdir()
                               if p.name != "judge" and not p.name.startswith("torchinductor_")))


needs_descriptor_passing = pytest.mark.skipif(not hasattr(socket, "send_fds"),
                                              reason="needs Unix sockets that pass descriptors (not Windows)")
SLIDING_CORRECT = (sorted(SLIDING.glob("correct_*.py"))[0], ["sliding_window"])


@needs_descriptor_passing
@pytest.mark.parametrize("hint, helper_expected", [
    ("sliding_window,lr_range_test", True),    # a cold exercise first, one needing torch's compiler stack later
    # (the two cases with no helper, 20 s of make test's workers: CI's full run)
    pytest.param("lr_range_test,sliding_window", False, marks=pytest.mark.full),  # the first needs it: no gain
    pytest.param("sliding_window", False, marks=pytest.mark.full),                # none needs it
])
def test_a_hinted_judge_serves_its_first_exercises_from_a_cold_helper_that_hands_the_kernel_over(hint, helper_expected):
    """Told the notebook's exercises, a judge whose first exercises need no optimizer forks a helper that answers
    them at once while the judge warms up; at the first request for another exercise the helper hands over the
    kernel's connection, with that request, and ends. The kernel sees one connection and every verdict."""
    from graders.isolation import start_method

    helper_expected = helper_expected and start_method() == "forkserver"  # spawned runners: nothing to gain
    lr_range = (sorted(LR_RANGE.glob("correct_*.py"))[0], ["lr_range_test", "suggest_lr"])
    with _hinted_judge(hint) as (judge, stream, left):
        assert _ask(stream, "sliding_window", ["contiguous_input"], *SLIDING_CORRECT) == {"contiguous_input": "passed"}
        helper = _helper_in_log(judge.stdout)  # said in its log as it starts the helper, before the first reply
        assert (helper is not None) == helper_expected
        if helper is not None:
            assert alive(helper)
        assert _ask(stream, "lr_range_test", ["validates_arguments"], *lr_range) == {"validates_arguments": "passed"}
        if helper is not None:
            assert ended(helper, within=30)  # handed over, and gone
        wrong = SLIDING / "bug_as_strided_in_place.py"  # the judge itself now answers a cold exercise too
        assert _ask(stream, "sliding_window", ["contiguous_input"], wrong, ["sliding_window"]) == \
            {"contiguous_input": "failed"}
        assert judge.poll() is None
    assert left == []


@needs_descriptor_passing
def test_a_helper_that_never_hands_over_ends_with_its_judge_and_leaves_nothing_behind():
    """A notebook that never reaches its later exercises (a kernel that died, say): the helper still serves when
    the judge is told to stop, and both end, with their forkservers, runners and temporary files."""
    from graders.isolation import start_method

    with _hinted_judge("sliding_window,lr_range_test") as (judge, stream, left):
        assert _ask(stream, "sliding_window", ["contiguous_input"], *SLIDING_CORRECT) == {"contiguous_input": "passed"}
        helper = _helper_in_log(judge.stdout)
        assert (helper is not None) == (start_method() == "forkserver")
    assert judge.returncode == 0 and (helper is None or ended(helper, within=30))
    assert left == []


# ==================================================================================================
# The attacks of tests/hostile/ through the notebooks' judge (issue 33): one "kernel" defines each answer as a notebook
# cell does (its functions are __main__'s, so they travel by value), calls graders.check, and checks an honest answer
# right after with the same judge. Those whose attack runs inside the answer's function: module-level attacks act in
# the kernel, the student's own process, and the ones that loop cost a check's whole time limit; tests/test_isolation.py
# has both. One kernel for all (one import of torch, one judge): 8 kernels took 66 s.
# ==================================================================================================
_NOTEBOOK_KERNEL = """
import json, sys, graders
def judged(path):
    cell = {"__name__": "__main__"}
    exec(compile(open(path).read(), "<ipython-input-1>", "exec"), cell)
    try:
        graders.check("is_contiguous", cell)
        return {"passed": True}
    except graders.ExerciseNotPassed as failed:
        report = failed.report
        return {"passed": False, "score": report.score, "max": report.max_score,
                "messages": [r.message for r in report.results if not r.passed]}
honest = sys.argv[1]
for attack in sys.argv[2:]:
    print("VERDICTS", json.dumps([attack, judged(attack), judged(honest)]), flush=True)
"""
HOSTILE = Path(__file__).parent / "hostile"
_THROUGH_THE_NOTEBOOK = ("reads_solutions_through_cat", "plants_a_file_in_the_course", "escapes_with_a_double_fork",
                         "signals_its_parent", "writes_into_its_parents_stdout", "reads_its_parents_environment",
                         "connects_over_tcp", "sends_a_udp_datagram", "opens_files_until_refused")


def test_attacks_through_the_notebooks_judge_fail_and_the_next_answer_gets_its_grade(tmp_path):
    from graders import confine
    from tests.test_isolation import _nothing_planted, expectation

    abi = confine.support().abi
    attacks = [HOSTILE / f"{name}.py" for name in _THROUGH_THE_NOTEBOOK]
    stopped_here = [p for p in attacks if expectation(p).get("needs_abi", 0) <= abi]
    if len(stopped_here) < len(attacks):
        print("not confined enough here for:", [p.stem for p in attacks if p not in stopped_here])
    if not stopped_here:
        pytest.skip(confine.support().reason or f"Landlock ABI {abi} stops none of these attacks")
    honest = sorted((Path(__file__).parent / "submissions" / "ch01_tensors" / "is_contiguous").glob("correct_*.py"))[0]
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_INSTRUCTOR", SOCKET_ENV)}
    done = subprocess.run([sys.executable, "-c", _NOTEBOOK_KERNEL, str(honest), *map(str, stopped_here)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = [json.loads(line.split(" ", 1)[1]) for line in done.stdout.splitlines() if line.startswith("VERDICTS ")]
    # one line per attack, in order: nothing an answer wrote forged another
    assert [Path(v[0]).stem for v in verdicts] == [p.stem for p in stopped_here], done.stdout[-3000:]
    planted = []
    for path in stopped_here:  # every planted file is removed before anything is asserted
        try:
            _nothing_planted(expectation(path))
        except AssertionError as found:
            planted.append(str(found))
    assert not planted, planted
    for path, (_, attack, after) in zip(stopped_here, verdicts):
        expected = expectation(path)
        assert not attack["passed"] and attack["score"] == expected["score"], (path.stem, attack)
        assert all(expected["words"] in message for message in attack["messages"]), (path.stem, attack)
        assert after == {"passed": True}, (path.stem, "the honest answer after it", after)
        marker = re.search(r'MARKER = "([^"]+)"', path.read_text())
        if marker:  # nothing it started outlives its check
            assert ended(*with_command_line(marker.group(1))), f"{path.stem}: a process it started is still running"
