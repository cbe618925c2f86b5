"""Student code runs apart from the judgement: hostile answers cannot pass, crash or hang the grader.

Each file in tests/hostile/ answers ``is_contiguous`` and declares what must happen to it
(``EXPECT``: ``score``, the ``words`` every failed check's message says, and optionally ``passes``, ``needs_abi``,
``must_not_exist``, ``checks``, the only checks it is graded on where each costs seconds, and ``timeout``); it is
graded both by ``graders.check_file`` and by the command line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import graders
from graders.isolation import Limits, Runner, StudentSource
from tests.processes import alive, cpu_seconds, descendants, ended, niceness, with_command_line

HOSTILE = sorted((Path(__file__).parent / "hostile").glob("*.py"))


def expectation(path: Path) -> dict:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "EXPECT":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} declares no EXPECT")


def judge_verdict(report, expected: dict, name: str) -> None:
    text = report.as_text()
    assert not report.grader_errors or "patches" in name, text
    if expected.get("passes"):
        assert report.passed and report.score == report.max_score, text
        return
    assert not report.passed, text
    if "score" in expected:
        assert report.score == expected["score"], text
    assert report.score < report.max_score, text
    if expected["words"]:
        assert all(expected["words"] in r.message for r in report.results if not r.passed), text


def _needs_confinement(expected: dict) -> None:
    """An attack only the operating system stops is stopped only where it confines (graders.confine)."""
    from graders import confine

    found = confine.support()
    if expected.get("needs_abi", 0) > found.abi:
        pytest.skip(f"the attack is stopped by Landlock ABI {expected['needs_abi']}; "
                    + (f"this kernel has ABI {found.abi}" if found.abi else found.reason))


def _nothing_planted(expected: dict) -> None:
    root = Path(graders.__file__).resolve().parent.parent
    planted = [root / p for p in expected.get("must_not_exist", []) if (root / p).exists()]
    for path in planted:
        path.unlink()
    assert not planted, f"the answer wrote {planted} into the course"


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.stem)
def test_hostile_answer_is_judged_correctly(path, tmp_path):
    expected = expectation(path)
    _needs_confinement(expected)
    copy = tmp_path / path.name  # what an answer writes next to itself lands there, not in the repository
    copy.write_text(path.read_text())
    start = time.perf_counter()
    # An answer that loops runs into every check's limit: 1 s each instead of 2 keeps 6 s of make test.
    limit = expected.get("timeout", 1.0 if "did not finish" in expected.get("words", "") else 2.0)
    report = graders.check_file("is_contiguous", str(copy), expected.get("checks"), device="cpu", timeout=limit)
    _nothing_planted(expected)
    judge_verdict(report, expected, path.stem)
    assert time.perf_counter() - start < 40
    marker = re.search(r'MARKER = "([^"]+)"', path.read_text())
    if marker:  # every process the answer started was ended with its runner
        assert ended(*with_command_line(marker.group(1))), "a process started by the answer is still running"




# disables_alarm loops through every check's time limit (17 s here); the library test above judges it in make test,
# and CI's full run judges it through the command line too, as it does the two attacks on files (make test has them
# through the library; through the command line it has the one on the judge's stdout, the command line's own channel).
_CLI_IN_CI_ONLY = ("disables_alarm", "reads_solutions_through_cat", "plants_a_file_in_the_course", "fills_its_scratch")
@pytest.mark.slow
@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.full] if p.stem in _CLI_IN_CI_ONLY else [])
                                  for p in HOSTILE if p.stem in
                                  ("sys_exit", "os_exit", "segfault", "keyboard_interrupt", "prints_and_is_correct",
                                   "patches_comparisons", "disables_alarm", "writes_into_its_parents_stdout",
                                   "reads_solutions_through_cat", "plants_a_file_in_the_course",
                                   "starts_a_fork_storm", "fills_its_scratch")], ids=lambda p: p.stem)
def test_hostile_answer_through_the_command_line(path, tmp_path):
    """Exit status 0 only when every check passed; --json is exactly one JSON object on stdout."""
    _needs_confinement(expectation(path))
    copy = tmp_path / path.name
    copy.write_text(path.read_text())
    result = subprocess.run([sys.executable, "-m", "graders", "check", "is_contiguous", str(copy), "--json",
                             "--device", "cpu", "--timeout", str(expectation(path).get("timeout", 2))], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout)  # raises if anything else reached stdout
    expected = expectation(path)
    _nothing_planted(expected)
    assert result.returncode == (0 if expected.get("passes") else 1), result.stdout + result.stderr
    assert report["passed"] is bool(expected.get("passes"))
    assert result.stderr == ""
    marker = re.search(r'MARKER = "([^"]+)"', path.read_text())
    if marker:  # nothing it started outlives the command
        assert ended(*with_command_line(marker.group(1))), "a process started by the answer is still running"


def test_printed_output_becomes_notes(tmp_path):
    copy = tmp_path / "answer.py"
    copy.write_text((Path(__file__).parent / "hostile" / "prints_and_is_correct.py").read_text())
    report = graders.check_file("is_contiguous", str(copy), device="cpu")
    notes = "\n".join(report.notes)
    assert "printed: hello from import" in notes and "wrote to stderr: to stderr" in notes, notes


def test_the_reference_is_allowed_for_the_instructor(tmp_path):
    copy = tmp_path / "answer.py"
    copy.write_text((Path(__file__).parent / "hostile" / "imports_reference.py").read_text())
    assert graders.check_file("is_contiguous", str(copy), device="cpu", instructor=True).passed
    assert not graders.check_file("is_contiguous", str(copy), device="cpu").passed


def test_a_notebook_answer_is_sent_by_value_and_its_line_is_shown():
    namespace: dict = {}
    exec(compile("def is_contiguous(shape, strides):\n    return shape[99]\n", "/tmp/ipykernel_1/1.py", "exec"),
         namespace)
    import linecache

    linecache.cache["/tmp/ipykernel_1/1.py"] = (0, None, ["def is_contiguous(shape, strides):\n",
                                                          "    return shape[99]\n"], "/tmp/ipykernel_1/1.py")
    report = graders.check_namespace("is_contiguous", namespace, device="cpu")
    message = report.results[0].message
    assert "IndexError" in message and "your notebook cell, line 2" in message and "return shape[99]" in message


def test_an_unsendable_answer_says_why():
    import threading

    lock = threading.Lock()

    def is_contiguous(shape, strides):
        with lock:
            return True

    report = graders.check_namespace("is_contiguous", {"is_contiguous": is_contiguous}, device="cpu")
    assert not report.passed and "could not be copied to the grading process" in report.results[0].message


def test_memory_limit_is_configurable(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("import torch\ndef is_contiguous(shape, strides):\n"
                    "    torch.ones(2**27)\n    raise ValueError('x')\n")  # 512 MiB
    small = graders.check_file("is_contiguous", str(path), ["contiguous_layouts"], device="cpu", memory_mb=256)
    assert "ran out of memory" in small.results[0].message and "256 MiB" in small.results[0].message
    large = graders.check_file("is_contiguous", str(path), ["contiguous_layouts"], device="cpu", memory_mb=2048)
    assert "ran out of memory" not in large.results[0].message


def test_a_runner_cannot_outlive_its_check(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("def f():\n    return 1\n")
    runner = Runner(StudentSource.from_file(str(path), ["f"]), seed=0, device="cpu", limits=Limits(timeout=2))
    assert runner.request(("call", "f", (), {}, False)) == 1
    pid = runner.process.pid
    runner.close()
    assert not alive(pid)


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities on this system (Windows)")
def test_a_runner_that_keeps_working_is_lowered_to_spare_cpu_and_still_stopped_at_its_limit(tmp_path, monkeypatch):
    """An endless loop under make grade held a core until its time limit, slowing every other student's grading: a
    runner still on one request after LOWER_PRIORITY_AFTER_S gets the lowest priority (its session's too, where
    Linux shares CPU between sessions), and its time limit is unchanged. A quick request leaves it as it was."""
    import threading

    from graders import isolation
    from graders.outcomes import StudentCodeError

    monkeypatch.setattr(isolation, "LOWER_PRIORITY_AFTER_S", 0.5)
    path = tmp_path / "answer.py"
    path.write_text("def quick():\n    return 1\n\n\ndef endless():\n    while True:\n        pass\n")
    runner = Runner(StudentSource.from_file(str(path), ["quick", "endless"]), seed=0, device="cpu",
                    limits=Limits(timeout=2.5))
    try:
        assert runner.request(("call", "quick", (), {}, False)) == 1
        pid = runner.process.pid
        before = niceness(pid)
        assert not runner.lowered and before[0] == os.getpriority(os.PRIO_PROCESS, 0)
        seen: list = []
        running = threading.Event()

        def watch() -> None:  # until it is lowered (after 0.5 CPU-seconds: later on a busy machine) or stopped
            # (both: the process's nice and then its session's are two writes; a reading between them saw 19 and 0)
            while running.is_set() and not (seen and seen[-1][0] == 19 and seen[-1][1] in (None, 19)):
                seen.append(niceness(pid))
                time.sleep(0.05)

        running.set()
        watching = threading.Thread(target=watch)
        watching.start()
        start = time.monotonic()
        try:
            with pytest.raises(StudentCodeError) as stopped:
                runner.request(("call", "endless", (), {}, False))
        finally:
            running.clear()
            watching.join()
        # 2.5 s of running time: waits for a CPU count until it is lowered (0.5 CPU-seconds; on a busy machine later),
        # and in full after (graders.runclock).
        assert stopped.value.error.kind == "timeout" and 2.4 < time.monotonic() - start < 8
        assert runner.lowered and seen and seen[-1][0] == 19, seen
        if before[1] is not None:  # autogroups: the runner leads a session of its own, lowered with it
            assert seen[-1][1] == 19, seen
        assert ended(pid)
    finally:
        runner.close()


def test_a_lowered_runner_serves_no_further_check(tmp_path):
    """Lowered for good (nice 19), a runner would serve every later check of the answer on spare CPU only, which
    make grade's busy machine has little of: the next check gets a fresh runner, the others reuse theirs."""
    import torch

    from graders import judge

    path = tmp_path / "answer.py"
    path.write_text("def quick():\n    return 1\n")
    source = StudentSource.from_file(str(path), ["quick"])
    cpu = torch.device("cpu")
    first = judge._runner_for(None, source, 0, cpu, Limits())
    runners = [first]
    try:
        assert judge._runner_for(first, source, 1, cpu, Limits()) is first, "a healthy runner serves the next check"
        first.lower_priority()
        pid = first.process.pid
        fresh = judge._runner_for(first, source, 2, cpu, Limits())
        runners.append(fresh)
        assert fresh is not first and not fresh.lowered and ended(pid)
        assert fresh.request(("call", "quick", (), {}, False)) == 1
    finally:
        for runner in runners:
            runner.close()


