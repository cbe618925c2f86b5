"""amp_train_step: the reference against the specified sequence written out by hand, on every set-up the grader
builds, and the grader's machinery (its probe, its wrong sequences, bit-for-bit repeatability)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from graders.ch06_amp import amp_train_step as grader
from solutions import ch06_amp as reference

CONFIGS = {
    "sgd_fp16_growing": {"optimizer": "sgd", "scaler": grader.GROWING, "steps": 3},
    "adam_frozen_extras": {"optimizer": "adam", "scaler": {"init_scale": 2.0 ** 12, "growth_interval": 2},
                           "steps": 3, "frozen_extras": True, "seed": 1},
    "adamw_bf16_clip": {"optimizer": "adamw", "scaler": {"init_scale": 2.0 ** 8}, "steps": 2,
                        "dtype": torch.bfloat16, "max_norm": 0.05, "seed": 2},
    "inf_then_nan": {"optimizer": "sgd", "scaler": grader.GROWING, "steps": 3,
                     "poison": {"1": float("inf"), "2": float("nan")}, "seed": 3},
    "disabled_bf16_nan": {"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 2, "dtype": torch.bfloat16,
                          "poison": {"0": float("nan")}, "seed": 4},
    "all_frozen": {"optimizer": "sgd", "scaler": {"enabled": False}, "steps": 1, "dtype": torch.bfloat16,
                   "all_frozen": True, "seed": 5},
    "stale": {"optimizer": "adam", "scaler": grader.GROWING, "steps": 2, "stale": True, "seed": 6},
}


def _by_hand(setup, dtype=torch.float16, max_norm=None):
    """The specification's sequence, line by line, with skipped read from the optimizer's step count."""
    model, optimizer, scaler = setup["model"], setup["optimizer"], setup["scaler"]
    optimizer.zero_grad()
    with torch.autocast(setup["inputs"].device.type, dtype=dtype):
        loss = setup["loss_fn"](model(setup["inputs"]), setup["targets"])
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0
    if max_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    calls = []
    handle = optimizer.register_step_post_hook(lambda *_: calls.append(1))
    scaler.step(optimizer)
    handle.remove()
    scaler.update()
    return loss.item(), norm, not calls


def _same_snapshots(a, b):
    return grader._same_state(a["parameters"], b["parameters"]) and grader._same_state(a["optimizer"], b["optimizer"]) \
        and a["scaler"] == b["scaler"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_reference_is_the_specified_sequence(name, device):
    config = CONFIGS[name]
    with torch.random.fork_rng(devices=[]):
        ours, theirs = grader.build_setup(config, device), grader.build_setup(config, device)
    for _ in range(config["steps"]):
        got = reference.amp_train_step(ours["model"], ours["optimizer"], ours["scaler"], ours["loss_fn"],
                                       ours["inputs"], ours["targets"], **grader.step_kwargs(config))
        right = _by_hand(theirs, **grader.step_kwargs(config))
        assert type(got) is tuple and [type(v) for v in got] == [float, float, bool]
        assert got[2] == right[2] and (got[0] == right[0] or math.isnan(got[0]) and math.isnan(right[0]))
        assert (math.isnan(got[1]) or math.isinf(got[1])) if not math.isfinite(right[1]) else \
            math.isclose(got[1], right[1], rel_tol=1e-5)
        assert _same_snapshots(grader.snapshot(ours), grader.snapshot(theirs))


def test_poisoned_steps_are_skipped_and_back_off_only_with_an_enabled_scaler():
    run = grader.reference_run(CONFIGS["inf_then_nan"], torch.device("cpu"))
    assert [s["returned"][2] for s in run] == [False, True, True]
    assert run[1]["scaler"]["scale"] == run[0]["scaler"]["scale"] * 0.5
    assert grader._same_state(run[1]["parameters"], run[0]["parameters"])
    disabled = grader.reference_run(CONFIGS["disabled_bf16_nan"], torch.device("cpu"))
    assert [s["returned"][2] for s in disabled] == [False, False]
    assert all(torch.isnan(p).any() for p in disabled[0]["parameters"].values())  # stepped on NaN
    assert disabled[0]["scaler"] == {}
    assert grader.reference_run(CONFIGS["all_frozen"], torch.device("cpu"))[0]["returned"][1] == 0.0


def test_a_run_repeats_bit_for_bit():
    """The grader compares parameters exactly: two runs of the same set-up must agree to the bit."""
    for config in CONFIGS.values():
        a, b = grader.reference_run(config, torch.device("cpu")), grader.reference_run(config, torch.device("cpu"))
        assert all(_same_snapshots(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("variant", list(grader.VARIANT_CAUSES))
def test_every_wrong_sequence_the_grader_names_is_told_apart_from_the_right_one(variant):
    """A cause is named only when the student's result matches a wrong sequence and not the right one: each wrong
    sequence must differ from the right one on some set-up the checks use."""
    configs = list(CONFIGS.values()) + [{"optimizer": "sgd", "scaler": grader.GROWING, "steps": 2, "max_norm": 0.1}]
    differs = False
    for config in configs:
        right = grader.reference_run(config, torch.device("cpu"))
        wrong = grader.reference_run(config, torch.device("cpu"), variant)
        if not wrong or len(wrong) != len(right) or not all(_same_snapshots(x, y) for x, y in zip(right, wrong)):
            differs = True
            break
    assert differs, variant


def test_the_probe_sees_autocast_in_the_forward_and_not_in_backward():
    config = {"optimizer": "sgd", "scaler": grader.GROWING, "steps": 1}
    setup = grader.build_setup(config, "cpu")
    reference.amp_train_step(setup["model"], setup["optimizer"], setup["scaler"], setup["loss_fn"], setup["inputs"],
                             setup["targets"])
    call, = setup["loss_fn"].calls
    assert call == {"autocast": True, "autocast_dtype": "float16", "outputs_dtype": "float16",
                    "backward_autocast": False}
    # A backward inside the autocast block is seen by the hook on the loss.
    setup = grader.build_setup(config, "cpu")
    with torch.autocast("cpu", dtype=torch.float16):
        loss = setup["loss_fn"](setup["model"](setup["inputs"]), setup["targets"])
        setup["scaler"].scale(loss).backward()
    assert setup["loss_fn"].calls[0]["backward_autocast"] is True
