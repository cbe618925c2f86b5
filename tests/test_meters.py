"""coursekit.meters: the saved-tensor meter counts what autograd really keeps, and memory_in_use moves with
allocations. The expected byte counts are worked out by hand from the shapes (float32: 4 bytes a number)."""

from __future__ import annotations

import os

import pytest
import torch

from coursekit.meters import SavedTensorMeter, memory_in_use

N = 1000  # float32 numbers: 4000 bytes a tensor


def _leaves(count: int) -> list[torch.Tensor]:
    return [torch.rand(N, requires_grad=True) for _ in range(count)]


def test_a_product_saves_both_operands():
    # d(x*w)/dx needs w and d(x*w)/dw needs x: MulBackward0 saves both, 2 x 4000 bytes.
    x, w = _leaves(2)
    with SavedTensorMeter() as meter:
        product = x * w
    assert meter.held_bytes() == 8000
    assert meter.held_kib() == pytest.approx(8000 / 1024)
    assert sorted((s.shape, s.nbytes, s.saves, s.excluded) for s in meter.breakdown()) == [((N,), 4000, 1, False)] * 2
    del product  # the graph goes with the last tensor that leads to it
    assert meter.held_bytes() == 0


def test_backward_frees_what_was_saved():
    x, w = _leaves(2)
    with SavedTensorMeter() as meter:
        loss = (x * w).sum()  # SumBackward0 saves no tensor (only the input's size)
        assert meter.held_bytes() == 8000
        loss.backward()
    assert meter.held_bytes() == 0
    assert torch.equal(x.grad, w.detach())  # the meter hands autograd the very tensors it saved


def test_excluded_tensors_are_listed_but_not_counted():
    x, w = _leaves(2)
    with SavedTensorMeter([w]) as meter:
        product = x * w
    assert meter.held_bytes() == 4000
    assert sorted(s.excluded for s in meter.breakdown()) == [False, True]
    module = torch.nn.Linear(N, 1, bias=False)  # a module excludes its parameters
    with SavedTensorMeter(module) as meter:
        out = module(x.unsqueeze(0))  # saves the input (4000 bytes) and the weight (excluded)
    assert meter.held_bytes() == 4000
    del product, out


def test_a_storage_saved_twice_counts_once():
    # relu saves its output h; h * w saves h again (and w): the distinct storages are h and w.
    x, w = _leaves(2)
    with SavedTensorMeter() as meter:
        out = torch.relu(x) * w
    assert meter.held_bytes() == 8000
    assert sorted(s.saves for s in meter.breakdown()) == [1, 2]
    del out


def test_a_saved_view_counts_its_whole_storage():
    # A view keeps its whole storage alive: saving x[:10] holds all 4000 bytes of x.
    x, w = torch.rand(N, requires_grad=True), torch.rand(10)
    with SavedTensorMeter() as meter:
        out = x[:10] * w  # saves w (for x's gradient) only: w does not require grad, x[:10] is not needed
        out2 = x[:10].exp()  # saves its output (40 bytes, a new storage)
        out3 = x[:10] * x[:10].detach()  # saves the detached view of x: the whole 4000-byte storage
    assert meter.held_bytes() == 40 + 40 + 4000
    del out, out2, out3


def test_nothing_is_counted_under_no_grad():
    x, w = _leaves(2)
    with SavedTensorMeter() as meter, torch.no_grad():
        product = x * w
    assert meter.held_bytes() == 0 and meter.breakdown() == [] and meter.saved_tensors() == []
    assert product.grad_fn is None


def test_only_what_is_saved_while_active_is_counted():
    x, w = _leaves(2)
    before = x * w  # saved before the meter starts: not seen
    with SavedTensorMeter() as meter:
        pass
    after = x * w  # saved after it stopped: not seen either
    assert meter.held_bytes() == 0
    del before, after


def test_an_in_place_edit_of_a_saved_tensor_still_raises():
    # While saved-tensor hooks are active autograd skips its version check; the meter makes it instead.
    x = torch.rand(N, requires_grad=True)
    with SavedTensorMeter():
        e = x.exp()  # ExpBackward0 saves its output e
    e.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_memory_in_use_grows_with_a_large_cpu_tensor():
    before = memory_in_use()
    assert isinstance(before, int) and before > 0
    big = torch.ones(16 * 2**20)  # 64 MiB, written (torch.ones), so its pages are resident
    grown = memory_in_use("cpu") - before
    assert isinstance(grown, int) and grown >= 48 * 2**20, grown
    del big


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() and os.environ.get("COURSE_DEVICE") != "cuda",
                    reason="no CUDA GPU on this machine (set COURSE_DEVICE=cuda on a GPU machine)")
def test_memory_in_use_counts_cuda_allocations():
    device = torch.device("cuda")
    before = memory_in_use(device)
    big = torch.ones(16 * 2**20, device=device)  # 64 MiB
    assert memory_in_use(device) - before == big.untyped_storage().nbytes()
    del big
    assert memory_in_use(device) == before
