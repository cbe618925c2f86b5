"""graders.ranks: a grader scenario on every rank of a real torch.distributed process group (chapter 08).

Each test runs the student's code on 2 ranks of a fresh gloo group (NCCL cases need 2 GPUs) and checks
what the judge gets back: per-rank observations, per-rank errors that say which rank did what, failures
in seconds for wrong collectives, and nothing left running or lying around afterwards.
"""

from __future__ import annotations

import linecache
import os
import socket
import sys
import tempfile
import threading
import time

import pytest
import torch

from graders import _rank_demos as demos
from graders import isolation, ranks
from graders.isolation import GraderBroke, Limits, Runner, StudentSource, warm_up
from graders.outcomes import CheckFailed, SkipCheck, StudentCodeError
from graders.runclock import WALL_CAP_FACTOR
from graders.student import Submission
from tests.processes import alive, ended

ANSWER = '''\
import torch
import torch.distributed as dist


def average(t):
    dist.all_reduce(t)
    t /= dist.get_world_size()
    return t


def raise_on_one(t):
    if dist.get_rank() == 1:
        raise ValueError("rank one refuses")
    dist.all_reduce(t)
    return t


def mismatched(t):
    if dist.get_rank() == 0:
        dist.all_reduce(t)
    else:
        dist.broadcast(t, src=1)
    return t


def only_rank_zero(t):
    if dist.get_rank() == 0:
        dist.all_reduce(t)
    return t


def loop_on_one(t):
    if dist.get_rank() == 1:
        while True:
            pass
    return t * 2


def loop_then_reduce(t):
    if dist.get_rank() == 1:
        while True:
            pass
    dist.all_reduce(t)
    return t


def chatty(t):
    print(f"hello from rank {dist.get_rank()}")
    dist.all_reduce(t)
    return t


CALLS = 0


def counts_calls(t):
    global CALLS
    CALLS += 1
    dist.all_reduce(t)
    return t * CALLS


def no_newline(t):
    print(f"unfinished line on rank {dist.get_rank()}", end="")
    dist.all_reduce(t)
    return t


def not_written(t):
    dist.all_reduce(t)  # the same on every rank, then the stub's error
    raise NotImplementedError


def not_written_on_one(t):
    if dist.get_rank() == 1:
        raise NotImplementedError
    dist.all_reduce(t)
    return t


def busy_average(t):
    import time
    start = time.process_time()
    while time.process_time() - start < 0.4:
        pass
    time.sleep(0.6)  # the judge sees the CPU it used and lowers it meanwhile; what is left needs next to no CPU
    return average(t)
'''
NAMES = ["average"]
TWO = [("average", 1.0), ("average", 3.0)]


def args(name: str, values=(1.0, 3.0)) -> list[tuple]:
    return [(name, v) for v in values]


@pytest.fixture(scope="module")
def answer(tmp_path_factory) -> StudentSource:
    path = tmp_path_factory.mktemp("ranks") / "answer.py"
    path.write_text(ANSWER)
    warm_up()
    return StudentSource.from_file(str(path), NAMES)


@pytest.fixture
def leftovers(monkeypatch, tmp_path):
    """Record every rank runner's pid; afterwards none may be alive, and no temporary file may remain
    (the test's temporary files go to a directory of its own: other processes share /tmp)."""
    pids: list[int] = []
    private = tmp_path / "tmp"
    private.mkdir()
    ranks._ranks_root()  # the judge's own folder for every run, kept until it exits: made before, elsewhere
    monkeypatch.setattr(tempfile, "tempdir", str(private))

    class Recording(ranks._RankRunner):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            pids.append(self.process.pid)

    monkeypatch.setattr(ranks, "_RankRunner", Recording)
    yield pids
    assert pids, "no runner was started"
    assert ended(*pids), f"a runner is still running: {[pid for pid in pids if alive(pid)]}"
    assert sorted(os.listdir(private)) == [], "temporary files were left behind"


def _check_average(run: ranks.RankRun, values=(1.0, 3.0)) -> None:
    assert run.passed and run.problem() is None, run.problem()
    mean = sum(values) / len(values)
    for r, result in enumerate(run.values()):
        assert result["rank"] == result["group_rank"] == r
        assert result["world_size"] == len(values) and result["backend"] == run.backend
        assert torch.equal(result["out"], torch.full((4,), mean))
        assert torch.equal(result["t"], torch.full((4,), mean))  # all_reduce works in place
    assert len({result["pid"] for result in run.results}) == len(values), "each rank is a process of its own"


