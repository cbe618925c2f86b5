"""Chapter 04 (data): references and graders for pad_collate, range_stream and lr_range_test."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from solutions import ch04_data as reference


# -- the references meet their specifications on random inputs -------------------------------------
sequences = st.lists(st.lists(st.integers(0, 20), max_size=8), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(sequences, st.data())
def test_reference_pad_collate_round_trip(rows, data):
    labels = data.draw(st.lists(st.integers(0, 9), min_size=len(rows), max_size=len(rows)))
    batch = [(torch.tensor(row, dtype=torch.long), label) for row, label in zip(rows, labels)]
    padded, lengths, labels_out = reference.pad_collate(batch)
    width = max(len(row) for row in rows)
    assert padded.dtype == lengths.dtype == labels_out.dtype == torch.long
    assert padded.shape == (len(rows), width)
    assert lengths.tolist() == [len(row) for row in rows] and labels_out.tolist() == labels
    for i, row in enumerate(rows):  # unpadding with the lengths gives the inputs back; the rest is 0
        assert padded[i, : lengths[i]].tolist() == row
        assert not padded[i, lengths[i]:].any()


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@settings(max_examples=8, deadline=None)
@given(start=st.integers(-5, 5), size=st.integers(0, 9), num_workers=st.integers(0, 3),
       batch_size=st.sampled_from([None, 1, 3]))
def test_reference_range_stream_covers_the_range(start, size, num_workers, batch_size):
    stream = reference.RangeStream(start, start + size)
    loader = DataLoader(stream, batch_size=batch_size, num_workers=num_workers,
                        multiprocessing_context="fork" if num_workers else None)
    values = []
    for item in loader:
        values.extend(item.tolist() if isinstance(item, torch.Tensor) else [item])
    assert sorted(values) == list(range(start, start + size))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=2, max_size=40), st.integers(0, 12), st.integers(0, 12))
def test_reference_suggest_lr_matches_numpy_gradient(losses, skip_start, skip_end):
    lrs = [1e-6 * 10 ** (i / 4) for i in range(len(losses))]
    kept = losses[skip_start:max(len(losses) - skip_end, 0)]
    if len(kept) < 2:
        with pytest.raises(ValueError):
            reference.suggest_lr(lrs, losses, skip_start=skip_start, skip_end=skip_end)
        return
    expected = lrs[skip_start + int(np.argmin(np.gradient(np.array(kept))))]
    assert reference.suggest_lr(lrs, losses, skip_start=skip_start, skip_end=skip_end) == expected


@settings(max_examples=10, deadline=None)
@given(start=st.floats(1e-6, 1e-2), decades=st.floats(0.5, 3.0), num_iter=st.integers(2, 12),
       mode=st.sampled_from(["train", "eval", "mixed"]))
def test_reference_lr_range_test_sweeps_and_restores(start, decades, num_iter, mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 2))
    optimizer = torch.optim.Adam([{"params": model[0].parameters()},
                                  {"params": [*model[1].parameters(), *model[3].parameters()], "lr": 0.03}])
    loader = DataLoader(TensorDataset(torch.randn(12, 3), torch.randint(0, 2, (12,))), batch_size=4)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(4, 3)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()  # the optimizer has state
    model.train(mode != "eval")
    if mode == "mixed":
        model[1].eval()
    before = copy.deepcopy(model.state_dict())
    before_optimizer = copy.deepcopy(optimizer.state_dict())
    before_modes = [m.training for m in model.modules()]
    end = start * 10**decades
    lrs, losses = reference.lr_range_test(model, optimizer, nn.CrossEntropyLoss(), loader, start_lr=start,
                                          end_lr=end, num_iter=num_iter, diverge_threshold=1e9)
    assert len(lrs) == len(losses) == num_iter
    assert lrs[0] == start and math.isclose(lrs[-1], end, rel_tol=1e-12)
    ratios = [b / a for a, b in zip(lrs, lrs[1:])]
    assert all(math.isclose(r, ratios[0], rel_tol=1e-9) for r in ratios)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    after = optimizer.state_dict()
    assert [g["lr"] for g in after["param_groups"]] == [g["lr"] for g in before_optimizer["param_groups"]]
    for index, state in before_optimizer["state"].items():
        assert all(torch.equal(after["state"][index][k], v) for k, v in state.items())
    assert [m.training for m in model.modules()] == before_modes


@pytest.mark.parametrize("kwargs", [dict(start_lr=0.0), dict(start_lr=1.0, end_lr=1.0), dict(num_iter=1)])
def test_reference_lr_range_test_rejects_bad_arguments(kwargs):
    model = nn.Linear(2, 1)
    with pytest.raises(ValueError):
        reference.lr_range_test(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.MSELoss(), [], **kwargs)
