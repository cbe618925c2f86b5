"""lr_range_test and suggest_lr: the reference meets the specification, and the grader's own script of it
agrees with the reference; sweeps that do nothing earn nothing."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import graders
from graders.ch04_data import lr_range_test as grader
from graders.compare import one_torch_thread
from solutions import ch04_data as reference

LR_CHECKS = ["validates_arguments", "geometric_sweep", "smoothed_losses", "trains_in_train_mode",
             "restarts_short_loader", "stops_on_divergence", "restores_parameters_and_buffers",
             "restores_training_mode", "restores_optimizer"]


# -- the reference meets its specification ----------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=2, max_size=40), st.integers(0, 12), st.integers(0, 12))
def test_reference_suggest_lr_matches_numpy_gradient(losses, skip_start, skip_end):
    lrs = [1e-6 * 10 ** (i / 4) for i in range(len(losses))]
    kept = losses[skip_start:max(len(losses) - skip_end, 0)]
    if len(kept) < 2:
        with pytest.raises(ValueError):
            reference.suggest_lr(lrs, losses, skip_start=skip_start, skip_end=skip_end)
        return
    expected = lrs[skip_start + int(np.argmin(np.gradient(np.array(kept))))]
    assert reference.suggest_lr(lrs, losses, skip_start=skip_start, skip_end=skip_end) == expected


@settings(max_examples=10, deadline=None)
@given(start=st.floats(1e-6, 1e-2), decades=st.floats(0.5, 3.0), num_iter=st.integers(2, 12),
       mode=st.sampled_from(["train", "eval", "mixed"]))
def test_reference_lr_range_test_sweeps_and_restores(start, decades, num_iter, mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 2))
    optimizer = torch.optim.Adam([{"params": model[0].parameters()},
                                  {"params": [*model[1].parameters(), *model[3].parameters()], "lr": 0.03}])
    loader = DataLoader(TensorDataset(torch.randn(12, 3), torch.randint(0, 2, (12,))), batch_size=4)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(4, 3)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()  # the optimizer has state
    model.train(mode != "eval")
    if mode == "mixed":
        model[1].eval()
    before = copy.deepcopy(model.state_dict())
    before_optimizer = copy.deepcopy(optimizer.state_dict())
    before_modes = [m.training for m in model.modules()]
    end = start * 10**decades
    lrs, losses = reference.lr_range_test(model, optimizer, nn.CrossEntropyLoss(), loader, start_lr=start,
                                          end_lr=end, num_iter=num_iter, diverge_threshold=1e9)
    assert len(lrs) == len(losses) == num_iter
    assert lrs[0] == start and math.isclose(lrs[-1], end, rel_tol=1e-12)
    ratios = [b / a for a, b in zip(lrs, lrs[1:])]
    assert all(math.isclose(r, ratios[0], rel_tol=1e-9) for r in ratios)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    after = optimizer.state_dict()
    assert [g["lr"] for g in after["param_groups"]] == [g["lr"] for g in before_optimizer["param_groups"]]
    for index, state in before_optimizer["state"].items():
        assert all(torch.equal(after["state"][index][k], v) for k, v in state.items())
    assert [m.training for m in model.modules()] == before_modes


@pytest.mark.parametrize("kwargs", [dict(start_lr=0.0), dict(start_lr=-1.0), dict(start_lr=1.0, end_lr=1.0),
                                    dict(start_lr=1.0, end_lr=0.5), dict(num_iter=1), dict(num_iter=0)])
def test_reference_lr_range_test_rejects_bad_arguments(kwargs):
    model = nn.Linear(2, 1)
    with pytest.raises(ValueError):
        reference.lr_range_test(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.MSELoss(), [], **kwargs)


# -- the grader's script of the specification is the reference's run --------------------------------
@pytest.mark.parametrize("spec, params", [
    (dict(mode="eval", samples=21), dict(start_lr=1e-4, end_lr=0.1, num_iter=10)),
    (dict(kind="adam", batch_size=5, samples=10, loader="list"), dict(start_lr=1e-3, end_lr=1e3, num_iter=30)),
    (dict(batch_size=4, batches=105, loss_scale=1e3), {}),
    (dict(mode="mixed", learnable=True, seed=3), dict(start_lr=1e-2, end_lr=100.0, num_iter=60, smooth=0.3)),
])
def test_grader_script_agrees_with_the_reference(spec, params):
    spec = grader._spec(**spec)
    expected = grader._script(spec, params, torch.device("cpu"))
    model, optimizer, loss_fn, loader = grader._build(spec, torch.device("cpu"))
    with one_torch_thread():  # as in the runner: near divergence, another summation order shows
        lrs, losses = reference.lr_range_test(model, optimizer, loss_fn, loader, **params)
    assert lrs == expected.lrs
    assert np.allclose(losses, expected.losses, rtol=1e-12, atol=0)


def test_diverging_scenarios_cross_clearly_on_their_first_seed(device):
    trial = grader._sgd_diverging(torch.device(device))
    assert trial.spec["seed"] == 0 and len(trial.expected.lrs) < 30
    trial = grader._diverging(torch.device(device), learnable=True, batches=30, seeds=(3,),
                              tells_apart=("first", "default"), start_lr=1e-2, end_lr=100.0, num_iter=60, smooth=0.3,
                              diverge_threshold=2.0)
    assert trial.spec["seed"] == 3
    trial = grader._diverging(torch.device(device), kind="adam", batches=30, seeds=(0,), start_lr=1e-3,
                              end_lr=1e3, num_iter=30)
    assert len(trial.expected.lrs) < 30


# -- the grader ----------------------------------------------------------------------------------------
def test_reference_passes_every_check(device):
    report = graders.check_namespace("lr_range_test", vars(reference), device=device, instructor=True)
    assert report.passed and report.score == report.max_score == 11, report.as_text()
    assert not report.notes, report.notes


def test_sweeps_that_never_train_earn_nothing():
    """A review found a do-nothing lr_range_test credited with "restored the state" it never changed."""

    def validates_then_returns_nothing(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0,
                                       num_iter=100, smooth=0.05, diverge_threshold=5.0):
        if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
            raise ValueError("bad arguments")
        return [], []

    def forward_only(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                     smooth=0.05, diverge_threshold=5.0):
        if start_lr <= 0 or end_lr <= start_lr or num_iter < 2:
            raise ValueError("bad arguments")
        modes = [(m, m.training) for m in model.modules()]
        model.train()
        lrs, losses, batches = [], [], iter(loader)
        with torch.no_grad():
            for i in range(num_iter):
                batch = next(batches, None)
                if batch is None:
                    batches = iter(loader)
                    batch = next(batches)
                value = loss_fn(model(batch[0]), batch[1]).item()
                lrs.append(start_lr * (end_lr / start_lr) ** (i / (num_iter - 1)))
                losses.append(value if i == 0 else smooth * value + (1 - smooth) * losses[-1])
        for m, training in modes:
            m.training = training
        return lrs, losses

    for lr_range_test in (validates_then_returns_nothing, forward_only):
        report = graders.check_namespace("lr_range_test", {"lr_range_test": lr_range_test,
                                                           "suggest_lr": reference.suggest_lr},
                                         LR_CHECKS, device="cpu", instructor=True)
        assert report.score == 0, report.as_text()
        assert not report.grader_errors, report.as_text()


# -- the generated domain (issue 32): each class the specification allows is drawn ---------------------
def _drawn(generate, size, count: int = 500, seed: int = 0) -> list:
    import random

    from graders import domain

    random.seed(seed)
    return domain.draw(generate, count, size=size)


def _left(case) -> int:
    lrs, losses, kwargs = case
    return len(grader._trimmed(losses, kwargs.get("skip_start", 10), kwargs.get("skip_end", 5)))


def test_generated_suggest_lr_calls_cover_the_trimming_relations():
    drawn = _drawn(grader.draw_suggest_case, grader.suggest_case_size)
    left = [_left(c) for c in drawn]
    assert {0, 1, 2, 3} <= set(left) and max(left) > 50
    assert any(k.get("skip_end", 5) > len(s) for _, s, k in drawn)  # skip_end past the length
    assert any(k.get("skip_start", 10) > len(s) for _, s, k in drawn)
    assert any(k.get("skip_end") == 0 for _, _, k in drawn) and any("skip_start" not in k for _, _, k in drawn)
    assert any("skip_end" not in k for _, _, k in drawn)
    assert {type(lrs) for lrs, _, _ in drawn} == {list, tuple}
    assert all(_left(c) >= 2 for c in _drawn(lambda rng: grader.draw_suggest_case(rng, valid=True),
                                             grader.suggest_case_size, 100))


def test_generated_suggest_lr_calls_cover_ties_ends_and_magnitudes():
    drawn = [c for c in _drawn(grader.draw_suggest_case, grader.suggest_case_size) if _left(c) >= 3]

    def steepest(case):
        lrs, losses, kwargs = case
        kept = np.gradient(np.array(grader._trimmed(losses, kwargs.get("skip_start", 10), kwargs.get("skip_end", 5))))
        return kept, int(np.argmin(kept))

    assert any((g == g.min()).sum() > 1 for g, _ in map(steepest, drawn))  # several points share the steepest fall
    assert any(j == len(g) - 1 for g, j in map(steepest, drawn)) and any(j == 0 for g, j in map(steepest, drawn))
    magnitudes = [abs(v) for _, losses, _ in drawn for v in losses if v]
    assert min(magnitudes) < 1e-100 and max(magnitudes) > 1e20
    assert any(min(losses, default=0) < 0 for _, losses, _ in drawn)


def test_generated_sweeps_cover_the_arguments_and_the_objects():
    drawn = _drawn(grader.draw_sweep, grader.sweep_size, 300)
    params = [{**grader.DEFAULTS, **c["params"]} for c in drawn]
    assert any(p["diverge_threshold"] == 1.0 for p in params) and any(p["smooth"] == 0.0 for p in params)
    assert any(p["smooth"] == 1.0 for p in params) and any(p["num_iter"] == 2 for p in params)
    assert any(p["end_lr"] <= p["start_lr"] * (1 + 1e-5) for p in params)
    assert any(p["end_lr"] >= p["start_lr"] * 1e6 for p in params)
    assert all(p["end_lr"] > p["start_lr"] > 0 and p["num_iter"] >= 2 and p["diverge_threshold"] > 0 for p in params)
    assert any(p["diverge_threshold"] < 1 for p in params)  # positive losses stop at s_0 there
    assert any(len(c["params"]) < 5 for c in drawn)  # some arguments left to their defaults
    objects = [c["objects"] for c in drawn]
    assert {o["mode"] for o in objects} == {"train", "eval", "mixed"} and {o["kind"] for o in objects} == {"sgd", "adam"}
    assert {o["loader"] for o in objects} == {"list", "dataloader", "shuffled"}
    assert {o.get("nest", 0) for o in objects} == {0, 1, 2}  # the BatchNorm a child, a grandchild, deeper
    assert any(o.get("stale_grads") for o in objects) and any(o.get("loss_shift", 0) < 0 for o in objects)
    assert any(o.get("nest") and o["mode"] == "mixed" for o in objects)  # a frozen BatchNorm below the children
    assert any(o["samples"] % o["batch_size"] for o in objects)  # a short last batch
    assert any(-(-o["samples"] // o["batch_size"]) < p["num_iter"] for o, p in zip(objects, params))  # restarted


def test_the_generated_checks_reject_bugs_the_hand_written_cases_miss():
    """>= in the divergence test shows only at diverge_threshold=1; a skip_end past the length only in generated
    calls: each is rejected, on the smallest failing case, with the cause named."""
    path = "tests/submissions/ch04_data/lr_range_test/bug_diverge_at_threshold.py"
    report = graders.check_file("lr_range_test", path, ["stops_on_divergence"], device="cpu")
    message = report.results[0].message
    assert not report.passed and "the smallest of" in message and "uses >= where the spec has >" in message, message
    assert "num_iter=2" in message, message  # the smallest: two iterations
    namespace: dict = {}
    exec("import numpy as np\n"
         "def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):\n"
         "    kept = list(losses)[skip_start:max(len(losses) - skip_end, -1)]\n"
         "    if len(kept) < 2:\n"
         "        raise ValueError('fewer than 2')\n"
         "    return float(list(lrs)[skip_start + int(np.argmin(np.gradient(np.array(kept))))])\n"
         "def lr_range_test(*args, **kwargs):\n"
         "    raise NotImplementedError\n", namespace)
    report = graders.check_namespace("lr_range_test", namespace, ["suggest_lr_too_few_points"], device="cpu")
    message = report.results[0].message
    assert not report.passed and "the smallest of" in message and "generated calls" in message, message