# -- it works ------------------------------------------------------------------------------------------
def test_two_ranks_average_from_a_file(answer, leftovers, capfd):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, TWO)
    _check_average(run)
    assert run.backend == "gloo" and run.devices == ["cpu", "cpu"]
    assert run.notes == [] and run.errors == [None, None]
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == "", "the ranks wrote to the judge's terminal"


def test_a_warm_two_rank_check_is_cheap(answer):
    ranks.run_on_ranks(answer, demos.call_on_rank, 2, TWO)  # the forkserver is warm after this
    times = []
    for _ in range(3):
        start = time.perf_counter()
        _check_average(ranks.run_on_ranks(answer, demos.call_on_rank, 2, TWO))
        times.append(time.perf_counter() - start)
    print(f"warm 2-rank check: best {min(times):.3f} s, all {[round(t, 3) for t in times]}")
    assert min(times) < 2.0


def test_three_ranks_and_per_rank_arguments(answer):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 3, args("average", (1.0, 2.0, 6.0)))
    _check_average(run, (1.0, 2.0, 6.0))


def _notebook_source(source: str, names: list[str]) -> StudentSource:
    """Names defined the way a notebook cell defines them (exec of a cell registered in linecache)."""
    filename = f"/tmp/ipykernel_{os.getpid()}/{abs(hash(source)) % 10**8}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    try:
        return StudentSource.from_namespace(namespace, names)
    finally:
        del linecache.cache[filename]


def test_two_ranks_average_from_a_notebook(answer, leftovers):
    source = _notebook_source(ANSWER, ["average", "raise_on_one"])
    assert source.payload is not None and source.path is None
    _check_average(ranks.run_on_ranks(source, demos.call_on_rank, 2, TWO))
    run = ranks.run_on_ranks(source, demos.call_on_rank, 2, args("raise_on_one"))
    assert run.errors[1].where.startswith("your notebook cell, line 13, in raise_on_one: raise ValueError")


def test_each_rank_gets_its_environment_and_the_judges_seed(answer):
    torch.manual_seed(1234)
    run = ranks.run_on_ranks(answer, demos.environment, 2)
    first, second = run.values()
    assert first["debug"] == second["debug"] == "DETAIL"
    assert (first["rank_env"], second["rank_env"]) == ("0", "1")
    assert first["seed"] == second["seed"] == 1234
    assert first["pgid"] == first["pid"] and second["pgid"] == second["pid"], "each rank leads its process group"
    assert first["forked_from_the_forkserver"] == (isolation.start_method() == "forkserver")


def test_a_grader_collective_before_the_students(answer):
    _check_average(ranks.run_on_ranks(answer, demos.grader_collective_then_call, 2, TWO))


def test_through_the_checks_submission_handle(answer):
    runner = Runner(answer, seed=7, device="cpu", limits=Limits(timeout=5))
    try:
        runner.ready()
        run = ranks.run_on_ranks(Submission(runner), demos.call_on_rank, 2, args("chatty"))
        assert run.passed
        assert "rank 0: your code printed: hello from rank 0" in runner.notes
        assert "rank 1: your code printed: hello from rank 1" in runner.notes
    finally:
        runner.close()


def test_what_a_rank_printed_without_a_newline_is_a_note_too(answer, leftovers):
    """The ranks are killed once every rank has answered: a line still in a rank's buffer is written before that."""
    runner = Runner(answer, seed=7, device="cpu", limits=Limits(timeout=5))
    try:
        runner.ready()
        assert ranks.run_on_ranks(Submission(runner), demos.call_on_rank, 2, args("no_newline")).passed
        assert "rank 0: your code printed: unfinished line on rank 0" in runner.notes
        assert "rank 1: your code printed: unfinished line on rank 1" in runner.notes
    finally:
        runner.close()


