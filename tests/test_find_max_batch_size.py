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
