"""checkpoint: the grader's set-up depends on every state the specification lists (so each missing one can
be seen), the reference resumes it bit for bit, and the failures the grader injects really do what the
checks assume (a naive save is broken by them; a GPU-tagged file does not load without map_location)."""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from graders.ch07_checkpointing import checkpoint as grader
from solutions import ch07_checkpointing as reference

SETUPS = {
    "adam": grader.Setup(),
    "sgd_momentum": grader.Setup(optimizer="sgd_momentum", samples=17, batch_size=4, epochs=3, save_after=1,
                                 milestones=(7, 11), seed=5),
    "grad_scaler": grader.Setup(scaler=True, seed=3),
}
PARTS = ("model", "optimizer", "scheduler", "scaler", "generator", "python", "numpy", "torch", "cuda")


def _resumed_in_memory(setup: grader.Setup, device: torch.device, leave_out: str | None) -> dict:
    """Train, keep every state in memory, scramble, rebuild, restore all but ``leave_out``, train on."""
    with grader.one_torch_thread():
        grader.seed_every_rng(setup.seed)
        parts = grader.build_parts(setup, setup.seed, device)
        grader.train(parts, setup, 0, setup.saved_step, device)
        saved = {"model": copy.deepcopy(parts.model.state_dict()),
                 "optimizer": copy.deepcopy(parts.optimizer.state_dict()),
                 "scheduler": parts.scheduler.state_dict(), "generator": parts.generator.get_state(),
                 "scaler": parts.scaler.state_dict() if parts.scaler else None,
                 "python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
                 # dropout on a GPU draws from the CUDA generator (a run on an H100 failed without it)
                 "cuda": torch.cuda.get_rng_state_all() if device.type == "cuda" else None}
        grader.seed_every_rng(setup.scramble_seed)
        fresh = grader.build_parts(setup, setup.rebuild_seed, device)
        restore = {"model": fresh.model.load_state_dict, "optimizer": fresh.optimizer.load_state_dict,
                   "scheduler": fresh.scheduler.load_state_dict, "generator": fresh.generator.set_state,
                   "scaler": fresh.scaler.load_state_dict if fresh.scaler else None,
                   "python": random.setstate, "numpy": np.random.set_state, "torch": torch.set_rng_state,
                   "cuda": torch.cuda.set_rng_state_all if device.type == "cuda" else None}
        for part, function in restore.items():
            if part != leave_out and function is not None:
                function(saved[part])
        losses = grader.train(fresh, setup, setup.saved_step, setup.total_steps, device)
        return {"losses_after": losses, "final": grader.state_facts(fresh)}


def _same_facts(a: dict, b: dict) -> bool:
    return all(not grader._differences(a[part], b[part]) for part in b)


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_a_complete_resume_is_bit_exact_and_every_state_matters(name, device):
    setup, device = SETUPS[name], torch.device(device)
    straight = grader.uninterrupted_run(setup, device)
    complete = _resumed_in_memory(setup, device, None)
    assert complete["losses_after"] == straight["losses_after"]
    assert _same_facts(complete["final"], straight["final"])
    for part in PARTS:
        if (part == "scaler" and not setup.scaler) or (part == "cuda" and device.type != "cuda"):
            continue
        partial = _resumed_in_memory(setup, device, part)
        assert (partial["losses_after"] != straight["losses_after"]
                or not _same_facts(partial["final"], straight["final"])), f"leaving out {part} changes nothing"


def test_a_missing_scheduler_shows_up_only_at_the_milestone():
    setup = SETUPS["adam"]
    straight = grader.uninterrupted_run(setup, torch.device("cpu"))["losses_after"]
    partial = _resumed_in_memory(setup, torch.device("cpu"), "scheduler")["losses_after"]
    first = next(i for i, (a, b) in enumerate(zip(partial, straight)) if a != b)
    milestone = setup.milestones[0] - setup.saved_step  # the resumed step whose update uses the dropped rate
    assert first == milestone + 1, (first, milestone)


def test_reference_round_trip_holds_no_pickled_objects(tmp_path):
    setup = grader.Setup(scaler=True)
    parts = grader.build_parts(setup, setup.seed, torch.device("cpu"))
    path = tmp_path / "a" / "b" / "all.pt"
    reference.save_checkpoint(path, model=parts.model, optimizer=parts.optimizer, step=3, scheduler=parts.scheduler,
                              scaler=parts.scaler, generator=parts.generator)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert sorted(p.name for p in path.parent.iterdir()) == ["all.pt"]


def test_an_exploding_tensor_breaks_a_naive_save_but_not_the_reference(tmp_path):
    model = grader.FusedNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    naive, atomic = tmp_path / "naive.pt", tmp_path / "atomic.pt"
    for path in (naive, atomic):
        reference.save_checkpoint(path, model=model, optimizer=optimizer, step=1)
    before = atomic.read_bytes()
    model.fuse = grader.ExplodingTensor
    with pytest.raises(grader.InjectedSaveFailure):
        torch.save({"model": model.state_dict()}, naive)
    with pytest.raises(Exception):
        torch.load(naive, weights_only=True)  # the naive save left a broken file: the premise of the check
    model.fuse = grader.ExplodesWithInterrupt
    with pytest.raises(KeyboardInterrupt):
        reference.save_checkpoint(atomic, model=model, optimizer=optimizer, step=2)
    assert atomic.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.pt", "naive.pt"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX only")
def test_a_file_size_limit_breaks_a_naive_save_midway(tmp_path):
    """In a child process (the limit is per process): the write fails part-way, the partial file stays."""
    script = textwrap.dedent(f"""
        import resource, signal, torch
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            torch.save({{"w": torch.ones(10000)}}, {str(tmp_path / "naive.pt")!r})
        except Exception as exc:
            print("raised", type(exc).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120).stdout
    assert "raised" in out
    assert 0 < (tmp_path / "naive.pt").stat().st_size <= 2000


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine loads a cuda-tagged file without map_location")
def test_a_file_tagged_as_written_on_a_gpu_needs_map_location_here(tmp_path):
    path = tmp_path / "gpu.pt"
    with grader._locations_written_as("cuda:0"):
        torch.save({"w": torch.arange(3.0)}, path)
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=True)
    assert torch.equal(torch.load(path, weights_only=True, map_location="cpu")["w"], torch.arange(3.0))
    assert torch.serialization.location_tag(torch.ones(1).untyped_storage()) == "cpu"  # restored afterwards