def test_a_checks_ranks_serve_its_next_runs_with_the_answer_loaded_afresh(answer):
    """Ranks are kept for the exercise's next run once every rank returned (or every rank raised
    NotImplementedError: a blank answer's checks): the same processes, but the student's module state loaded
    afresh (a counter the answer keeps starts again at every run). Rank r of a run is kept rank r: a larger run
    starts only the ranks missing, a smaller one leaves the others aside, and each rank gets its run's
    environment (RANK, WORLD_SIZE)."""
    runner = Runner(answer, seed=7, device="cpu", limits=Limits(timeout=5))
    try:
        runner.ready()
        student = Submission(runner)
        first = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("counts_calls")).values()
        second = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("counts_calls")).values()
        assert [r["pid"] for r in second] == [r["pid"] for r in first], "the kept ranks served the second run"
        assert [r["out"].tolist() for r in second] == [[4.0] * 4] * 2, "the answer's counter must start afresh"
        blank = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("not_written"))
        assert not blank.passed and all(error.not_written for error in blank.errors)
        refilled = ranks.run_on_ranks(student, demos.call_on_rank, 2, TWO).values()
        assert [r["pid"] for r in refilled] == [r["pid"] for r in first], "every rank not written: kept too"
        three = ranks.run_on_ranks(student, demos.call_on_rank, 3, args("average", (1.0, 2.0, 3.0))).values()
        assert [r["pid"] for r in three][:2] == [r["pid"] for r in first], "a larger run: the kept ranks first"
        assert three[2]["pid"] not in [r["pid"] for r in first], "and the missing rank started"
        assert [r["out"].tolist() for r in three] == [[2.0] * 4] * 3
        assert [r["env"] for r in three] == [{"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "3"} for r in range(3)]
        smaller = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("counts_calls")).values()
        assert [r["pid"] for r in smaller] == [r["pid"] for r in first], "a smaller run: the first kept ranks"
        assert [r["out"].tolist() for r in smaller] == [[4.0] * 4] * 2, "the answer's counter must start afresh"
        assert [r["env"] for r in smaller] == [{"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2"} for r in range(2)]
        again = ranks.run_on_ranks(student, demos.call_on_rank, 3, args("average", (1.0, 2.0, 3.0))).values()
        assert [r["pid"] for r in again] == [r["pid"] for r in three], "the rank set aside serves the next larger run"
        failed = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("raise_on_one"))
        assert not failed.passed
        after = ranks.run_on_ranks(student, demos.call_on_rank, 2, TWO).values()
        assert not {r["pid"] for r in after} & {r["pid"] for r in first}, "ranks that failed are never kept"
        alone = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("not_written_on_one"))
        assert not alone.passed and alone.errors[1].not_written and not alone.errors[0].not_written
        last = ranks.run_on_ranks(student, demos.call_on_rank, 2, TWO).values()
        assert not {r["pid"] for r in last} & {r["pid"] for r in after}, "one rank not written, one stuck: ended"
        assert ended(three[2]["pid"]), "a failed run ends the ranks it had set aside too"
        kept = [r["pid"] for r in last]
    finally:
        runner.close()
    assert ended(*kept), "kept ranks end with the check's runner"


def test_ranks_that_were_lowered_are_never_kept(answer, monkeypatch):
    """A rank that used LOWER_PRIORITY_AFTER_S of CPU on one run was lowered to nice 19 for good: kept, it would
    serve every later check at that priority, which a busy machine starves (CI's run of 78273ed: every later
    ddp_accumulation check of the kernel "did not finish within 10 s"). A quick run is not lowered."""
    monkeypatch.setattr(ranks, "LOWER_PRIORITY_AFTER_S", 0.3)
    runner = Runner(answer, seed=7, device="cpu", limits=Limits(timeout=5))
    try:
        runner.ready()
        student = Submission(runner)
        quick = ranks.run_on_ranks(student, demos.call_on_rank, 2, TWO).values()
        busy = ranks.run_on_ranks(student, demos.call_on_rank, 2, args("busy_average")).values()
        assert [r["pid"] for r in busy] == [r["pid"] for r in quick], "a quick run keeps its ranks"
        assert [r["out"].tolist() for r in busy] == [[2.0] * 4] * 2
        after = ranks.run_on_ranks(student, demos.call_on_rank, 2, TWO).values()
        assert not {r["pid"] for r in after} & {r["pid"] for r in busy}, "lowered ranks were kept"
        if hasattr(os, "getpriority"):
            assert all(os.getpriority(os.PRIO_PROCESS, r["pid"]) == os.getpriority(os.PRIO_PROCESS, 0)
                       for r in after), "the fresh ranks run at the judge's priority"
    finally:
        runner.close()


# -- what goes wrong, on which rank --------------------------------------------------------------------
def test_a_rank_that_raises_is_named_with_its_line(answer, leftovers, capfd):
    start = time.perf_counter()
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("raise_on_one"))
    assert time.perf_counter() - start < 5, "the other rank must not wait for the collective timeout"
    assert run.ok == [False, False]
    raised = run.errors[1]
    assert raised.kind == "raised" and raised.exception_type == "ValueError"
    assert raised.where == 'answer.py, line 13, in raise_on_one: raise ValueError("rank one refuses")'
    assert raised.summary.startswith("on rank 1 of 2: raised ValueError: rank one refuses")
    waiting = run.errors[0]  # rank 0 was in all_reduce: released at once by rank 1's end-of-run collective
    assert run.collective == [True, False]
    assert "which rank 1 never called: rank 1 had already stopped (your code raised ValueError" in waiting.summary
    assert waiting.where.startswith("answer.py, line 14, in raise_on_one: dist.all_reduce(t)")
    problem = run.problem()
    assert isinstance(problem, StudentCodeError)
    assert problem.error.exception_type == "ValueError" and problem.error.is_instance(ValueError)
    text = problem.describe()
    assert text.index("on rank 1 of 2: raised ValueError") < text.index("on rank 0 of 2: called ALLREDUCE")
    with pytest.raises(StudentCodeError):
        run.values()
    assert capfd.readouterr().err == ""


