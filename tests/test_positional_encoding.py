"""positional_encoding: the reference against the formula in float64, and the grader's watches (a tensor made
on the CPU inside forward, a host synchronisation) on a machine without a GPU."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from graders.ch05_devices import positional_encoding as grader
from solutions import ch05_devices as reference


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64).map(lambda k: 2 * k), st.integers(1, 3000))
def test_reference_table_is_within_the_tolerance(dim, max_len):
    module = reference.PositionalEncoding(dim, max_len)
    assert not list(module.parameters()) and not module.state_dict()
    error = (module.pe.double() - grader.encoding(dim, max_len)).abs().max().item()
    assert error <= grader.tolerance(max_len)


def test_the_formula_itself():
    table = grader.encoding(4, 3)
    p, i = 2, 1  # column 2i + 1 = 3
    assert table[p, 2 * i].item() == torch.sin(torch.tensor(p / 10000 ** (2 * i / 4), dtype=torch.float64)).item()
    assert table[p, 2 * i + 1].item() == torch.cos(torch.tensor(p / 10000 ** (2 * i / 4), dtype=torch.float64)).item()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 4), st.integers(0, 20), st.sampled_from([torch.float32, torch.float64, torch.float16,
                                                                 torch.bfloat16]))
def test_reference_forward_keeps_dtype_and_adds_the_table(batch, seq, dtype):
    module = reference.PositionalEncoding(6, 20)
    x = torch.randn(batch, seq, 6).to(dtype)
    y = module(x)
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y, x + module.pe[:seq].to(dtype))


class CpuInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pe", torch.zeros(8, 4), persistent=False)

    def forward(self, x):
        return x + self.pe[: x.shape[1]] * torch.tensor(1.0)


def test_the_device_watch_sees_a_cpu_scalar_made_inside_a_meta_forward():
    module = CpuInForward().to("meta")
    watch = grader._DeviceWatch("meta")
    with watch:
        module(torch.zeros(2, 3, 4, device="meta"))  # meta lets the 0-dim CPU tensor through silently
    assert any("cpu" in stray for stray in watch.strays)
    right = reference.PositionalEncoding(4, 8).to("meta")
    quiet = grader._DeviceWatch("meta")
    with quiet:
        right(torch.zeros(2, 3, 4, device="meta"))
    assert quiet.strays == []


def test_the_sync_watch_sees_item_and_bool_but_not_shapes():
    watch = grader._SyncWatch()
    x = torch.ones(2, 3)
    with watch:
        _ = x.shape[1] > 2 and x.dim() == 2  # Python ints: no sync
    assert watch.syncs == []
    with watch:
        _ = x.sum().item()
        if x.any():
            pass
    assert watch.syncs == [".item()", "bool(tensor) (an if or an and/or on a tensor)"]


def test_reference_on_the_device(device):
    module = reference.PositionalEncoding(8, 16).to(device)
    x = torch.randn(2, 5, 8).to(device)
    y = module(x)
    assert y.device.type == device
    assert torch.allclose(y.cpu().double(), x.cpu().double() + grader.encoding(8, 16)[:5], atol=1e-6)
