"""checkpoint: the grader's set-up depends on every state the specification lists (so each missing one can
be seen), the reference resumes it bit for bit, and the failures the grader injects really do what the
checks assume (a naive save is broken by them; a GPU-tagged file does not load without map_location)."""

from __future__ import annotations

import copy
import os
import pathlib
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import graders
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


# ==================================================================================================
# The generated round trips: each class the specification allows is drawn (500 configs, a fixed seed)
# ==================================================================================================
SUBMISSIONS = pathlib.Path(__file__).parent / "submissions" / "ch07_checkpointing" / "checkpoint"


@pytest.fixture(scope="module")
def configs():
    generator = random.Random(5)
    return [grader.generate_config(generator) for _ in range(500)]


@pytest.mark.parametrize("field,values", [
    ("model", grader.MODELS), ("optimizer", grader.OPTIMIZERS), ("scheduler", grader.SCHEDULERS[1:]),
    ("scaler", ["enabled", "disabled"]), ("dtype", ["float32", "float64", "bfloat16"]), ("groups", [1, 2]),
    ("steps", [0, 1, 2, 3]), ("path_form", ["path", "text", "relative"]), ("file_name", grader.FILE_NAMES),
    ("map_location", grader.MAP_LOCATIONS), ("gauss_cached", [True, False]), ("frozen", [True, False]),
    ("previous", [True, False]), ("generator", [True, False]),
])
def test_the_generator_draws_every_option(configs, field, values):
    drawn = {getattr(c, field) for c in configs}
    assert set(values) <= drawn, set(values) - drawn


@pytest.mark.parametrize("step", [0, 2**31, 2**53 + 1, 2**63 - 1, 2**64 + 5])
def test_the_generator_draws_steps_at_the_edges(configs, step):
    assert any(c.step == step for c in configs)


def test_the_generator_draws_parents_that_do_not_exist_three_deep_and_relative_bare_names(configs):
    assert any(len(c.folders) == 3 for c in configs)
    assert any(c.path_form == "relative" and not c.folders for c in configs)


def test_the_generator_combines_the_optional_parts_every_way(configs):
    """Saved and passed, saved and not passed, passed and never saved (KeyError), with one, two or three."""
    assert any(c.raises for c in configs) and sum(c.raises for c in configs) >= 40
    assert any(set(c.saved) - set(c.loaded) and not c.raises for c in configs)
    assert any(len(c.saved) == 3 and set(c.loaded) == set(c.saved) for c in configs)
    assert any(not c.saved and not c.loaded for c in configs)
    assert any(c.raises and c.saved for c in configs)  # an error combined with parts that are restored
    # a disabled scaler saved and passed back: its state is empty but present
    assert any(c.scaler == "disabled" and "scaler" in c.saved and "scaler" in c.loaded for c in configs)


def test_the_models_hold_state_one_level_deeper_and_wider_than_the_set_ups():
    nested = grader.NestedNet()
    depths = [name.count(".") for name, m in nested.named_modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert max(depths) >= 3 and min(depths) >= 2  # no BatchNorm is a direct child
    assert "calls" in dict(nested.named_buffers()) and "temperature" in dict(nested.named_parameters())
    assert len(grader.WideNet().heads) == 4
    tied = grader.TiedNet()
    assert tied.head is tied.head_tied and "head_tied.weight" in tied.state_dict()


def test_every_part_of_a_rebuilt_config_differs_from_the_saved_one():
    """The premise: a part that is not restored shows (each RNG reseeded, every object from another seed and count)."""
    config = grader.Config(model="nested", optimizer="adamw_amsgrad", groups=2, steps=2, scheduler="onecycle",
                           scaler="enabled", generator=True, saved=grader.ALL_PARTS, loaded=grader.ALL_PARTS,
                           gauss_cached=True, rng_seed=3, seed=10)
    with grader.one_torch_thread():
        saved = grader.build_config(config, config.seed, config.steps)
        grader.seed_config_rngs(config, config.rng_seed)
        before = grader.built_facts(saved)
        rebuilt = grader.build_config(config, config.seed + 7919, grader._rebuild_steps(config))
        grader.seed_config_rngs(config, config.rng_seed + 104729)
        after = grader.built_facts(rebuilt)
    for part in ("model", "optimizer", "scheduler", "scaler"):
        assert grader._differences(after[part], before[part]), part
    buffers = [n for n in grader._differences(after["model"], before["model"]) if grader._is_buffer_entry(n)]
    assert any("running_mean" in n for n in buffers) and any("num_batches_tracked" in n for n in buffers)
    assert set(grader._differences(after["rng"], before["rng"])) == set(before["rng"])


def test_the_reference_passes_generated_round_trips_in_the_judges_own_terms(tmp_path):
    class Direct:
        def call(self, name, *args, **kwargs):
            try:
                return getattr(reference, name)(*args, **kwargs)
            except Exception as exc:
                from graders.isolation import StudentRaised, describe_exception
                raise StudentRaised(describe_exception(exc, set(), name)) from None

    generator = random.Random(21)
    drawn = [grader.generate_config(generator) for _ in range(24)]
    with grader.one_torch_thread():
        observed = grader.round_trip_scenario(Direct(), drawn, str(tmp_path))
    verdicts = [grader._judge_round_trip(c, seen) for c, seen in zip(drawn, observed)]
    assert not any(v.wrong for v in verdicts), [v for v in verdicts if v.wrong]
    assert any(c.raises for c in drawn) and any(not c.raises for c in drawn)


def _message(fixture: str, check: str) -> str:
    report = graders.check_file("checkpoint", str(SUBMISSIONS / fixture), [check], device="cpu")
    assert not report.passed, report.as_text()
    return report.results[0].message


def test_saving_parameters_only_is_rejected_on_a_model_with_buffers_and_the_smallest_case_shown():
    message = _message("bug_saves_parameters_only.py", "round_trips_on_generated_setups")
    assert "the smallest found" in message and "model nested" in message
    assert "only the model's buffers differ" in message
    given = next(line for line in message.splitlines() if "input:" in line)
    assert "step=7" in given and "scheduler=" not in given  # shrunk: the plainest step, no optional part left


def test_a_relative_bare_file_name_is_in_the_graded_sample():
    """A bug that fails only on save_checkpoint("ckpt.pt", ...) is rejected: the graded draw holds such a case."""
    message = _message("bug_makedirs_of_dirname.py", "round_trips_on_generated_setups")
    assert "relative to the current folder" in message and "FileNotFoundError" in message