def test_different_collectives_fail_in_seconds_on_every_rank(answer, leftovers, capfd):
    start = time.perf_counter()
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("mismatched"), timeout=30)
    elapsed = time.perf_counter() - start
    assert elapsed < 5, f"a wrong collective took {elapsed:.1f} s"
    assert run.collective == [True, True]
    first, second = run.errors[0].summary, run.errors[1].summary
    assert "rank 0 called ALLREDUCE on a float tensor of shape [4], but rank 1 called BROADCAST" in first
    assert "rank 1 called BROADCAST on a float tensor of shape [4], but rank 0 called ALLREDUCE" in second
    assert run.errors[0].where.endswith("dist.all_reduce(t)")
    assert run.errors[1].where.endswith("dist.broadcast(t, src=1)")
    assert capfd.readouterr().err == ""
    assert "DETAIL" not in "".join(run.notes) and "ProcessGroup" not in "".join(run.notes)


def test_a_collective_only_one_rank_calls_fails_in_seconds(answer, leftovers):
    start = time.perf_counter()
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("only_rank_zero"), timeout=30)
    assert time.perf_counter() - start < 5
    assert run.ok == [False, True] and torch.equal(run.results[1]["out"], torch.full((4,), 3.0))
    assert run.errors[0].summary.startswith(
        "on rank 0 of 2: called ALLREDUCE on a float tensor of shape [4], which rank 1 never called: "
        "rank 1 had already returned from your code")


def test_a_rank_that_never_returns_is_killed_at_the_deadline(answer, leftovers):
    start = time.perf_counter()
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("loop_on_one"), timeout=3)
    elapsed = time.perf_counter() - start
    # At 3 s of running time: on a busy machine the loop's waits for a CPU are not charged until it is lowered
    # (3 CPU-seconds), and it ends at the wall cap at the latest (graders.runclock).
    assert 3 <= elapsed < 3 * WALL_CAP_FACTOR + 1
    assert run.ok == [True, False]
    assert torch.equal(run.results[0]["out"], torch.full((4,), 2.0))
    assert run.errors[1].kind == "timeout"
    assert run.errors[1].summary.startswith("on rank 1 of 2: did not finish within 3 s and was stopped")
    assert isinstance(run.problem(), StudentCodeError) and run.problem().error.kind == "timeout"


def test_a_rank_waiting_for_a_rank_that_never_comes_times_out_first(answer, leftovers):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("loop_then_reduce"), timeout=5, collective_timeout=1)
    assert run.errors[1].kind == "timeout"
    assert run.collective[0]
    assert "waited in a collective for rank 1 (numbered within that collective's group), which never joined it, and timed out" in run.errors[0].summary
    problem = run.problem().describe()  # the endless loop is the cause, so it comes first
    assert problem.startswith("on rank 1 of 2: did not finish within 5 s")


def test_a_scenario_that_fails_the_check_and_a_grader_bug(answer):
    problem = ranks.run_on_ranks(answer, demos.fails_check, 2).problem()
    assert isinstance(problem, CheckFailed) and str(problem) == "on ranks 0, 1 of 2: average must return a tensor"
    run = ranks.run_on_ranks(answer, demos.broken_scenario, 2)
    assert run.ok == [True, False] and "KeyError: 'a grader bug'" in run.grader_errors[1]
    assert isinstance(run.problem(), GraderBroke)


def test_code_that_cannot_load_is_reported_once(tmp_path, leftovers):
    path = tmp_path / "broken.py"
    path.write_text("def average(t):\n    return t +\n")
    with pytest.raises(StudentCodeError) as raised:
        ranks.run_on_ranks(StudentSource.from_file(str(path), NAMES), demos.call_on_rank, 2, TWO)
    assert raised.value.error.kind == "syntax"


def test_scenarios_must_live_in_graders():
    with pytest.raises(ValueError, match="module-level function of a graders module"):
        ranks.run_on_ranks(StudentSource("x", ()), test_scenarios_must_live_in_graders, 2)


