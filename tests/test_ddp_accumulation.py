"""ddp_accumulation: the grader's one-process expectation against a training loop written out plainly (one
optimizer, every rank's micro-batches, the mean loss), and its catalogue of mistakes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from graders.ch08_ddp import ddp_accumulation as grader

CASES = grader.CASES
IDS = ["two_steps", "several_buckets", "leftovers_and_momentum", "three_ranks_cross_entropy", "then_empty",
       "one_batch_object_repeated", "dropout_in_eval_mode"]


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


# ==================================================================================================
# The generated domain: each class the specification allows is drawn (500 cases, a fixed seed)
# ==================================================================================================
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(count=500, seed=9):
    random.seed(seed)
    return domain.draw(grader.generate_accumulation, count)


DOMAIN_CLASSES = {
    "one micro-batch (the only backward is the synced one)": lambda c: 1 in c.counts,
    "five micro-batches": lambda c: 5 in c.counts,
    "three calls in a row": lambda c: len(c.counts) == 3,
    "calls with different counts": lambda c: len(set(c.counts)) > 1,
    "micro-batches of one sample": lambda c: c.batch == 1,
    "SGD with momentum": lambda c: c.optimizer == "sgd" and c.momentum > 0,
    "weight decay": lambda c: c.weight_decay > 0,
    "Adam": lambda c: c.optimizer == "adam",
    "AdamW": lambda c: c.optimizer == "adamw",
    "RMSprop": lambda c: c.optimizer == "rmsprop",
    "cross-entropy": lambda c: c.loss == "cross_entropy",
    "a summed loss": lambda c: c.loss == "mse_sum",
    "L1": lambda c: c.loss == "l1",
    "smooth L1": lambda c: c.loss == "smooth_l1",
    "targets 100 times larger": lambda c: c.scale == 100.0,
    "three hidden layers": lambda c: len(c.hidden) == 3,
    "a hidden layer of width 1": lambda c: 1 in c.hidden,
    "a frozen first layer": lambda c: c.frozen,
    "layers nested one level deeper": lambda c: c.nested,
    "float64": lambda c: c.double,
    "tiny buckets": lambda c: c.bucket_cap_mb < 1,
    "gradient_as_bucket_view": lambda c: c.bucket_view,
    "stale gradients before the first call": lambda c: c.leftover,
    "frozen, nested and float64 at once": lambda c: c.frozen and c.nested and c.double,
    "one micro-batch object listed again and again": lambda c: c.repeated and max(c.counts) >= 2,
    "a Dropout model handed over in eval mode": lambda c: c.dropout_eval,
}


@pytest.mark.parametrize("name", DOMAIN_CLASSES)
def test_the_generator_draws_each_domain_class(name):
    assert any(DOMAIN_CLASSES[name](case) for case in _drawn()), name


def test_generated_cases_make_gradient_norms_above_one_so_that_a_clip_would_act():
    """The issue's held-out miss: clip_grad_norm_(..., 1.0) passed because every gradient's norm was about 0.5."""
    norms = []
    for case in _drawn(40):
        gradient = grader.expected_run(case).gradients[0]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in
                                                                  gradient.values()]))))
    assert max(norms) > 10 and sum(n > 1 for n in norms) >= len(norms) // 3, sorted(norms)


def _plain_sgd_training(case: grader.AccumulationCase) -> list[dict]:
    """Every rank's micro-batches in one process, the mean loss over all of them, any optimizer."""
    model = grader.build_model(case)
    optimizer = grader.make_optimizer(case, model)
    loss_fn = grader.loss_function(case)
    params = []
    for call, count in enumerate(case.counts):
        everything = [b for r in range(case.world_size) for b in grader.micro_batches(case, r, call)]
        optimizer.zero_grad()
        (sum(loss_fn(model(x), y) for x, y in everything) / len(everything)).backward()
        optimizer.step()
        params.append({n: p.detach().clone() for n, p in model.named_parameters()})
    return params


def test_the_generated_expectation_is_one_process_training_and_the_mistakes_differ():
    differs: dict[str, list[bool]] = {}
    for case in _drawn(25):
        expected = grader.expected_run(case)
        for call, want in enumerate(_plain_sgd_training(case)):
            for name, value in want.items():
                torch.testing.assert_close(expected.params[call][name], value, rtol=1e-5, atol=1e-6)
        for call in range(len(case.counts)):
            for cause, per_rank in expected.mistakes[call].items():
                if cause.startswith(("optimizer.step()", "the gradients were not synchronised")):
                    differs.setdefault(cause[:40], []).append(
                        not all(grader._close_params(p, expected.params[call]) for p in per_rank))
    # Almost every call tells each mistake apart. (Not every one: a saturated model, e.g. a frozen first layer of
    # width 1 under inputs x100, gives every rank the same gradient, so its ranks need no synchronising; a cause
    # is then not named, since it must fit every failing case.)
    for cause, seen in differs.items():
        assert sum(seen) >= 0.9 * len(seen), (cause, sum(seen), len(seen))


