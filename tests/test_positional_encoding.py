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


# -- the generated domain (issue 32): each class the specification allows is drawn ---------------------------
def _drawn(generate, count=500, seed=0):
    import random

    from graders import domain

    random.seed(seed)
    return domain.draw(generate, count)


def test_the_generator_draws_every_kind_of_module():
    configs = _drawn(grader.generate_config)
    assert all(c.dim >= 2 and c.dim % 2 == 0 and c.max_len >= 1 for c in configs)  # valid modules only
    assert any(c.dim == 2 for c in configs) and any(c.dim > 256 for c in configs)
    assert any(c.max_len == 1 for c in configs) and any(c.max_len > 1000 for c in configs)
    assert any(c.max_len % 2 for c in configs)
    assert {c.how for c in configs} == {"positional", "keyword", "default"}
    assert all(c.max_len == 512 for c in configs if c.how == "default")
    assert set(grader.GEN_CONVERSIONS) == {c.convert for c in configs}  # as built, .double(), .half(), ...
    assert {c.mode for c in configs} == {"train", "eval"}
    assert any(len(c.inputs) > 1 for c in configs)


def test_the_generator_draws_every_kind_of_input():
    configs = _drawn(grader.generate_config)
    inputs = [(c, spec) for c in configs for spec in c.inputs]
    assert all(0 <= spec.seq <= c.max_len for c, spec in inputs)
    assert any(spec.seq == 0 for _, spec in inputs) and any(spec.seq == 1 for _, spec in inputs)
    assert any(spec.seq == c.max_len > 1 for c, spec in inputs)
    assert any(spec.batch == 0 for _, spec in inputs) and any(spec.batch >= 3 for _, spec in inputs)
    assert set(grader.GEN_DTYPES) == {spec.dtype for _, spec in inputs}
    assert set(grader.GEN_LAYOUTS) == {spec.layout for _, spec in inputs}
    assert any(spec.requires_grad for _, spec in inputs)
    assert any(spec.dtype == "float16" and spec.scale >= 6e4 for _, spec in inputs)  # near float16's largest


def test_the_inputs_have_the_layouts_they_claim():
    dim = 4
    for layout in grader.GEN_LAYOUTS:
        x = grader.make_input(grader.GenInput(3, 5, "float32", layout), dim, seed=1)
        assert x.shape == (3, 5, dim)
        assert x.is_contiguous() == (layout in ("contiguous", "offset")), layout
    assert grader.make_input(grader.GenInput(3, 5, "float32", "offset"), dim, 1).storage_offset() > 0
    assert grader.make_input(grader.GenInput(3, 5, "float32", "expanded"), dim, 1).stride()[0] == 0
    assert torch.equal(grader.make_input(grader.GenInput(2, 3, "bfloat16"), dim, 7),
                       grader.make_input(grader.GenInput(2, 3, "bfloat16"), dim, 7))  # the same seed, the same x


def test_the_generator_draws_invalid_arguments_alone_and_combined():
    calls = _drawn(grader.generate_bad_arguments)
    whys = [why for _, _, why in calls]
    assert any("odd" in w and "max_len" in w for w in whys) and any("< 2" in w and "max_len" in w for w in whys)
    assert any(args[0] == 1 for args, _, _ in calls)  # odd and < 2 at once
    assert any(args[0] < 0 and args[0] % 2 == 0 for args, _, _ in calls)  # negative even
    assert any("max_len" in kwargs for _, kwargs, _ in calls) and any(len(args) == 1 and not kwargs
                                                                      for args, kwargs, _ in calls)
    for args, kwargs, _ in calls:
        try:
            reference.PositionalEncoding(*args, **kwargs)
        except ValueError:
            continue
        raise AssertionError(f"the reference accepted {args} {kwargs}")


def test_the_generator_draws_invalid_inputs_alone_and_combined():
    drawn = _drawn(grader.generate_bad_input)
    assert {spec.dims for _, _, spec, _ in drawn} == {0, 1, 2, 3, 4, 5}
    assert any(" and " in why for _, _, _, why in drawn)  # several reasons at once
    assert any(spec.dims == 3 and spec.last is not None and spec.seq > max_len for _, max_len, spec, _ in drawn)
    for n, (dim, max_len, spec, why) in enumerate(drawn):
        x = grader.make_input(spec, dim, n)
        assert x.dim() == spec.dims
        module = reference.PositionalEncoding(dim, max_len)
        try:
            module(x)
        except ValueError:
            continue
        raise AssertionError(f"the reference accepted {spec} ({why})")


def test_a_generated_check_rejects_an_empty_batch_refused_and_shows_the_smallest_case():
    import graders
    from tests.submissions import ROOT

    path = ROOT / "ch05_devices" / "positional_encoding" / "bug_rejects_empty_batch.py"
    report = graders.check_file("positional_encoding", str(path), ["forward_adds_encoding",
                                                                   "generated_modules_and_inputs"], device="cpu")
    by_name = {r.name: r for r in report.results}
    assert by_name["forward_adds_encoding"].passed  # the hand-written inputs never have an empty batch
    message = by_name["generated_modules_and_inputs"].message
    assert not by_name["generated_modules_and_inputs"].passed and "the smallest failing one" in message
    assert "PositionalEncoding(2, 1), then forward(x of shape (0, 0, 2), float32)" in message  # shrunk all the way
