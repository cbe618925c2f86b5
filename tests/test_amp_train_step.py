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


# ==================================================================================================
# The generated domain (issue 32): each class the generator must produce, and the check it feeds
# ==================================================================================================
import random  # noqa: E402

import graders  # noqa: E402
from graders import domain  # noqa: E402


@pytest.fixture(scope="module")
def drawn():
    return [grader.draw_setup(random.Random(f"amp-{k}")) for k in range(500)]


@pytest.mark.parametrize("name, holds", [
    ("every optimizer", lambda cs: {c["optimizer"] for c in cs} == set(grader.OPTIMIZERS)),
    ("dtype left at its default", lambda cs: any("dtype" not in c for c in cs)),
    ("float16 given", lambda cs: any(c.get("dtype") == torch.float16 for c in cs)),
    ("bfloat16 with a disabled scaler", lambda cs: any(c.get("dtype") == torch.bfloat16
                                                       and c["scaler"] == {"enabled": False} for c in cs)),
    ("bfloat16 with an enabled scaler", lambda cs: any(c.get("dtype") == torch.bfloat16
                                                       and c["scaler"].get("enabled", True) for c in cs)),
    ("float16 with a disabled scaler", lambda cs: any(c.get("dtype", torch.float16) == torch.float16
                                                      and c["scaler"] == {"enabled": False} for c in cs)),
    ("init_scale 1 (the edge)", lambda cs: any(c["scaler"].get("init_scale") == 1.0 for c in cs)),
    ("init_scale 2**34", lambda cs: any(c["scaler"].get("init_scale") == 2.0 ** 34 for c in cs)),
    ("growth_factor, backoff_factor, growth_interval given",
     lambda cs: all(any(key in c["scaler"] for c in cs) for key in ("growth_factor", "backoff_factor",
                                                                    "growth_interval"))),
    ("max_norm left out", lambda cs: any("max_norm" not in c for c in cs)),
    ("max_norm=None given", lambda cs: any("max_norm" in c and c["max_norm"] is None for c in cs)),
    ("max_norm=0.0", lambda cs: any(c.get("max_norm") == 0.0 and "max_norm" in c for c in cs)),
    ("max_norm far above every norm (a no-op)", lambda cs: any(c.get("max_norm") == 1e6 for c in cs)),
    ("a frozen head and an unused parameter", lambda cs: any(c.get("frozen_extras") for c in cs)),
    ("every parameter frozen", lambda cs: any(c.get("all_frozen") for c in cs)),
    ("one parameter alone gets a gradient", lambda cs: any(c.get("only_bias") for c in cs)),
    ("stale gradients", lambda cs: any(c.get("stale") for c in cs)),
    ("inf, -inf and NaN injected", lambda cs: {str(v) for c in cs for v in c.get("poison", {}).values()}
     == {"inf", "-inf", "nan"}),
    ("one entry of one gradient poisoned", lambda cs: any(c.get("poison_bias") for c in cs)),
    ("a poisoned call after a clean one", lambda cs: any("0" not in c.get("poison", {"0": 1}) for c in cs)),
    ("one call and four", lambda cs: {1, 4} <= {c["steps"] for c in cs}),
    ("a batch of one", lambda cs: any(c.get("batch") == 1 for c in cs)),
    ("parameter groups with clipping", lambda cs: any(c["optimizer"] == "sgd_groups" and c.get("max_norm")
                                                      for c in cs)),
])
def test_the_generator_draws(drawn, name, holds):
    assert holds(drawn), name


def test_the_generator_stays_inside_the_specification(drawn):
    """Stale gradients only where every parameter gets a new one (zeros and None both 'zero the gradients'), and
    an enabled scaler only where some parameter has a gradient (scaler.step asserts one was unscaled)."""
    for config in drawn:
        if config.get("stale"):
            assert not any(config.get(k) for k in ("frozen_extras", "all_frozen", "only_bias"))
        if config.get("all_frozen"):
            assert config["scaler"] == {"enabled": False}


def test_drawn_set_ups_make_a_no_op_act_and_overflow_by_themselves(drawn):
    """Norms above 1 where no max_norm is given (a clip nobody asked for would act), and float16 gradients that
    overflow with no injected inf (a scale too large), so that the step is skipped and the scale backs off."""
    above_one = overflowed = False
    for config in drawn[:200]:
        if "poison" in config or config["scaler"].get("enabled") is False:
            if config.get("max_norm") is None and not above_one:
                run = grader.reference_run(config, torch.device("cpu"))
                above_one = any(s["returned"][1] > 1 for s in run)
            continue
        if config["scaler"]["init_scale"] >= 2.0 ** 24 and config.get("dtype", torch.float16) == torch.float16:
            run = grader.reference_run(config, torch.device("cpu"))
            overflowed = overflowed or any(s["returned"][2] for s in run)
        if above_one and overflowed:
            break
    assert above_one and overflowed


def test_the_reference_matches_the_specified_sequence_on_drawn_set_ups():
    """The judge's sequence and the reference agree to the bit on drawn set-ups (what the generated check needs)."""
    rng = random.Random("reference")
    for _ in range(25):
        config = grader.draw_setup(rng)
        expected = grader.expected_compact(config, torch.device("cpu"))
        setup = grader.build_setup(config, "cpu")
        for i, right in enumerate(expected):
            with grader.one_torch_thread():
                got = reference.amp_train_step(setup["model"], setup["optimizer"], setup["scaler"], setup["loss_fn"],
                                               setup["inputs"], setup["targets"], **grader.step_kwargs(config))
            observed = {"returned": grader._returned_facts(got), "optimizer_steps": 0 if got[2] else 1,
                        **grader.compact(grader.snapshot(setup))}
            assert grader.step_difference(config, observed, right, i) is None, config


def test_the_generated_check_rejects_a_bug_and_reports_the_smallest_set_up():
    """Clipping only the first parameter group passes every hand-written check; the generated one finds it and
    reports the smallest failing set-up it drew."""
    path = grader_fixture("bug_clips_first_param_group_only.py")
    report = graders.check_file("amp_train_step", str(path), ["generated_setups"], device="cpu")
    result, = report.results
    assert not result.passed
    assert "the smallest" in result.message and "given:" in result.message
    assert "SGD with two parameter groups" in result.message


def test_the_generated_check_reports_a_crash_on_the_set_up_that_raised(tmp_path):
    """A norm that reads grads[1] crashes when one parameter alone has a gradient: the call is reported."""
    source = (grader_fixture("correct_step_hook.py").read_text()
              .replace("grad_norm = torch.nn.utils.get_total_norm(grads)",
                       "grad_norm = torch.nn.utils.get_total_norm([g.to(grads[1].device) for g in grads])"))
    path = tmp_path / "second_grad.py"
    path.write_text(source)
    report = graders.check_file("amp_train_step", str(path), ["generated_setups"], device="cpu")
    result, = report.results
    assert not result.passed and "IndexError" in result.message
    assert "every parameter frozen but the last layer's bias" in result.message


def grader_fixture(name):
    from pathlib import Path

    return Path(__file__).parent / "submissions" / "ch06_amp" / "amp_train_step" / name