# -- runs do not collide; spawn works too ------------------------------------------------------------
def test_two_runs_at_the_same_time_do_not_collide(answer, leftovers):
    box: dict[int, ranks.RankRun] = {}

    def one(key: int, values: tuple) -> None:
        box[key] = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("average", values))

    threads = [threading.Thread(target=one, args=(0, (1.0, 3.0))), threading.Thread(target=one, args=(1, (10.0, 30.0)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    _check_average(box[0], (1.0, 3.0))
    _check_average(box[1], (10.0, 30.0))


def test_under_spawn(monkeypatch, answer, leftovers, capfd):
    monkeypatch.setenv(isolation.START_METHOD_ENV, "spawn")  # isolation reads it each time it starts a runner
    source = _notebook_source(ANSWER, ["average", "mismatched"])
    run = ranks.run_on_ranks(source, demos.call_then_observe, 2, [("average", 1.0, "mismatched"),
                                                                   ("average", 3.0, "mismatched")], timeout=30)
    _check_average(run)
    assert not any(r["forked_from_the_forkserver"] for r in run.results), "these runners were not spawned"
    assert all("Detected mismatch between collectives" in r["second"] for r in run.results)
    assert capfd.readouterr().err == ""


# -- backends ----------------------------------------------------------------------------------------------
def test_gloo_on_cpu_unless_there_is_a_gpu_per_rank(monkeypatch):
    assert ranks.choose_backend("cpu", 2) == ("gloo", ["cpu", "cpu"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert ranks.choose_backend("cuda", 2) == ("gloo", ["cpu", "cpu"])
    with pytest.raises(SkipCheck, match="one CUDA GPU per rank"):
        ranks.choose_backend("cuda", 2, "nccl")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert ranks.choose_backend("cuda", 2) == ("nccl", ["cuda:0", "cuda:1"])


def _gpus(count: int):
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    reason = f"NCCL needs {count} CUDA GPU(s), one per rank; this machine has {have}"
    return pytest.mark.skipif(have < count, reason=reason)


@pytest.mark.cuda
@_gpus(1)
def test_nccl_on_one_gpu(answer):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 1, [("average", 5.0)], device="cuda")
    assert run.backend == "nccl" and run.devices == ["cuda:0"]
    _check_average(run, (5.0,))


@pytest.mark.cuda
@_gpus(2)
def test_nccl_two_ranks_average(answer, leftovers):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, TWO, device="cuda")
    assert run.backend == "nccl" and run.devices == ["cuda:0", "cuda:1"]
    _check_average(run)


@pytest.mark.cuda
@_gpus(2)
def test_nccl_different_collectives_fail_in_seconds(answer, leftovers):
    start = time.perf_counter()
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("mismatched"), device="cuda", timeout=30)
    assert time.perf_counter() - start < 10
    assert run.collective == [True, True]
    assert "different collectives" in run.errors[0].summary


@pytest.mark.cuda
@_gpus(2)
def test_nccl_a_rank_that_raises(answer, leftovers):
    run = ranks.run_on_ranks(answer, demos.call_on_rank, 2, args("raise_on_one"), device="cuda", timeout=30)
    assert run.errors[1].exception_type == "ValueError"
    assert isinstance(run.problem(), StudentCodeError) and run.problem().error.exception_type == "ValueError"


# -- their network: each other, nothing else (issue 33) -------------------------------------------------
_REACHES_OUT = """
import socket
import torch.distributed as dist

def reach(t):
    dist.all_reduce(t)  # the other rank, over TCP
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        return "reached this machine's listener"
    except OSError as exc:
        return type(exc).__name__
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="network namespaces are Linux's")
def test_cpu_ranks_reach_each_other_and_not_this_machine(answer, tmp_path, leftovers):
    """Landlock allows a rank TCP or refuses it; in the judge's network namespace, TCP reaches the other ranks and
    nothing else: a listener on this machine's loopback is not there for them."""
    holder = ranks._network()
    if holder.pid is None:
        pytest.skip(f"no network namespace here: {holder.reason}")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    try:
        path = tmp_path / "answer.py"
        path.write_text(_REACHES_OUT.format(port=listener.getsockname()[1]))
        run = ranks.run_on_ranks(StudentSource.from_file(str(path), ["reach"]), demos.call_on_rank, 2,
                                 [("reach", 1.0), ("reach", 3.0)])
        results = run.values()
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    finally:
        listener.close()
    assert [r["out"] for r in results] == ["ConnectionRefusedError"] * 2, results
    assert all(torch.equal(r["t"], torch.full((4,), 4.0)) for r in results)  # the ranks reached each other
    assert "network" not in (isolation.unconfined_reason() or ""), isolation.unconfined_reason()
