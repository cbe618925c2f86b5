"""ddp_accumulation: the grader's one-process expectation against a training loop written out plainly (one
optimizer, every rank's micro-batches, the mean loss), and its catalogue of mistakes."""

from __future__ import annotations

import pytest
import torch

from graders.ch08_ddp import ddp_accumulation as grader

CASES = [grader.AccumulationCase(world_size=2, counts=(3, 3)),
         grader.AccumulationCase(world_size=2, counts=(2, 2), leftover=True, momentum=0.9, seed=7),
         grader.AccumulationCase(world_size=3, counts=(2, 1), loss="cross_entropy", seed=11),
         grader.AccumulationCase(world_size=2, counts=(4, 2, 4), bucket_cap_mb=0.0001, seed=5)]
IDS = ["two_steps", "momentum_and_leftovers", "three_ranks_cross_entropy", "three_steps"]


def _plain_training(case: grader.AccumulationCase) -> tuple[list[dict], list[list[float]]]:
    model = grader.build_model(case)
    optimizer = torch.optim.SGD(model.parameters(), lr=case.lr, momentum=case.momentum)
    loss_fn = grader.loss_function(case)
    params, losses = [], []
    for call, count in enumerate(case.counts):
        everything = [grader.micro_batches(case, r, call) for r in range(case.world_size)]
        with torch.no_grad():
            losses.append([sum(loss_fn(model(x), y).item() for x, y in batches) / count for batches in everything])
        optimizer.zero_grad()
        inputs = torch.cat([x for batches in everything for x, _ in batches])
        targets = torch.cat([y for batches in everything for _, y in batches])
        loss_fn(model(inputs), targets).backward()  # equal micro-batches: the mean over all samples
        optimizer.step()
        params.append({n: p.detach().clone() for n, p in model.named_parameters()})
    return params, losses


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_expectation_is_one_process_training_on_everything(case):
    expected = grader.expected_run(case)
    params, losses = _plain_training(case)
    for call in range(len(case.counts)):
        for name, want in params[call].items():
            torch.testing.assert_close(expected.params[call][name], want, rtol=1e-6, atol=1e-7)
        assert expected.losses[call] == pytest.approx(losses[call], rel=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_mistake_gives_other_parameters(case):
    """A cause is named only when the student's parameters match it: it must differ from the right step."""
    expected = grader.expected_run(case)
    for call in range(len(case.counts)):
        for cause, per_rank in expected.mistakes[call].items():
            for rank_params in per_rank:
                assert not grader._close_params(rank_params, expected.params[call]), (call, cause[:60])


def test_the_checks_start_from_the_same_model_on_every_rank_and_give_each_rank_its_own_data():
    case = CASES[0]
    first, second = grader.build_model(case), grader.build_model(case)
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))
    assert not torch.equal(grader.micro_batches(case, 0, 0)[0][0], grader.micro_batches(case, 1, 0)[0][0])
    assert not torch.equal(grader.micro_batches(case, 0, 0)[0][0], grader.micro_batches(case, 0, 1)[0][0])
