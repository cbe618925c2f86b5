"""ddp_accumulation: the grader's one-process expectation against a training loop written out plainly (one
optimizer, every rank's micro-batches, the mean loss), and its catalogue of mistakes."""

from __future__ import annotations

import pytest
import torch

from graders.ch08_ddp import ddp_accumulation as grader

CASES = grader.CASES
IDS = ["two_steps", "several_buckets", "leftovers_and_momentum", "three_ranks_cross_entropy", "then_empty"]


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


def test_the_reference_on_real_ranks_meets_every_record(tmp_path):
    """The reference's records are what the checks expect, and the tiny bucket cap really makes several buckets
    (after DDP's first step, when it rebuilds them in the order gradients arrive)."""
    from graders.isolation import Limits, StudentSource
    from graders.ranks import run_on_ranks

    path = tmp_path / "answer.py"
    path.write_text("from solutions.ch08_ddp import ddp_accumulation_step\n")
    source = StudentSource.from_file(str(path), ["ddp_accumulation_step"])
    case = grader.SEVERAL_BUCKETS
    run = run_on_ranks(source, grader.accumulate_on_rank, case.world_size, [(case,)] * case.world_size,
                       limits=Limits(instructor=True))
    observed = run.values()
    grader._expect_one_all_reduce(case, observed)
    grader._expect_parameters(case, grader.expected_run(case), observed)
    buckets = [len(call["buckets"]) for call in observed[0]["calls"]]
    assert buckets[0] >= 1 and min(buckets[1:]) > 1, buckets
