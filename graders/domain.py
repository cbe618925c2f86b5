"""Generated cases drawn from an exercise's input domain, in the judge.

A check draws its cases with :func:`draw` from a generator written from the specification's sentences (every
type, size, layout, dtype, option, state and combination it allows), sends them to the runner in one scenario
call, compares what came back with the reference, and reports the smallest failing case (:func:`smallest`,
:func:`shrink`). Everything here runs in the judge, seeded from the check's seed (``judge.seed_for``, which
``judge.run_checks`` gives ``random`` before each check), so a submission always gets the same verdict.

Two environment variables exist for ``benchmarks/mutation.py`` only (a student's runner cannot reach the judge's
environment): ``COURSE_DOMAIN_SCALE`` multiplies every count (the benchmark draws at least 10 000 cases before it
calls a surviving mutant equivalent) and ``COURSE_DOMAIN_SALT`` draws other cases than the graded ones.
:data:`DRAWN` counts the cases drawn in this process.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

Case = TypeVar("Case")

SCALE_ENV = "COURSE_DOMAIN_SCALE"
SALT_ENV = "COURSE_DOMAIN_SALT"
DRAWN = 0  # cases drawn in this process (the mutation benchmark reads it)


def rng() -> random.Random:
    """A generator of the check's own, seeded from ``random`` (seeded with the check's seed by the judge)."""
    return random.Random(f"{random.getrandbits(64)}/{os.environ.get(SALT_ENV, '')}")


def scaled(count: int) -> int:
    """``count`` cases, times ``$COURSE_DOMAIN_SCALE`` (1 when graded)."""
    return max(1, round(count * float(os.environ.get(SCALE_ENV, "1") or 1)))


def draw(generate: Callable[[random.Random], Case], count: int, *, size: Callable[[Case], Any] | None = None,
         fixed: Iterable[Case] = (), generator: random.Random | None = None) -> list[Case]:
    """``fixed`` cases (the hand-written ones, kept first) and ``count`` generated ones (scaled), smallest first
    when ``size`` is given, so that the first failure a check reports is already a small one."""
    global DRAWN
    source = generator or rng()
    drawn = [generate(source) for _ in range(scaled(count))]
    DRAWN += len(drawn)
    if size is not None:
        drawn.sort(key=size)
    return [*fixed, *drawn]


def count(extra: int) -> None:
    """Count ``extra`` cases a check built itself (nested loops over a generated configuration)."""
    global DRAWN
    DRAWN += extra


def smallest(cases: Sequence[Case], failing: Sequence[bool], size: Callable[[Case], Any]) -> Case | None:
    """The smallest case (by ``size``) among those that failed, or None when none did."""
    failed = [case for case, bad in zip(cases, failing) if bad]
    return min(failed, key=size) if failed else None


def shrink(case: Case, candidates: Callable[[Case], Iterable[Case]], fails: Callable[[list[Case]], list[bool]],
           *, rounds: int = 12) -> Case:
    """Greedy shrinking: while one of ``candidates(case)`` (smaller variants) still fails, move to the first that
    does. ``fails`` evaluates a batch of candidates at once (one scenario call per round)."""
    for _ in range(rounds):
        options = [c for c in candidates(case) if c != case]
        if not options:
            return case
        verdicts = fails(options)
        better = next((c for c, bad in zip(options, verdicts) if bad), None)
        if better is None:
            return case
        case = better
    return case


def pick(generator: random.Random, options: Sequence[Any], weights: Sequence[float] | None = None) -> Any:
    return generator.choices(list(options), weights=weights)[0] if weights else generator.choice(list(options))


def small_int(generator: random.Random, low: int = 0, high: int = 8, *, edge: float = 0.25) -> int:
    """An int in [low, high], its ends drawn more often (``edge`` of the time): sizes 0 and 1 are the usual misses."""
    if generator.random() < edge:
        return generator.choice([low, high])
    return generator.randint(low, high)
