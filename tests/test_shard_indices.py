"""shard_indices: the reference against DistributedSampler itself over any size, rank, world size, seed and
epoch hypothesis makes; the global RNG untouched; and the grader's catalogue of mistakes (each one really
returns something else, and a cause is named only for the mistake that gives the student's list)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DistributedSampler

from graders.ch08_ddp import shard_indices as grader
from graders.outcomes import CheckFailed
from solutions.ch08_ddp import shard_indices


def _sampler(n: int, rank: int, world_size: int, **options) -> list[int]:
    epoch = options.pop("epoch", 0)
    sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, **options)
    sampler.set_epoch(epoch)
    return list(sampler)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 300), world_size=st.integers(1, 40), data=st.data(), shuffle=st.booleans(),
       seed=st.integers(0, 2**48), epoch=st.integers(0, 10_000), drop_last=st.booleans())
def test_the_reference_is_the_sampler(n, world_size, data, shuffle, seed, epoch, drop_last):
    rank = data.draw(st.integers(0, world_size - 1))
    options = dict(shuffle=shuffle, seed=seed, epoch=epoch, drop_last=drop_last)
    got = shard_indices(n, rank, world_size, **options)
    assert got == _sampler(n, rank, world_size, **options)
    assert all(type(i) is int for i in got)


@pytest.mark.parametrize("n,world_size", [(10, 3), (3, 8), (0, 2), (17, 17)])
def test_every_rank_together_covers_the_dataset(n, world_size):
    """Without drop_last the ranks' lists together hold every index (padding repeats some); with it, none twice."""
    padded = [i for r in range(world_size) for i in shard_indices(n, r, world_size, seed=3)]
    assert set(padded) == set(range(n))
    dropped = [i for r in range(world_size) for i in shard_indices(n, r, world_size, seed=3, drop_last=True)]
    assert len(dropped) == len(set(dropped)) == (n // world_size) * world_size


def test_the_reference_keeps_the_global_rng():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    shard_indices(100, 1, 3, seed=7, epoch=2)
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize("rank,world_size", [(3, 3), (-1, 3), (0, 0), (0, -2)])
def test_the_reference_refuses_a_rank_outside_the_world(rank, world_size):
    with pytest.raises(ValueError):
        shard_indices(6, rank, world_size)


def _all_cases() -> list[grader.Case]:
    sizes = [(10, 3), (3, 8), (11, 4), (0, 2), (64, 8), (1, 1)]
    options = [{}, {"shuffle": False}, {"seed": 4, "epoch": 2}, {"drop_last": True},
               {"shuffle": False, "drop_last": True}, {"shuffle": True, "seed": 3}]
    return grader._cases(sizes, *options)


def test_the_grader_expects_what_the_sampler_yields():
    for case in _all_cases():
        assert grader.sampler_indices(case) == _sampler(case.num_samples, case.rank, case.world_size,
                                                        **{k: case.option(k) for k in
                                                           ("shuffle", "seed", "epoch", "drop_last")})


def test_every_catalogued_mistake_shows_somewhere():
    """Each mistake the grader can name returns another list than the sampler on at least one checked case."""
    shown: dict[str, int] = {}
    for case in _all_cases() + grader._cases([(12, 4)], {"drop_last": True}):
        expected = grader.sampler_indices(case)
        for cause, returned in grader._mistakes(case):
            shown[cause] = shown.get(cause, 0) + (returned is not None and returned != expected)
    assert shown and all(count > 0 for count in shown.values()), {c[:40]: n for c, n in shown.items()}


def _as_if(mistake: str, cases: list) -> list:
    """What a student who makes exactly ``mistake`` returns on ``cases``."""
    results = []
    for case in cases:
        returned = dict(grader._mistakes(case))[mistake]
        results.append((case, grader.sampler_indices(case) if returned is None else returned))
    return results


def test_a_cause_is_named_only_when_one_mistake_explains_every_case():
    cases = _all_cases() + grader._cases([(12, 4)], {"drop_last": True})
    for mistake, _ in grader._mistakes(cases[0]):
        results = _as_if(mistake, cases)
        if all(got == grader.sampler_indices(case) for case, got in results):
            continue  # this mistake changes nothing on these cases
        assert grader._cause(results) == mistake, mistake[:60]
    # Right on every case but one, where the list is reversed: no mistake explains that.
    results = [(case, grader.sampler_indices(case)) for case in cases]
    results[5] = (results[5][0], results[5][1][::-1])
    assert grader._cause(results) is None
    # A mistake that fits the first wrong case only (as a small permutation may by chance) is not named.
    epoch_ignored = next(m for m, _ in grader._mistakes(cases[0]) if m.startswith("the epoch is ignored"))
    mixed = _as_if(epoch_ignored, cases)
    first = next(i for i, (case, got) in enumerate(mixed) if got != grader.sampler_indices(case))
    mixed[first + 1:] = [(case, [-1]) for case, _ in mixed[first + 1:]]
    assert grader._cause(mixed) is None


def test_the_checked_sizes_reach_every_rank_padding_and_a_dropped_tail():
    """Every rank of each world size is checked, and the sizes include ones that pad or drop a tail."""
    for sizes in (grader.ORDERED, grader.SHUFFLED):
        cases = grader._cases(sizes, {})
        for n, world_size in sizes:
            assert {c.rank for c in cases if (c.num_samples, c.world_size) == (n, world_size)} == set(range(world_size))
        assert any(n % world_size for n, world_size in sizes), "no size that needs padding or drops a tail"


def _watched(function):
    from graders.isolation import RunnerStudent

    student = RunnerStudent({"shard_indices": function}, set(), "answer.py")
    return grader.sampler_watched(student, grader._cases([(10, 3)], {"seed": 2}))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the refused call, in the thread
def test_the_sampler_is_switched_off_during_the_check_and_back_afterwards():
    import threading

    def through_a_thread(n, rank, world_size, **options):
        box = []
        thread = threading.Thread(target=lambda: box.append(_sampler(n, rank, world_size, **options)))
        thread.start()
        thread.join()
        return box[0] if box else []

    assert _watched(through_a_thread)["used"] == ["DistributedSampler itself"]
    assert _watched(shard_indices)["used"] == []
    assert _sampler(10, 1, 3, seed=2) == shard_indices(10, 1, 3, seed=2), "the sampler must work again afterwards"


# ==================================================================================================
# The generated domain: each class the specification allows is drawn (500 cases, a fixed seed)
# ==================================================================================================
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(generate=grader.generate_case, count=500, seed=11):
    random.seed(seed)
    return domain.draw(generate, count)


DOMAIN_CLASSES = {
    "a multiple of world_size": lambda c: c.num_samples and c.num_samples % c.world_size == 0 and c.world_size > 1,
    "one more than a multiple": lambda c: c.world_size > 2 and c.num_samples % c.world_size == 1 and c.num_samples > 1,
    "one less than a multiple": lambda c: c.world_size > 2 and c.num_samples % c.world_size == c.world_size - 1,
    "more ranks than samples": lambda c: 0 < c.num_samples < c.world_size,
    "n < world_size < 2n": lambda c: c.num_samples < c.world_size < 2 * c.num_samples,
    "world_size > 2n > 0": lambda c: 0 < 2 * c.num_samples < c.world_size,
    "0 samples": lambda c: c.num_samples == 0,
    "thousands of samples": lambda c: c.num_samples >= 1000,
    "world_size 1": lambda c: c.world_size == 1,
    "world_size above 32": lambda c: c.world_size > 32,
    "the last rank": lambda c: c.world_size > 1 and c.rank == c.world_size - 1,
    "a middle rank": lambda c: 0 < c.rank < c.world_size - 1,
    "every option left to its default": lambda c: c.options == (),
    "every option given": lambda c: len(c.options) == 4,
    "shuffle=True given": lambda c: ("shuffle", True) in c.options,
    "shuffle=False given": lambda c: ("shuffle", False) in c.options,
    "drop_last=True given": lambda c: ("drop_last", True) in c.options,
    "drop_last=True with a tail to drop": lambda c: c.option("drop_last") and c.num_samples % c.world_size,
    "a negative seed": lambda c: c.option("seed") < 0,
    "a seed past 2**62": lambda c: c.option("seed") >= 2**62,
    "a seed past 2**32": lambda c: 2**32 <= c.option("seed") < 2**33,
    "seed 2**31 - 1": lambda c: c.option("seed") == 2**31 - 1,
    "a negative epoch": lambda c: c.option("epoch") < 0,
    "seed + epoch negative": lambda c: c.option("seed") + c.option("epoch") < 0,
    "a large epoch": lambda c: c.option("epoch") > 1000,
    "keywords in another order": lambda c: [k for k, _ in c.options][:2] == ["drop_last", "shuffle"],
}


@pytest.mark.parametrize("name", DOMAIN_CLASSES)
def test_the_generator_draws_each_domain_class(name):
    cases = _drawn()
    assert any(DOMAIN_CLASSES[name](case) for case in cases), name
    assert all(0 <= c.rank < c.world_size and c.num_samples >= 0 for c in cases)
    assert all(-(2**63) <= c.option("seed") + c.option("epoch") < 2**64 for c in cases), "seed + epoch fits a seed"


INVALID_CLASSES = {
    "rank == world_size": lambda c: c.world_size > 0 and c.rank == c.world_size,
    "rank above world_size": lambda c: c.world_size > 0 and c.rank > c.world_size,
    "a negative rank": lambda c: c.world_size > 0 and c.rank < 0,
    "world_size 0 with drop_last=True": lambda c: c.world_size == 0 and c.option("drop_last"),
    "world_size 0 with 0 samples": lambda c: c.world_size == 0 and c.num_samples == 0,
    "a negative world_size": lambda c: c.world_size < 0,
    "an invalid call with every option given": lambda c: len(c.options) == 4,
}


@pytest.mark.parametrize("name", INVALID_CLASSES)
def test_the_invalid_generator_draws_each_class_and_only_invalid_calls(name):
    cases = _drawn(grader.generate_invalid_case)
    assert any(INVALID_CLASSES[name](case) for case in cases), name
    assert not any(0 <= c.rank < c.world_size for c in cases)


def test_the_generated_cases_are_seeded_by_the_check_and_smallest_first():
    assert _drawn(count=50) == _drawn(count=50)
    assert _drawn(count=50) != _drawn(count=50, seed=12)
    random.seed(3)
    cases = domain.draw(grader.generate_case, 100, size=grader.case_size)
    assert [grader.case_size(c) for c in cases] == sorted(grader.case_size(c) for c in cases)


def test_the_reference_is_the_sampler_on_the_generated_domain():
    for case in _drawn(count=300):
        got = shard_indices(case.num_samples, case.rank, case.world_size, **case.kwargs)
        assert got == grader.sampler_indices(case), case


def test_a_failure_reports_the_smallest_failing_case_and_no_cause_that_only_some_cases_fit():
    cases = sorted(_drawn(count=200), key=grader.case_size)
    observed = [{"kind": "ints", "values": grader.sampler_indices(c)} for c in cases]
    bad = [i for i, c in enumerate(cases) if c.num_samples >= 50][:3]  # wrong on a few larger cases only
    for i in bad:
        observed[i] = {"kind": "ints", "values": observed[i]["values"][::-1] + [0]}
    with pytest.raises(CheckFailed) as failure:
        grader._expect_cases(cases, observed)
    assert cases[bad[0]].call in str(failure.value)
    assert "3 of the 200 cases tried failed" in str(failure.value)
    assert "likely cause" not in str(failure.value)


def _grade(tmp_path, source: str, check: str):
    import graders

    path = tmp_path / "answer.py"
    path.write_text(source)
    return graders.check_file("shard_indices", str(path), [check], device="cpu").results[0]


def test_the_generated_check_rejects_a_bug_the_fixed_cases_miss_and_shrinks_it(tmp_path):
    """Wrong only when world_size / 2 < num_samples < world_size (no fixed case has that relation): the failure
    names a case of that relation, shrunk to a small one."""
    source = (
        "from solutions.ch08_ddp import shard_indices as right\n"
        "def shard_indices(n, rank, world_size, **options):\n"
        "    got = right(n, rank, world_size, **options)\n"
        "    return got[::-1] + [0] if n < world_size < 2 * n else got\n"
    )
    source = source.replace("from solutions.ch08_ddp import shard_indices as right", _REFERENCE_COPY)
    result = _grade(tmp_path, source, "more_ranks_than_samples")
    assert not result.passed
    call = next(line for line in result.message.splitlines() if "input:" in line)
    n, rank, world_size = (int(v) for v in call.split("shard_indices(")[1].split(")")[0].split(",")[:3])
    assert n < world_size < 2 * n and world_size <= 8, call  # shrunk to a small world


_REFERENCE_COPY = """import math
import torch
def right(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("rank")
    tail = drop_last and num_samples % world_size
    per_rank = num_samples // world_size if tail else math.ceil(num_samples / world_size)
    total = per_rank * world_size
    generator = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(num_samples, generator=generator).tolist() if shuffle else list(range(num_samples))
    if order:
        order = (order * math.ceil(total / len(order)))[:total]
    return order[rank:total:world_size]"""
