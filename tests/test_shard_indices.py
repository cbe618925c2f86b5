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
               {"shuffle": False, "drop_last": True}]
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
