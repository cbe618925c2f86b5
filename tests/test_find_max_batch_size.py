"""find_max_batch_size: the reference against a brute force and the specification's search, the grader's
fake trainer, and (on a GPU) one real search against a real model under a memory cap."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.ch05_devices import find_max_batch_size as grader
from solutions import ch05_devices as reference
from tests.conftest import _cuda_param


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(0, 3000), st.integers(0, 3200))
def test_reference_finds_the_largest_within_the_bound(start, extra, threshold):
    limit = start + extra
    trainer = grader.FakeTrainer(threshold)
    if threshold < start:
        with pytest.raises(RuntimeError) as raised:
            reference.find_max_batch_size(trainer, start=start, limit=limit)
        assert raised.type is RuntimeError and raised.value.__context__ is None and raised.value.__cause__ is None
        assert trainer.calls == [start]
        return
    got = reference.find_max_batch_size(trainer, start=start, limit=limit)
    assert got == max(b for b in range(start, limit + 1) if b <= threshold)  # brute force
    assert trainer.calls == grader.probes(start, limit, threshold)[0]  # the specification's order
    assert len(trainer.calls) <= grader.call_bound(start, limit) and len(set(trainer.calls)) == len(trainer.calls)
    assert trainer.alive() == 0 and not trainer.alive_at_call  # every failed step's tensor was freed


def test_the_grid_meets_the_bound_with_the_specs_search():
    for run in grader._grid():
        start, limit = run.bounds
        tried, found = grader.probes(start, limit, run.threshold)
        assert found == min(run.threshold, limit)
        assert len(tried) <= grader.call_bound(start, limit)


def test_a_kept_exception_keeps_the_failed_steps_tensor_alive():
    """What releases_the_error relies on: the traceback holds the frame, and the frame the tensor."""
    trainer = grader.FakeTrainer(threshold=0)
    kept = None
    try:
        trainer(5)
    except torch.OutOfMemoryError as exc:
        kept = exc
    assert trainer.alive() == 1
    del kept
    assert trainer.alive() == 0


def test_the_trainer_stops_a_search_that_never_ends():
    trainer = grader.FakeTrainer(threshold=10)
    with pytest.raises(grader.EndlessSearch):
        while True:
            trainer(0)


@pytest.mark.parametrize("device", [_cuda_param()], indirect=True)  # a real out-of-memory error needs a GPU
def test_a_real_search_on_a_gpu_under_a_memory_cap(device):
    """On a GPU: a real model's training step, with this process capped to a slice of the GPU's memory."""
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, 512 * 2**20 / total))  # about 512 MiB
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def try_batch(b):
        x = torch.randn(b, 1024, device="cuda")
        model(x).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    try:
        found = reference.find_max_batch_size(try_batch, start=64, limit=2**20)
        assert 64 <= found < 2**20
        # The size found fits, after the search has released everything. The allocator's cache is emptied first:
        # on an H100 the rerun of the largest size hit the cap with 171 MiB cached in blocks of the wrong sizes.
        # A search that still held tensors would fail here all the same (emptying frees no live tensor).
        torch.cuda.empty_cache()
        try_batch(found)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()


# -- the generated domain (issue 32): each class the specification allows is drawn ---------------------------
def _drawn(generate, count=500, seed=0):
    import random

    from graders import domain

    random.seed(seed)
    return domain.draw(generate, count)


def test_the_generator_draws_every_relation_of_start_limit_and_threshold():
    runs = _drawn(grader.generate_run)
    bounds = [(r, *r.bounds) for r in runs]
    assert all(1 <= start <= limit and r.threshold >= start for r, start, limit in bounds)  # valid calls only
    assert any(r.start is None for r in runs) and any(r.limit is None for r in runs)  # the defaults left out
    assert any(r.start is not None and r.start > 1 for r in runs)
    assert any(start == limit for _, start, limit in bounds)
    powers = [(start, limit) for _, start, limit in bounds if limit > start and limit % start == 0
              and (limit // start) & (limit // start - 1) == 0]
    assert powers  # limit = start * 2**k: the doubling lands on limit exactly
    assert any(limit - 1 > start and (limit - 1) % start == 0 and ((limit - 1) // start) & ((limit - 1) // start - 1) == 0
               for _, start, limit in bounds)  # one past start * 2**k
    assert any(r.threshold == start for r, start, _ in bounds)
    assert any(r.threshold == limit for r, _, limit in bounds)
    assert any(r.threshold == limit - 1 and limit - 1 > start for r, start, limit in bounds)
    assert any(r.threshold > limit for r, _, limit in bounds)
    assert any(start < r.threshold < limit for r, start, limit in bounds)
    assert any(limit > 2**53 and limit - start > 2**53 for _, start, limit in bounds)  # a float midpoint rounds
    # limit = start * 2**k - 1 with k past 48: math.log2(limit / start) rounds up to k there
    assert any((limit + 1) % start == 0 and (limit + 1) // start >= 2**49
               and ((limit + 1) // start) & ((limit + 1) // start - 1) == 0 for _, start, limit in bounds)
    assert all(limit < grader.LARGEST and r.threshold < grader.LARGEST for r, _, limit in bounds)  # int64 calls


def test_the_generator_draws_cuda_and_every_return_value_of_try_batch():
    runs = _drawn(grader.generate_run)
    assert {True, False} <= {r.cuda for r in runs}
    assert set(grader.RETURNS) == {r.returns for r in runs}  # None, a loss, 0, False, True, a string


def test_the_generator_draws_other_errors_at_every_place_of_the_search():
    runs = _drawn(grader.generate_other_run)
    places = set()
    for run in runs:
        tried, _ = grader.probes(*run.bounds, run.threshold)
        assert run.other[0] in tried
        places.add("first" if run.other[0] == tried[0] else "last" if run.other[0] == tried[-1] else "between")
        places.add("fits" if run.other[0] <= run.threshold else "too large")
    assert places == {"first", "last", "between", "fits", "too large"}
    assert {kind for _, kind in (r.other for r in runs)} == {"runtime", "value", "memory", "oom_text", "key"}


def test_the_generator_draws_invalid_bounds_alone_and_combined():
    runs = _drawn(grader.generate_invalid_run)
    reasons = {grader._invalid_reason(r) for r in runs}
    assert reasons == {"start < 1", "limit < start", "start < 1 and limit < start"}
    assert any(r.threshold >= 10**6 for r in runs)  # every size would fit: only the bounds are wrong
    too_big = _drawn(lambda g: grader.generate_run(g, below_start=True))
    assert all(r.threshold < r.bounds[0] <= r.bounds[1] for r in too_big)
    assert any(r.threshold == r.bounds[0] - 1 for r in too_big) and any(r.threshold == 0 for r in too_big)


def test_the_call_bound_is_exact_near_2_to_the_62():
    """A float quotient rounds limit / start to 1.0 here; the spec's bound is a statement about real numbers."""
    start, limit = 2305843009213693949, 2305843009213694046
    assert grader.call_bound(start, limit) == 1 + 7 + 1
    trainer = grader.FakeTrainer(2305843009213694023)
    assert reference.find_max_batch_size(trainer, start=start, limit=limit) == 2305843009213694023
    assert len(trainer.calls) <= grader.call_bound(start, limit)


def test_a_generated_check_rejects_a_float_midpoint_and_shows_the_smallest_failing_case():
    import graders
    from tests.submissions import ROOT

    path = ROOT / "ch05_devices" / "find_max_batch_size" / "bug_float_midpoint.py"
    report = graders.check_file("find_max_batch_size", str(path), ["probes_in_order"], device="cpu")
    (result,) = report.results
    assert not result.passed
    assert "a generated case" in result.message and "this is the smallest" in result.message
    limit = int(result.message.split("limit=")[1].split(")")[0])
    assert limit > 2**53  # below that a float midpoint is exact: the case shown is one that can fail
    assert "likely cause" not in result.message or "rounded up" not in result.message