@pytest.mark.skipif(not hasattr(os, "setpgrp"), reason="no process groups on this system (Windows)")
def test_lowering_never_touches_the_graders_own_session(tmp_path):
    """A process that does not lead its session (Linux shares CPU between sessions) is lowered alone: the session it
    shares is the grader's, whose nice must stay."""
    from graders.isolation import lower_priority

    child = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgrp(); time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while os.getpgid(child.pid) != child.pid and time.monotonic() < deadline:
            time.sleep(0.01)
        ours = niceness(os.getpid())
        assert lower_priority(child.pid) == hasattr(os, "setpriority")
        if hasattr(os, "getpriority"):
            assert niceness(child.pid)[0] == 19
        assert niceness(os.getpid()) == ours
    finally:
        child.kill()
        child.wait()


def test_spawn_start_method_grades_a_notebook_answer(tmp_path):
    """macOS and Windows start processes with spawn: a notebook's answer must still reach the runner."""
    script = Path(__file__).parent / "spawn_notebook_answer.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COURSE_GRADER_START_METHOD": "spawn"})
    assert "PASS  is_contiguous: contiguous_layouts" in result.stdout, result.stdout + result.stderr
    assert "PASS  is_contiguous: length_mismatch_raises" in result.stdout, result.stdout + result.stderr


