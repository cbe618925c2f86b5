"""coursekit.distributed: functions run on real gloo ranks, from any start method, and nothing is left behind.

Most tests start their ranks by fork, which costs milliseconds; the tests that prove spawn (macOS, Windows)
pay a fresh interpreter per rank (seconds). A rank that hangs or dies must never outlive its test: every test
ends by checking that this process has no child left and that the helper's temporary folders are gone.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time

import pytest
import torch
import torch.distributed as dist

from coursekit import distributed
from coursekit.distributed import RankError, Ranks, RankTimeout, run_on_ranks

FAST = "fork" if sys.platform.startswith("linux") else "spawn"  # fork is only safe on Linux


@pytest.fixture(autouse=True)
def nothing_left_behind(monkeypatch):
    """Record every temporary folder the helper makes; after the test, none may exist and no child may run."""
    made: list[str] = []
    real_mkdtemp = distributed.tempfile.mkdtemp

    def recording_mkdtemp(*args, **kwargs):
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(distributed.tempfile, "mkdtemp", recording_mkdtemp)
    yield made
    assert multiprocessing.active_children() == [], "a rank process outlived its test"
    assert not [folder for folder in made if os.path.exists(folder)], "a temporary folder was left behind"


def _gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its parent to collect it counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def _all_reduce_sum(rank, world_size):
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    return t.item()


@pytest.fixture
def default_start_method():
    """Set multiprocessing's default start method for one test, as coursekit.apply_start_method does."""
    previous = multiprocessing.get_start_method(allow_none=True)
    yield lambda method: multiprocessing.set_start_method(method, force=True)
    multiprocessing.set_start_method(previous, force=True)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_closure_runs_on_every_rank_under_each_start_method(method, default_start_method, nothing_left_behind):
    """fork is asked for by the helper's option; spawn (as on macOS and Windows) is made the default."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not offered on {sys.platform}")
    offset = 100.0  # a local variable: the function below exists only in this test's frame

    def gather_with_offset(rank, world_size):
        parts = [torch.zeros(1) for _ in range(world_size)]
        dist.all_gather(parts, torch.tensor([rank + offset]))
        return [p.item() for p in parts], dist.get_backend(), " ".join(sys.orig_argv)

    if method == "spawn":
        default_start_method("spawn")
        results = run_on_ranks(gather_with_offset, 2)
    else:
        default_start_method("spawn")
        results = run_on_ranks(gather_with_offset, 2, start_method="fork")  # the option wins over the default
    assert [values for values, _, _ in results] == [[100.0, 101.0], [100.0, 101.0]]
    assert {backend for _, backend, _ in results} == {"gloo"}
    started_by_spawn = ["spawn_main" in argv for _, _, argv in results]
    assert started_by_spawn == [method == "spawn"] * 2
    assert len(nothing_left_behind) == 1


def test_a_rank_that_raises_is_named_with_its_traceback():
    def rank_1_raises(rank, world_size):
        if rank == 1:
            raise ValueError("a bad batch on rank 1")
        dist.barrier()  # fails on rank 0 once rank 1 has left: a consequence, not the cause

    start = time.monotonic()
    with pytest.raises(RankError) as caught:
        run_on_ranks(rank_1_raises, 2, start_method=FAST)
    assert time.monotonic() - start < 5
    assert caught.value.rank == 1 and caught.value.error_type == "ValueError"
    assert "rank 1 raised ValueError: a bad batch on rank 1" in str(caught.value)
    assert "raise ValueError" in caught.value.remote_traceback


def test_a_rank_that_dies_is_reported_with_its_exit_code():
    def rank_0_exits(rank, world_size):
        if rank == 0:
            os._exit(3)
        dist.barrier()

    with pytest.raises(RankError, match=r"rank 0 died \(exit code 3\)") as caught:
        run_on_ranks(rank_0_exits, 2, start_method=FAST)
    assert caught.value.rank == 0 and caught.value.error_type is None


def test_a_hanging_rank_is_killed_at_the_timeout():
    def rank_1_hangs(rank, world_size):
        if rank == 1:
            time.sleep(600)
        return rank

    with Ranks(2, start_method=FAST) as ranks:
        ranks.run(lambda rank, world_size: rank)
        pids = ranks.pids
        start = time.monotonic()
        with pytest.raises(RankTimeout) as caught:
            ranks.run(rank_1_hangs, timeout=1.5)
        assert 1.5 <= time.monotonic() - start < 4
        assert 1 in caught.value.ranks
        assert all(_gone(pid) for pid in pids), "the ranks were not killed at the timeout"
        assert ranks.pids == []
        assert ranks.run(lambda rank, world_size: rank * 2) == [0, 2]  # new processes for the next run
        assert not set(ranks.pids) & set(pids)


def test_mismatched_collectives_fail_within_seconds():
    def mismatched(rank, world_size):
        t = torch.ones(3)
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)

    start = time.monotonic()  # DETAIL compares the collectives first: no waiting for the (long) timeout
    with pytest.raises(RankError, match="Detected mismatch between collectives"):
        run_on_ranks(mismatched, 2, start_method=FAST, collective_timeout=60,
                     env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert time.monotonic() - start < 5
    start = time.monotonic()  # without it, the collective timeout ends the wait
    with pytest.raises(RankError, match="(?i)timed out|closed|reset"):
        run_on_ranks(mismatched, 2, start_method=FAST, collective_timeout=1)
    assert time.monotonic() - start < 5


def test_processes_are_reused_after_an_error_and_settings_do_not_leak(monkeypatch):
    # Both ranks raise at once, so both reply; but on a loaded 2-core machine the second reply can come more than
    # ERROR_GRACE_S (1 s) after the first, and then the ranks are restarted instead of kept. How long a rank may
    # take to reply is not what this test is about: it waits as long as needed.
    monkeypatch.setattr(distributed, "ERROR_GRACE_S", 30.0)

    def settings(rank, world_size):
        return torch.get_num_threads(), os.environ.get("COURSE_TEST_FLAG"), os.environ["RANK"]

    def fails(rank, world_size):
        raise KeyError(rank)

    with Ranks(2, start_method=FAST) as ranks:
        assert ranks.run(settings, threads=2, env={"COURSE_TEST_FLAG": "on"}) == [(2, "on", "0"), (2, "on", "1")]
        pids = ranks.pids
        with pytest.raises(RankError, match="KeyError"):
            ranks.run(fails)
        assert ranks.run(settings) == [(1, None, "0"), (1, None, "1")]  # one thread by default; env restored
        assert ranks.pids == pids                                         # every rank replied: kept
    assert all(_gone(pid) for pid in pids)


@pytest.mark.skipif(FAST != "fork", reason="changes torch.distributed in the ranks, which only forked ranks inherit")
def test_every_rank_has_joined_before_any_runs_the_function(monkeypatch, tmp_path):
    """Rank 0 finishes joining late; rank 1's function must not start before it has. A function that failed at once
    used to let its rank leave while another was still connecting: that one's joining failed halfway, and the next
    run on the kept ranks hung for 60 s (3 times in 39 runs of the test above under load)."""
    import torch.distributed as dist

    real_init = dist.init_process_group
    marker = tmp_path / "rank 0 has joined"

    def late_on_rank_0(*args, **kwargs):
        real_init(*args, **kwargs)
        if kwargs["rank"] == 0:
            time.sleep(0.5)
            marker.write_text("joined")

    monkeypatch.setattr(dist, "init_process_group", late_on_rank_0)

    def rank_0_has_joined(rank, world_size, path):
        return os.path.exists(path)

    assert run_on_ranks(rank_0_has_joined, 2, str(marker), start_method=FAST) == [True, True]


@pytest.mark.skipif(FAST != "fork", reason="changes torch.distributed in the ranks, which only forked ranks inherit")
def test_a_rank_that_could_not_join_its_group_is_replaced(monkeypatch):
    """A rank whose joining failed halfway keeps torch's distributed state half-made: the ranks are not kept, and
    the next run starts new ones (a kept one could never join a group again)."""
    import torch.distributed as dist

    real_init = dist.init_process_group

    def fails_halfway_on_rank_0_in_run_2(*args, **kwargs):
        real_init(*args, **kwargs)
        if kwargs["rank"] == 0 and kwargs["init_method"].endswith("run2/rendezvous"):
            raise RuntimeError("joined halfway")

    monkeypatch.setattr(dist, "init_process_group", fails_halfway_on_rank_0_in_run_2)
    monkeypatch.setattr(distributed, "ERROR_GRACE_S", 30.0)  # rank 1 replies too (its barrier times out): all reply
    with Ranks(2, start_method=FAST) as ranks:
        assert ranks.run(lambda rank, world_size: rank) == [0, 1]
        first = ranks.pids
        with pytest.raises(RankError, match="joined halfway"):
            ranks.run(lambda rank, world_size: rank, collective_timeout=2.0)
        assert ranks.run(lambda rank, world_size: rank) == [0, 1]
        assert not set(ranks.pids) & set(first)


def test_what_a_rank_prints_is_echoed_and_its_stderr_stays_out_of_ours(capfd):
    def chatty(rank, world_size):
        print(f"hello from {rank}")
        os.write(2, b"C++ log line on stderr\n")
        if rank == 1:
            raise RuntimeError("and then it failed")
        return rank

    with pytest.raises(RankError) as caught:
        run_on_ranks(chatty, 2, start_method=FAST)
    out, err = capfd.readouterr()
    assert out.splitlines() == ["[rank 0] hello from 0", "[rank 1] hello from 1"]
    assert err == ""
    assert "C++ log line on stderr" in caught.value.stderr


def test_a_value_that_cannot_be_sent_back_is_an_error():
    import threading

    with pytest.raises(RankError, match="rank 0 raised TypeError: cannot pickle"):
        run_on_ranks(lambda rank, world_size: threading.Lock(), 1, start_method=FAST)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX timers to interrupt the wait")
def test_ctrl_c_while_waiting_kills_the_ranks():
    def raise_keyboard_interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, raise_keyboard_interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # "Ctrl-C" one second into the run
    try:
        with pytest.raises(KeyboardInterrupt):
            run_on_ranks(lambda rank, world_size: time.sleep(600), 2, start_method=FAST)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # nothing_left_behind checks that both ranks are gone and the folder removed


def test_backend_choice():
    assert distributed.default_backend(2) == ("nccl" if torch.cuda.device_count() >= 2 else "gloo")
    if torch.cuda.device_count() == 1:  # one GPU, two ranks: NCCL cannot share it, so gloo
        assert distributed.default_backend(2) == "gloo"
    with pytest.raises(ValueError):
        Ranks(0)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_ranks_of_a_killed_parent_exit_and_remove_the_folder(tmp_path):
    """A notebook kernel killed in the middle of a job (no clean-up of its own can run): its ranks notice,
    remove the temporary folder and exit."""
    import subprocess

    parent = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from coursekit.distributed import Ranks
ranks = Ranks(2, start_method={FAST!r})
ranks.run(lambda rank, world_size: rank)
print(ranks._state.folder, *ranks.pids, flush=True)
ranks.run(lambda rank, world_size: time.sleep(600))
"""], stdout=subprocess.PIPE, text=True)
    try:
        folder, *pids = parent.stdout.readline().split()
        assert os.path.isdir(folder) and len(pids) == 2
        time.sleep(0.3)  # both ranks are inside the sleeping job now
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (all(_gone(int(pid)) for pid in pids) and not os.path.exists(folder)):
            time.sleep(0.05)
        assert all(_gone(int(pid)) for pid in pids), "a rank outlived its killed parent"
        assert not os.path.exists(folder), "the killed parent's temporary folder was left behind"
    finally:
        parent.kill()
        parent.stdout.close()
