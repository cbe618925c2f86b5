"""graders/domain.py: generated cases are seeded by the check's seed, counted, scaled and salted only on request, and
the smallest failing case is the one reported."""

from __future__ import annotations

import random

from graders import domain


def _generate(generator: random.Random) -> tuple[int, int]:
    return domain.small_int(generator, 0, 50), generator.randint(-3, 3)


def _draw_after_seeding(seed: int, count: int = 40, **options) -> list:
    random.seed(seed)  # what judge.run_checks does before each check
    return domain.draw(_generate, count, **options)


def test_the_same_check_seed_draws_the_same_cases_and_another_seed_others():
    assert _draw_after_seeding(7) == _draw_after_seeding(7)
    assert _draw_after_seeding(7) != _draw_after_seeding(8)


def test_draws_are_counted_and_scaled_only_through_the_environment(monkeypatch):
    monkeypatch.delenv(domain.SCALE_ENV, raising=False)
    before = domain.DRAWN
    assert len(_draw_after_seeding(1, 30)) == 30
    monkeypatch.setenv(domain.SCALE_ENV, "4")
    assert len(_draw_after_seeding(1, 30)) == 120
    assert domain.DRAWN - before == 150
    domain.count(5)
    assert domain.DRAWN - before == 155


def test_a_salt_draws_other_cases_than_the_graded_ones(monkeypatch):
    graded = _draw_after_seeding(3)
    monkeypatch.setenv(domain.SALT_ENV, "equivalence-1")
    assert _draw_after_seeding(3) != graded


def test_fixed_cases_come_first_and_generated_ones_smallest_first():
    cases = _draw_after_seeding(5, 60, fixed=[(99, 0)], size=lambda c: c[0])
    assert cases[0] == (99, 0)
    sizes = [c[0] for c in cases[1:]]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_small_ints_reach_both_ends_of_their_range():
    generator = random.Random(0)
    values = [domain.small_int(generator, 0, 9) for _ in range(400)]
    assert min(values) == 0 and max(values) == 9
    assert values.count(0) > 400 / 10 * 1.5  # the ends come more often than the middle


def test_smallest_is_the_least_failing_case_and_none_when_nothing_failed():
    cases = [5, 1, 9, 3]
    assert domain.smallest(cases, [True, False, True, True], size=lambda c: c) == 3
    assert domain.smallest(cases, [False] * 4, size=lambda c: c) is None


def test_shrinking_walks_down_to_a_case_that_still_fails_with_one_evaluation_per_round():
    calls = []

    def fails(batch: list[int]) -> list[bool]:
        calls.append(batch)
        return [value >= 13 for value in batch]  # a "bug" that shows from 13 on

    assert domain.shrink(1000, lambda n: [n // 2, n - 1], fails, rounds=64) == 13
    assert all(isinstance(batch, list) for batch in calls)
    assert domain.shrink(12, lambda n: [n // 2, n - 1], fails) == 12  # nothing smaller fails: kept as it is