def test_the_generated_check_rejects_a_gradient_clip_and_reports_the_smallest_case(tmp_path):
    import graders

    path = tmp_path / "answer.py"
    path.write_text((
        "import contextlib, torch\n"
        "def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):\n"
        "    if not micro_batches:\n"
        "        raise ValueError('empty')\n"
        "    optimizer.zero_grad()\n"
        "    n, total = len(micro_batches), 0.0\n"
        "    for i, (x, y) in enumerate(micro_batches):\n"
        "        with contextlib.nullcontext() if i == n - 1 else ddp_model.no_sync():\n"
        "            loss = loss_fn(ddp_model(x), y)\n"
        "            (loss / n).backward()\n"
        "        total += loss.item()\n"
        "    torch.nn.utils.clip_grad_norm_(ddp_model.parameters(), 1.0)\n"
        "    optimizer.step()\n"
        "    return total / n\n"))
    passed = {r.name: r for r in graders.check_file("ddp_accumulation", str(path), device="cpu").results}
    assert all(r.passed for name, r in passed.items() if name != "matches_on_generated_cases")  # today's miss
    result = passed["matches_on_generated_cases"]
    assert not result.passed and "generated cases failed; the smallest of them" in result.message
    assert "likely cause" not in result.message  # no catalogued mistake is a clip


def _interleaved_params(case):
    """The parameters after each call with the gradient summed in a third order, neither the judge's nor the two
    grader._determinate tries: the ranks' micro-batches interleaved (rank 0's first, rank 1's first, ...)."""
    model = grader.build_model(case)
    optimizer = grader.make_optimizer(case, model)
    ranks = list(range(case.world_size))
    after_each = []
    for call, count in enumerate(case.counts):
        batches = {r: grader.micro_batches(case, r, call) for r in ranks}
        model.zero_grad(set_to_none=True)
        loss_fn = grader.loss_function(case)
        for index in range(count):
            for r in ranks:
                inputs, targets = batches[r][index]
                (loss_fn(model(inputs), targets) * (1.0 / (case.world_size * count))).backward()
        gradient = {n: p.grad.detach().clone() for n, p in grader._trainable(model)}
        model, optimizer, after = grader._stepped(model, optimizer, gradient)
        after_each.append(after)
    return after_each


@pytest.mark.full  # 57 s of make test's workers (2026-12-04): a property of the check's tolerance, proven in CI
def test_the_cases_judged_hold_in_another_summation_order_and_few_are_left_out():
    """DDP sums the gradient in an order of its own: a generated case is judged only if its expected values hold in
    DDP's order and in the reverse one (grader._determinate). The cases kept then hold in a third order as well,
    and those left out are few (the check keeps its power)."""
    cases = _drawn(80, seed=4)
    kept = [c for c in cases if grader._determinate(c, grader.expected_run(c))]
    assert len(kept) >= 0.9 * len(cases), f"{len(cases) - len(kept)} of {len(cases)} left out"
    held = [all(grader._close_params(params, grader.expected_run(case).params[call])
                for call, params in enumerate(_interleaved_params(case))) for case in kept[:30]]
    assert all(held), [case for case, ok in zip(kept, held) if not ok]


class _InProcess:
    """The student's side of a runner, reduced to what ``_accumulate`` asks of it: the reference's function."""

    def get(self, name):
        from solutions import ch08_ddp

        return getattr(ch08_ddp, name)

    def run(self, function, *args, **kwargs):
        return function(*args, **kwargs)


@pytest.mark.filterwarnings("ignore:`torch.distributed.reduce_op` is deprecated")  # gc's objects include it
def test_a_case_leaves_no_ddp_model_alive(tmp_path):
    """Kept ranks serve many runs: a case must not keep its DDP model (and its process group and threads) alive.
    Before the hooks were removed, every case left one: 400 generated cases ended both ranks with SIGABRT."""
    import gc
    from datetime import timedelta

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from graders.ranks import RankContext

    def alive():
        gc.collect()
        return sum(isinstance(o, DistributedDataParallel) for o in gc.get_objects())

    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1,
                            timeout=timedelta(seconds=20))
    try:
        group = dist.new_group(backend="gloo")
        rank = RankContext(0, 1, "gloo", "cpu")
        before = alive()
        for case in (grader.SEVERAL_BUCKETS, *_drawn(4, seed=3)):
            observed = grader._accumulate(_InProcess(), rank, case, group)
            assert observed["calls"], case  # it ran the step
        assert alive() == before
    finally:
        dist.destroy_process_group()


# Drawn by the mutation benchmark (scale 200, salt equivalence-1): the reference's own DDP run gave a third-call
# gradient 2e-5 (relatively) off the judge's, since RMSprop divides by a running magnitude and each call's rounding
# grows in the next; every call alone, from the expected parameters, held.
_DRIFTS = grader.AccumulationCase(
    world_size=2, counts=(4, 4, 4), batch=6, bucket_cap_mb=0.0001, leftover=False, loss="cross_entropy", momentum=0.0,
    lr=0.01, seed=599660, empty_call=False, optimizer="rmsprop", hidden=(16,), frozen=False, nested=False,
    double=False, scale=100.0, bucket_view=True, weight_decay=0.0)


def test_a_case_whose_rounding_grows_over_the_calls_is_not_judged():
    assert not grader._determinate(_DRIFTS, grader.expected_run(_DRIFTS))
    one_call = dataclasses.replace(_DRIFTS, counts=(4,))
    assert grader._determinate(one_call, grader.expected_run(one_call))  # the first call alone holds