def _works_in_a_scratch(pid: int) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).name.startswith("course-scratch-")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the runner through /proc")
def test_student_code_does_not_outlive_a_killed_judge(tmp_path):
    """A judge killed mid-check (a closed laptop lid, a killed kernel) takes its runner down with it."""
    answer = tmp_path / "answer.py"
    answer.write_text("def is_contiguous(shape, strides):\n    while True:\n        pass\n")
    judge = subprocess.Popen([sys.executable, "-m", "graders", "check", "is_contiguous", str(answer), "--device", "cpu",
                              "--timeout", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The runner is the judge's descendant working in a course-scratch-* folder; it loops once it burns CPU.
        deadline, runner = time.monotonic() + 120, None
        while runner is None or cpu_seconds(runner) < 0.3:
            assert time.monotonic() < deadline and judge.poll() is None, "the runner never started"
            time.sleep(0.1)
            runner = next((pid for pid in descendants(judge.pid) if _works_in_a_scratch(pid)), None)
        assert alive(runner)
    finally:
        judge.kill()
        judge.wait()
    deadline = time.monotonic() + 10
    while alive(runner) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(runner), "the student's endless loop kept running after its judge was killed"


@pytest.mark.parametrize("exercises, expected", [
    ("sliding_window", False),
    (["contiguous_strides", "is_contiguous", "sliding_window"], False),   # chapter 01: no optimizer anywhere
    (["pad_collate", "range_stream", "lr_range_test"], True),             # lr_range_test steps an optimizer
    (["sliding_window", "no_such_exercise"], True),                       # unknown: warm, to be safe
])
def test_a_judge_told_its_exercises_warms_optimizers_only_where_a_check_may_step_one(exercises, expected):
    from graders.isolation import needs_compiler_stack

    assert needs_compiler_stack(exercises) is expected


def test_the_forkserver_never_asks_for_a_gpu_where_one_exists(monkeypatch):
    """torch.cuda.is_available() counts devices, and a process that did so has children whose first CUDA call
    fails ("Cannot re-initialize CUDA in forked subprocess": on an H100 every cuda check failed so). The judge asks
    instead and tells the forkserver through its environment; the forkserver's preload then never counts."""
    import graders.isolation as isolation

    monkeypatch.delenv("COURSE_RUNNER_WARM_OPTIMIZERS", raising=False)
    monkeypatch.setattr(isolation, "_gpu_present", lambda: True)
    if isolation.start_method() == "forkserver":
        isolation._context()
        assert os.environ["COURSE_RUNNER_WARM_OPTIMIZERS"] == "0"
    counting = textwrap.dedent("""
        import torch
        calls = []
        real = torch._C._cuda_getDeviceCount
        torch._C._cuda_getDeviceCount = lambda: calls.append(1) or real()
        import graders._preload
        print("device counts:", len(calls))
    """)
    done = subprocess.run([sys.executable, "-c", counting], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COURSE_RUNNER_WARM_OPTIMIZERS": "0"})
    assert done.returncode == 0, done.stderr
    assert "device counts: 0" in done.stdout, done.stdout


@pytest.mark.parametrize("open_at_exit", ["a runner", "a runner that keeps ranks", "a runner whose kept rank closed first"])
def test_a_judge_that_exits_with_runners_still_open_ends_and_so_do_they(tmp_path, open_at_exit):
    """multiprocessing's exit handler waits for every child, and a runner waits for its judge to end: a runner left
    open (a judge server's kept runner) held its judge, forkserver and itself alive for ever, 6 times in a class
    of 24 serial autogrades. Ranks kept by a runner are open too, and may be met first at exit."""
    answer = tmp_path / "answer.py"
    answer.write_text("import torch.distributed as dist\n\n\ndef average(t):\n    dist.all_reduce(t)\n"
                      "    return t / dist.get_world_size()\n")
    # The judge's temporary folder, short: its forkserver's socket lives there, and a Unix socket's path holds about
    # 100 bytes (under pytest-xdist, tmp_path/"tmp" took 76 of them, and the test failed once pytest's numbered
    # folders reached pytest-100).
    temp = Path(tempfile.mkdtemp(prefix="cx"))
    judge = textwrap.dedent(f"""
        from graders import _rank_demos, ranks
        from graders.isolation import Limits, Runner, StudentSource, warm_up
        from graders.student import Submission
        warm_up("average_gradients")
        runner = Runner(StudentSource.from_file({str(answer)!r}, ["average"]), seed=0, device="cpu", limits=Limits())
        runner.ready()
        pids = [runner.process.pid]
        if {"rank" in open_at_exit!r}:
            run = ranks.run_on_ranks(Submission(runner), _rank_demos.call_on_rank, 2, [("average", 1.0)] * 2)
            pids += [result["pid"] for result in run.values()]
        if {open_at_exit.endswith("first")!r}:  # as the exit handler may meet them: a rank, then its owner
            next(iter(runner.kept.values())).runners[0].close(at_once=True)
        print(*pids, flush=True)
    """)  # and ends, all of them still open
    try:
        done = subprocess.run([sys.executable, "-c", judge], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TMPDIR": str(temp)})
        assert done.returncode == 0, done.stderr
        pids = [int(pid) for pid in done.stdout.split()]
        assert len(pids) == (3 if "rank" in open_at_exit else 1)
        assert ended(*pids), [pid for pid in pids if alive(pid)]
        assert not [p.name for p in temp.iterdir() if p.name.startswith(("course-check-", "course-ranks-"))]
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forking a warm process is for systems that fork (not Windows)")
def test_a_warm_fork_forgets_the_parents_writers_to_descriptors_it_closed(tmp_path):
    """The forkserver and make grade's judge are forks that close what they inherited. The parent's logging
    handlers outlive that: one writing to a closed descriptor wrote into whatever reused its number next, a
    runner's connection to the judge above all (under xdist a rank's DEBUG records, from pytest's log file handler,
    became a 1.1 GB message length and the judge waited forever)."""
    import logging
    import socket

    from graders.isolation import close_descriptors_except

    parents_log = open(tmp_path / "parent.log", "w")
    handler = logging.StreamHandler(parents_log)
    logger = logging.getLogger("course-test-inherited")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            close_descriptors_except({0, 1, 2, result_w})
            mine, theirs = socket.socketpair()
            os.dup2(mine.fileno(), parents_log.fileno())  # a new connection that got the closed log file's number
            logger.debug("DEBUG a record of the parent's handler")
            theirs.setblocking(False)
            try:
                leaked = theirs.recv(100)
            except BlockingIOError:
                leaked = b""
            os.write(result_w, b"clean" if not leaked and handler not in logger.handlers else b"leaked: " + leaked)
            code = 0
        finally:
            os._exit(code)
    os.close(result_w)
    try:
        _, status = os.waitpid(pid, 0)
        reply = os.read(result_r, 200)
    finally:
        os.close(result_r)
        logger.removeHandler(handler)
        parents_log.close()
    assert os.waitstatus_to_exitcode(status) == 0
    assert reply == b"clean", reply
