"""PositionalEncoding(dim, max_len=512): adds the sinusoidal encoding, kept in a non-persistent buffer ``pe``.

The student's module lives only in the runner. Scenarios build it, read its buffer, run ``forward`` on inputs
the judge made (any batch and length, four dtypes, non-contiguous), move it with ``.to()`` / ``.double()``,
and watch ``forward`` twice: a ``TorchFunctionMode`` records host synchronisations (``.item()``, ``.tolist()``,
printing, ``bool(t)``, ...), and a ``TorchDispatchMode`` records every operation's tensors while module and
input sit on the ``meta`` device and then on a CUDA device faked by ``FakeTensorMode`` (so an answer cannot
special-case meta), so a tensor made on the CPU inside ``forward`` is seen on a machine without a GPU. The
judge computes the encoding in float64 from the formula and compares.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from graders import domain
from graders.ch03_modules.glu import Live, call_text, observe, observing
from graders.compare import difference, dtype_name, show
from graders.isolation import StudentRaised
from graders.outcomes import CheckFailed, StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import ErrorCase, Submission, expect_errors

POSITIONAL_ENCODING = exercise("positional_encoding", chapter="05_devices", names=["PositionalEncoding"],
                               warm_compiler_stack=True)  # FakeTensorMode

# What made a stray tensor, in the words the student wrote (torch.tensor(...) reaches dispatch as lift_fresh).
MADE_BY = {"lift_fresh": "torch.tensor(...)", "scalar_tensor": "torch.scalar_tensor(...)", "arange": "torch.arange(...)",
           "zeros": "torch.zeros(...)", "ones": "torch.ones(...)", "full": "torch.full(...)", "empty": "torch.empty(...)",
           "randn": "torch.randn(...)", "rand": "torch.rand(...)", "linspace": "torch.linspace(...)"}
FAKE_DATA_OPS = frozenset({"lift_fresh", "device", "_to_copy"})
SYNC_METHODS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__", "__complex__",
                "__format__", "__repr__", "__str__")
# How far a result may be from the float64 answer, beyond the encoding's own allowance, by dtype: a few units
# in the last place (an answer may add in float32 and round once, or add in the input's dtype).
DTYPE_RTOL = {torch.float64: 1e-12, torch.float32: 4e-7, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@judge_only
def encoding(dim: int, max_len: int) -> torch.Tensor:
    """The specification's table in float64: pe[p, 2i] = sin(p / 10000 ** (2i / dim)), pe[p, 2i + 1] = cos(...)."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)[None, :]
    angle = p / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / dim)
    table = torch.empty(max_len, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def tolerance(max_len: int) -> float:
    return 1.5e-7 * max_len


def _label(args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> str:
    return call_text("PositionalEncoding", args, kwargs)


def x_text(x: torch.Tensor) -> str:
    layout = "" if x.is_contiguous() else ", not contiguous"
    return f"x of shape {tuple(x.shape)}, {dtype_name(x.dtype)}{layout}"


# ==================================================================================================
# Inside the runner
# ==================================================================================================
def _buffer_facts(module: nn.Module) -> dict[str, Any]:
    value = module.__dict__.get("_buffers", {}).get("pe", None)
    attribute = getattr(module, "pe", None) if "pe" in dir(module) else None
    return {
        "buffers": [name for name, _ in module.named_buffers()],
        "parameters": [name for name, _ in module.named_parameters()],
        "state_dict": list(module.state_dict().keys()),
        "pe_is_buffer": isinstance(value, torch.Tensor),
        "pe_kind": ("missing" if attribute is None and not isinstance(value, torch.Tensor) else
                    "parameter" if isinstance(attribute, nn.Parameter) else
                    "tensor" if isinstance(attribute, torch.Tensor) else type(attribute).__name__),
        "pe": attribute.detach().to("cpu", torch.float64, copy=True)
        if isinstance(attribute, torch.Tensor) and attribute.device.type != "meta" else None,
        "pe_shape": list(attribute.shape) if isinstance(attribute, torch.Tensor) else None,
        "pe_dtype": dtype_name(attribute.dtype) if isinstance(attribute, torch.Tensor) else None,
        "pe_device": str(attribute.device) if isinstance(attribute, torch.Tensor) else None,
    }


@observing
def _read_tables(live: Live, configs: list[tuple[tuple, dict]]) -> None:
    for i, (args, kwargs) in enumerate(configs):
        module = live.build("PositionalEncoding", args, kwargs)
        live.seen[f"{i}.facts"] = _buffer_facts(module)


def _output(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().to("cpu", copy=True) if value.device.type != "meta" else None,
                "dtype": dtype_name(value.dtype), "device": str(value.device), "shape": list(value.shape)}
    return {"other": type(value).__name__}


@observing
def _forwards(live: Live, args: tuple, inputs: list[torch.Tensor], device: str) -> None:
    module = live.build("PositionalEncoding", args)
    live.run(f"{_label(args)}.to({device!r})", module.to, device)
    table = module.__dict__.get("_buffers", {}).get("pe")
    if isinstance(table, torch.Tensor):  # the module's own table, to judge forward exactly against it
        live.seen["pe"] = table.detach().to("cpu", copy=True)
    for i, x in enumerate(inputs):
        x = x.to(device)
        before = x.detach().clone()
        y = live.run(f"forward({x_text(x)})", module, x)
        live.seen[f"{i}.out"] = _output(y)
        live.seen[f"{i}.x_changed"] = not torch.equal(before, x.detach())


@observing
def _moves(live: Live, args: tuple, device: str, x: torch.Tensor) -> None:
    module = live.build("PositionalEncoding", args)
    live.seen["built"] = _buffer_facts(module)
    live.run(f"{_label(args)}.double()", module.double)
    live.seen["double"] = _buffer_facts(module)
    # On the CPU, where the module is: with x on a GPU every answer, the reference too, failed here (seen on an
    # H100); following .to(device) is judged just below, on a module of its own.
    live.seen["double_out"] = _output(live.run(f"forward({x_text(x)}) after .double()", module, x))
    live.run(f"{_label(args)}.to('meta')", module.to, "meta")
    live.seen["meta"] = _buffer_facts(module)
    if device != "cpu":
        moved = live.build("PositionalEncoding", args)
        live.run(f"{_label(args)}.to({device!r})", moved.to, device)
        live.seen["device"] = _buffer_facts(moved)


class _DeviceWatch(TorchDispatchMode):
    """Every operation that takes or makes a tensor on another device than ``device``."""

    def __init__(self, device: str, ignored: frozenset = frozenset()) -> None:
        super().__init__()
        self.device = device
        self.ignored = ignored
        self.strays: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        taken = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        self._note(func, taken, "took")
        out = func(*args, **kwargs)
        self._note(func, [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)], "made")
        return out

    def _note(self, func, tensors: list[torch.Tensor], verb: str) -> None:
        op = func.__name__.split(".")[0]
        if op in self.ignored or (op == "lift_fresh" and verb == "took"):
            return  # torch.tensor(...) lifts the CPU tensor it has just made: reported once, as made
        for t in tensors:
            if t.device.type != self.device:
                shape = "0-dim" if t.dim() == 0 else f"{tuple(t.shape)}"
                text = (f"{MADE_BY.get(op, f'an operation ({op})')} made a {shape} tensor on {t.device.type}"
                        if verb == "made" else f"an operation ({op}) used a {shape} tensor on {t.device.type}")
                if text not in self.strays:
                    self.strays.append(text)


@observing
def _watch_devices(live: Live, args: tuple, x: torch.Tensor, device: str) -> None:
    """forward with module and x on ``device`` ("fake-cuda": a CUDA device faked by FakeTensorMode, which
    exists on any machine), every operation's tensors watched."""
    module = live.build("PositionalEncoding", args)
    fake = device == "fake-cuda"
    target = "cuda" if fake else device
    with FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext():
        live.run(f"{_label(args)}.to({target!r})", module.to, target)
        # Under FakeTensorMode, torch.tensor(data, device=x.device) builds its data on the CPU and copies it
        # over, as CUDA itself does: that is not the answer's stray tensor (meta shows the ones that are).
        watch = _DeviceWatch(torch.device(target).type, FAKE_DATA_OPS if fake else frozenset())
        x = x.to(target)
        try:
            with watch:
                y = live.run(f"forward({x_text(x)}) with module and x on {device}", module, x)
            live.seen["out"] = _output(y) if not fake else {"device": str(y.device)} if isinstance(y, torch.Tensor) \
                else {"other": type(y).__name__}
        finally:
            live.seen["strays"] = watch.strays


class _SyncWatch(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.syncs: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in SYNC_METHODS and args and isinstance(args[0], torch.Tensor):
            text = f".{name}()" if not name.startswith("__") else {
                "__bool__": "bool(tensor) (an if or an and/or on a tensor)", "__int__": "int(tensor)",
                "__float__": "float(tensor)", "__index__": "a tensor used as an index or a slice bound",
                "__complex__": "complex(tensor)", "__format__": "formatting a tensor (an f-string)",
                "__repr__": "printing a tensor (repr)", "__str__": "printing a tensor (str)"}[name]
            if text not in self.syncs:
                self.syncs.append(text)
        return func(*args, **(kwargs or {}))


@observing
def _watch_syncs(live: Live, args: tuple, inputs: list[torch.Tensor], device: str) -> None:
    module = live.build("PositionalEncoding", args)
    live.run(f"{_label(args)}.to({device!r})", module.to, device)
    watch = _SyncWatch()
    for i, x in enumerate(inputs):
        x = x.to(device)
        try:
            with watch:
                y = live.run(f"forward({x_text(x)})", module, x)
            live.seen[f"{i}.out"] = _output(y)
        finally:
            live.seen["syncs"] = watch.syncs


@observing
def _forward_errors(live: Live, args: tuple, inputs: list[torch.Tensor]) -> None:
    module = live.build("PositionalEncoding", args)
    for i, x in enumerate(inputs):
        try:
            y = live.student.run(module, x)
            live.seen[f"{i}"] = {"returned": _output(y)}
        except StudentRaised as exc:
            live.seen[f"{i}"] = {"raised": dataclasses.asdict(exc.error)}




# ==================================================================================================
# In the judge
# ==================================================================================================
def _inputs(shapes: Sequence[tuple[int, ...]], dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    return [torch.randn(*shape, dtype=torch.float64).to(dtype) for shape in shapes]


def _non_contiguous(batch: int, seq: int, dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(batch, dim, seq, dtype=torch.float64).to(dtype).transpose(1, 2)


def _table_cause(got: torch.Tensor, dim: int, max_len: int) -> str | None:
    """Name a known wrong table when ``got`` is one of them (and the right one is not)."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    pair = torch.arange(dim // 2, dtype=torch.float64)[None, :]
    column = torch.arange(0, dim, 2, dtype=torch.float64)[None, :]

    def interleave(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return torch.stack((first, second), dim=-1).flatten(1)

    def table(angle: torch.Tensor) -> torch.Tensor:
        return interleave(angle.sin(), angle.cos())

    right = encoding(dim, max_len)
    angle = p / 10000 ** (2 * pair / dim)
    candidates = [
        (interleave(angle.cos(), angle.sin()), "sin and cos are swapped: even columns (2i) hold the sine, odd "
                                               "columns (2i + 1) the cosine"),
        (torch.cat((angle.sin(), angle.cos()), dim=1), "the sines fill the first half and the cosines the second; "
                                                       "they must alternate: column 2i sine, column 2i + 1 cosine"),
        (table(p / 10000 ** (pair / dim)), "the exponent is i / dim; the spec uses 2i / dim (i counts the sin/cos "
                                           "pairs: 0, 1, 2, ...)"),
        (table(p / 10000 ** (2 * column / dim)), "the exponent is 2·(2i) / dim: 2i is already the even column index, "
                                                 "so torch.arange(0, dim, 2) / dim is the exponent, not twice that"),
        (table((p + 1) / 10000 ** (2 * pair / dim)), "the positions start at 1; p runs 0, 1, ..., max_len - 1"),
        (table(p * 10000 ** (2 * pair / dim)), "p is multiplied by 10000 ** (2i / dim); it must be divided by it"),
    ]
    for wrong, cause in candidates:
        if wrong.shape == got.shape and torch.allclose(got, wrong, atol=10 * tolerance(max_len), rtol=0) and \
                not torch.allclose(right, wrong, atol=10 * tolerance(max_len), rtol=0):
            return cause
    return None


def _check_table(facts: dict[str, Any], label: str, dim: int, max_len: int,
                 right: torch.Tensor | None = None) -> None:
    if facts["pe_kind"] == "missing":
        fail(f"{label} has no attribute `pe`: the encoding table must be a buffer named pe, of shape (max_len, dim) = "
             f"({max_len}, {dim}) (self.register_buffer('pe', table, persistent=False))")
    if facts["pe"] is None:
        fail(f"{label}.pe is {facts['pe_kind']}, not a tensor of shape ({max_len}, {dim})")
    got = facts["pe"]
    if list(got.shape) != [max_len, dim]:
        cause = None
        if list(got.shape) == [1, max_len, dim]:
            cause = "pe has an extra leading batch dim (pe.unsqueeze(0)); the spec stores it as (max_len, dim)"
        elif list(got.shape) == [dim, max_len]:
            cause = "pe is transposed: rows are positions, columns the features"
        elif got.dim() == 2 and got.shape[1] == dim and label == f"PositionalEncoding({dim})":
            cause = f"max_len defaults to {got.shape[0]}; the specification's default is max_len = 512"
        fail_mismatch(f"{label}.pe has the wrong shape", given=label, expected=f"shape ({max_len}, {dim})",
                      got=f"shape {tuple(got.shape)}", cause=cause)
    right = encoding(dim, max_len) if right is None else right
    error = (got - right).abs().nan_to_num(nan=math.inf)
    if not bool((error <= tolerance(max_len)).all()):
        where = difference(got, right, atol=tolerance(max_len))
        cause = _table_cause(got, dim, max_len)
        if cause is None and float(error.max()) < 1e3 * tolerance(max_len) and bool(torch.isfinite(got).all()):
            cause = (f"the values are close but not within {show(tolerance(max_len))} (1.5e-7 * max_len): compute the "
                     "angle p / 10000 ** (2i / dim) in float64 (or with the exp/log form in float32, never float16 or "
                     "a low-precision intermediate), then store it as float32")
        fail_mismatch(f"{label}.pe does not hold the sinusoidal encoding", given=label,
                      expected=f"pe[p, 2i] = sin(p / 10000 ** (2i / dim)), pe[p, 2i + 1] = cos(...) within "
                               f"{show(tolerance(max_len))}", got=show(got), where=where, cause=cause)


@POSITIONAL_ENCODING.check(points=2)
def encoding_values(student: Submission, device: torch.device) -> None:
    """pe holds sin / cos of p / 10000 ** (2i / dim), interleaved, within 1.5e-7 * max_len, any dim and length."""
    configs = [((2, 1), {}), ((4, 9), {}), ((6,), {"max_len": 50}), ((8,), {}), ((64, 2048), {}),
               ((10,), {"max_len": 4096}), ((512, 128), {})]
    seen = observe(student, _read_tables, configs)
    for i, (args, kwargs) in enumerate(configs):
        dim = args[0]
        max_len = args[1] if len(args) > 1 else kwargs.get("max_len", 512)
        _check_table(seen[f"{i}.facts"], _label(args, kwargs), dim, max_len)


@judge_only
def _expected_sum(x: torch.Tensor, dim: int, max_len: int) -> torch.Tensor:
    return x.double() + encoding(dim, max_len)[: x.shape[1]]


def _forward_cause(x: torch.Tensor, got: torch.Tensor, dim: int, max_len: int, atol: float, rtol: float) -> str | None:
    table = encoding(dim, max_len)
    xd = x.double()
    candidates = [(table[: x.shape[1]].expand_as(xd), "forward returns the encoding alone; it must return x + pe[:seq]"),
                  (xd + table[0], "the same row pe[0] was added at every position: slice pe[:seq] by the sequence "
                                  "length, x.shape[1]")]
    if x.shape[0] <= max_len and x.shape[0] != x.shape[1]:
        rows = table[: x.shape[0]]
        if x.shape[0] == 1:
            candidates.append((xd + rows, "pe was sliced by the batch size (x.shape[0]), not the sequence length "
                                          "(x.shape[1])"))
        else:
            candidates.append((xd + rows[:, None, :], "pe was sliced by the batch size (x.shape[0]), not the sequence "
                                                      "length (x.shape[1])"))
    for wrong, cause in candidates:
        if wrong.shape == got.shape and torch.allclose(got.double(), wrong, atol=atol, rtol=rtol):
            return cause
    return None


def _check_output(out: dict[str, Any], x: torch.Tensor, label: str, dim: int, max_len: int, device: torch.device,
                  own_pe: torch.Tensor | None = None) -> None:
    given = f"{label}, then forward({x_text(x)})"
    if "other" in out:
        fail(f"{given} returned a {out['other']}; forward must return the tensor x + pe[:seq]")
    if out["shape"] != list(x.shape):
        fail_mismatch("forward returned the wrong shape", given=given, expected=f"shape {tuple(x.shape)} (x's)",
                      got=f"shape {tuple(out['shape'])}",
                      cause="pe was not sliced to the sequence length, x.shape[1]" if out["shape"][-2:] == [max_len, dim]
                      else None)
    if torch.device(out["device"]).type != device.type:
        fail(f"{given}: the result is on {out['device']}, x on {device}; it must be on x's device\n  likely cause: "
             "pe is a "
             "plain tensor attribute (which .to() leaves behind) or was made on the CPU in forward")
    if out["dtype"] != dtype_name(x.dtype):
        cause = (f"pe (float32) was added without .to(x.dtype): {dtype_name(x.dtype)} + float32 promotes to float32"
                 if out["dtype"] == "float32" else None)
        fail_mismatch("forward changed the dtype", given=given, expected=dtype_name(x.dtype), got=out["dtype"],
                      cause=cause)
    got = out["tensor"]
    right = _expected_sum(x, dim, max_len)
    rtol = DTYPE_RTOL[x.dtype]
    atol = tolerance(max_len) * 2 + rtol
    if not torch.allclose(got.double(), right, atol=atol, rtol=rtol):
        fail_mismatch("forward(x) is not x + pe[:seq]", given=given, expected=show(right.to(x.dtype)), got=show(got),
                      where=difference(got, right, rtol=rtol, atol=atol),
                      cause=_forward_cause(x, got, dim, max_len, atol, rtol))
    # Exactly x + pe[:seq].to(x.dtype) with the module's own table (on the CPU, where the judge's arithmetic is
    # the student's): adding in another dtype and casting back differs in the last place.
    if own_pe is not None and device.type == "cpu" and list(own_pe.shape) == [max_len, dim]:
        exact = x + own_pe[: x.shape[1]].to(x.dtype)
        if not torch.equal(got, exact):
            fail_mismatch("forward(x) is not exactly x + pe[:seq].to(x.dtype)", given=given, expected=show(exact),
                          got=show(got), where=difference(got, exact),
                          cause="the sum was computed in another dtype and cast back (x.float() + pe, then "
                                ".to(x.dtype)?): the spec adds in x's dtype, x + pe[:seq].to(x.dtype)")


@POSITIONAL_ENCODING.check(points=2)
def forward_adds_encoding(student: Submission, device: torch.device) -> None:
    """forward(x) is x + pe[:seq].to(x.dtype), on x's device, in x's dtype, for any batch and seq <= max_len."""
    dim, max_len = 6, 40
    inputs = (_inputs([(2, 5, dim), (3, max_len, dim), (1, 1, dim), (1, 7, dim), (4, 0, dim)])
              + _inputs([(2, 3, dim)], torch.float64) + _inputs([(3, 4, dim)], torch.float16)
              + _inputs([(2, 9, dim)], torch.bfloat16)
              + [_non_contiguous(2, 11, dim), _non_contiguous(1, 3, dim, torch.float16)])
    label = _label((dim, max_len))
    seen = observe(student, _forwards, (dim, max_len), inputs, str(device))
    for i, x in enumerate(inputs):
        _check_output(seen[f"{i}.out"], x, label, dim, max_len, device, seen.get("pe"))
        if seen[f"{i}.x_changed"]:
            fail(f"{label}, then forward({x_text(x)}) changed x itself; forward must return a new tensor\n"
                 "  likely cause: "
                 "an in-place add (x += ..., x.add_(...)) on the caller's input")


@POSITIONAL_ENCODING.check(points=1)
def buffer_not_parameter(student: Submission, device: torch.device) -> None:
    """pe is a non-persistent buffer: no parameters, an empty state_dict, and it follows .to() and .double()."""
    dim, max_len = 8, 30
    x = torch.randn(2, 7, dim, dtype=torch.float64)
    label = _label((dim, max_len))
    seen = observe(student, _moves, (dim, max_len), str(device), x)
    built = seen["built"]
    _check_table(built, label, dim, max_len)  # first: a real table (a module that does nothing has none)
    if built["parameters"]:
        cause = ("pe is an nn.Parameter (even with requires_grad=False it is a parameter: the optimizer and "
                 "state_dict see it); register it with self.register_buffer('pe', table, persistent=False)"
                 if "pe" in built["parameters"] else None)
        fail_mismatch(f"{label} has parameters", given=label, expected="no parameters",
                      got=f"parameters {built['parameters']}", cause=cause)
    if not built["pe_is_buffer"]:
        fail(f"{label}.pe is a plain tensor attribute, not a registered buffer: .to(device) and .double() leave it "
             f"behind (buffers: {built['buffers']})\n  likely cause: self.pe = table; use "
             "self.register_buffer('pe', table, persistent=False)")
    if built["state_dict"]:
        fail(f"{label}.state_dict() has the keys {built['state_dict']}; it must be empty\n  likely cause: "
             + ("register_buffer('pe', ...) without persistent=False: the table is derived from dim and max_len, "
                "so it stays out of checkpoints" if "pe" in built["state_dict"] else "other state was registered"))
    double = seen["double"]
    if double["pe_dtype"] != "float64":
        fail(f"after {label}.double(), pe is {double['pe_dtype']}, not float64; a registered buffer follows .double()")
    out = seen["double_out"]
    if out.get("dtype") != "float64":
        fail(f"after {label}.double(), forward({x_text(x)}) returned {out.get('dtype', out)}, not float64")
    meta = seen["meta"]
    if meta["pe_device"] != "meta":
        fail(f"after {label}.to('meta'), pe is on {meta['pe_device']}; a registered buffer follows .to(device)")
    if device.type != "cpu":
        moved = seen["device"]
        if torch.device(moved["pe_device"]).type != device.type:
            fail(f"after {label}.to({str(device)!r}), pe is on {moved['pe_device']}; a buffer follows .to(device)")


def _require_correct_forward(student: Submission, label_args: tuple, x: torch.Tensor, judged: str) -> None:
    """Judging what forward does *not* do starts with making sure it does what it must (on the CPU)."""
    dim, max_len = label_args
    seen = observe(student, _forwards, label_args, [x], "cpu")
    try:
        _check_output(seen["0.out"], x, _label(label_args), dim, max_len, torch.device("cpu"))
    except CheckFailed as exc:
        first, *rest = str(exc).splitlines()
        fail("\n".join([f"{judged} can only be judged once forward returns x + pe[:seq]; here: {first}", *rest]))


@POSITIONAL_ENCODING.check(points=1)
def stays_on_device(student: Submission, device: torch.device) -> None:
    """forward makes and uses no tensor on another device than x's (0-dim CPU tensors included)."""
    args = (10, 64)
    x = torch.randn(3, 17, 10)
    # A forward that does nothing makes no stray tensor either: it must first do what it must.
    _require_correct_forward(student, args, x, "What forward creates")
    # meta and a faked CUDA device exist everywhere; a real GPU is watched too when there is one.
    targets = ["meta", "fake-cuda"] + ([str(device)] if device.type == "cuda" else [])
    for target in targets:
        seen = observe(student, _watch_devices, args, x, target)
        strays = seen.get("strays", [])
        where = {"meta": "module and x on the meta device (shapes but no data, so a CPU tensor stands out)",
                 "fake-cuda": "module and x on a fake CUDA device (FakeTensorMode: a device and shapes, no data)"
                 }.get(target, f"module and x on {target}")
        if strays:
            fail(f"{_label(args)}, then forward(x of shape {tuple(x.shape)}) with {where}: in forward, "
                 f"{'; '.join(strays[:3])}\n  on a GPU this is a cross-device error, or a silent copy every step\n"
                 "  likely cause: a tensor made inside forward without device=x.device (torch.arange, torch.tensor, "
                 "torch.zeros, ...), or a plain tensor attribute that .to() left on the CPU; make it on x.device, or "
                 "keep it in a buffer")
        if "error" in seen and _stand_in_limit(StudentError(**seen["error"])):
            continue  # forward read a value the stand-in device does not have: no_host_sync judges that; no stray so far
        seen["out"]  # the student's error on that device, if forward raised without a stray tensor


def _stand_in_limit(error: StudentError) -> bool:
    """The error is the stand-in device's (meta and fake tensors hold no values to read), not the answer's."""
    text = error.exception_message
    return ("cannot be called on meta tensors" in text or "Cannot copy out of meta tensor" in text
            or "data-dependent" in text.lower() or (error.exception_type or "").startswith(("DataDependent",
                                                                                             "DynamicOutputShape")))


@POSITIONAL_ENCODING.check(points=1)
def no_host_sync(student: Submission, device: torch.device) -> None:
    """forward never waits for the device: no .item(), .tolist(), .cpu(), .numpy(), printing, bool/int/float."""
    args = (12, 100)
    inputs = [torch.randn(2, 9, 12), torch.randn(1, 100, 12, dtype=torch.float64)]
    _require_correct_forward(student, args, inputs[0], "Whether forward synchronises")
    seen = observe(student, _watch_syncs, args, inputs, str(device))
    syncs = seen.get("syncs", [])
    if syncs:
        fail(f"{_label(args)}, then forward(x of shape {tuple(inputs[0].shape)}): forward synchronises with the host "
             f"through {', '.join(syncs[:4])}; on a GPU each one waits for every queued kernel to finish\n"
             "  likely cause: "
             "shape checks must use Python ints (x.shape[1], x.dim(), x.size(-1)), never a tensor's value; and no "
             "printing inside forward")
    for i in range(len(inputs)):
        seen[f"{i}.out"]


@POSITIONAL_ENCODING.check(points=1)
def rejects_bad_arguments(student: Submission, device: torch.device) -> None:
    """ValueError in __init__ when dim is odd or < 2, or max_len < 1; valid arguments build a module."""
    for args in [(2, 1), (4,), (2,)]:
        try:
            student.call("PositionalEncoding", *args)
        except StudentCodeError as exc:
            raise exc.within(f"{_label(args)} (valid arguments)") from None
    bad = [((7,), "dim is odd"), ((3, 10), "dim is odd"), ((1,), "dim < 2 (and odd)"), ((0,), "dim < 2"),
           ((-2,), "dim < 2"), ((4, 0), "max_len < 1"), ((8, -3), "max_len < 1")]
    expect_errors(student, ValueError, "PositionalEncoding", [ErrorCase(args, _label(args), why) for args, why in bad],
                  missing_check="no check of dim and max_len at the top of __init__: none of these raised")
    # Generated: every invalid combination, by position or keyword (one request for all).
    calls = domain.draw(generate_bad_arguments, 100, size=lambda c: (len(c[0]) + len(c[1]), abs(c[0][0])))
    seen = _in_chunks(student, bad_arguments_scenario, [(args, kwargs) for args, kwargs, _ in calls])
    wrong = [not ("raised" in s and StudentError(**s["raised"]).is_instance(ValueError)) for s in seen]
    if any(wrong):
        smallest = domain.smallest(list(range(len(calls))), wrong,
                                   size=lambda n: (len(calls[n][0]) + len(calls[n][1]), abs(calls[n][0][0])))
        args, kwargs, why = calls[smallest]
        outcome = seen[smallest]
        call = _label(args, kwargs)
        if "returned" in outcome:
            fail(f"{call} returned a module; it must raise ValueError because {why} ({sum(wrong)} of the "
                 f"{len(calls)} generated invalid calls did not raise ValueError)")
        error = StudentError(**outcome["raised"])
        fail(f"{call} must raise ValueError because {why}, but it {error.describe()} ({sum(wrong)} of the "
             f"{len(calls)} generated invalid calls did not raise ValueError)")


@POSITIONAL_ENCODING.check(points=1)
def rejects_bad_input(student: Submission, device: torch.device) -> None:
    """ValueError in forward when x is not 3-D, its last dim is not dim, or seq > max_len; seq == max_len works."""
    dim, max_len = 4, 6
    label = _label((dim, max_len))
    cases = [(torch.randn(2, max_len, dim), None), (torch.randn(1, 1, dim), None),
             (torch.randn(5, dim), "x has 2 dims, not 3 (batch, seq, dim)"),
             (torch.randn(dim), "x has 1 dim"),
             (torch.randn(1, 2, 3, dim), "x has 4 dims"),
             (torch.randn(2, 3, dim + 2), f"the last dim of x is {dim + 2}, not dim = {dim}"),
             (torch.randn(2, 3, dim // 2), f"the last dim of x is {dim // 2}, not dim = {dim}"),
             (torch.randn(1, max_len + 1, dim), f"seq = {max_len + 1} > max_len = {max_len}"),
             (torch.randn(2, 4 * max_len, dim), f"seq = {4 * max_len} > max_len = {max_len}")]
    seen = observe(student, _forward_errors, (dim, max_len), [x for x, _ in cases])
    for i, (x, why) in enumerate(cases):
        outcome = seen[str(i)]
        call = f"{label}, then forward({x_text(x)})"
        if why is None:
            if "raised" in outcome:
                error = StudentError(**outcome["raised"])
                cause = ("the length test is off by one: seq == max_len fits (use seq > max_len)"
                         if x.shape[1] == max_len and error.is_instance(ValueError) else None)
                if cause:
                    fail(f"{call} raised {error.exception_type}, but x is valid (seq = max_len)\n  likely cause: {cause}")
                raise StudentCodeError(error, call)
            _check_output(outcome["returned"], x, label, dim, max_len, torch.device("cpu"))
            continue
        if "returned" in outcome:
            fail(f"{call} returned a result; it must raise ValueError because {why}\n  likely cause: a missing check "
                 "at the top of forward")
        error = StudentError(**outcome["raised"])
        if not error.is_instance(ValueError):
            cause = ("assert raises AssertionError; raise ValueError(...) instead"
                     if error.exception_type == "AssertionError" else
                     "the error came from an operation that failed, not from a check of x: test the shape first and "
                     "raise ValueError")
            fail(f"{call} must raise ValueError because {why}, but it {error.describe()}\n  likely cause: {cause}")
    # Generated: invalid inputs of every kind, several reasons at once, any dtype (one request for all).
    drawn = domain.draw(generate_bad_input, 100, size=lambda c: (len(c[2].shape(c[0])), c[0], c[1], c[2].seq))
    tensors = [make_input(spec, dim, 31 * n + 1) for n, (dim, max_len, spec, _) in enumerate(drawn)]
    seen = _in_chunks(student, bad_input_scenario, [(dim, max_len, x) for (dim, max_len, _, _), x in zip(drawn, tensors)])
    wrong = [not ("raised" in s and StudentError(**s["raised"]).is_instance(ValueError)) for s in seen]
    if any(wrong):
        smallest = domain.smallest(list(range(len(drawn))), wrong, size=lambda n: (
            len(drawn[n][2].shape(drawn[n][0])), drawn[n][0], drawn[n][1], drawn[n][2].seq))
        dim, max_len, spec, why = drawn[smallest]
        outcome = seen[smallest]
        call = f"{_label((dim, max_len))}, then forward({spec.text(dim)})"
        count = f"{sum(wrong)} of the {len(drawn)} generated invalid inputs did not raise ValueError"
        if "returned" in outcome:
            fail(f"{call} returned a result; it must raise ValueError because {why} ({count})")
        fail(f"{call} must raise ValueError because {why}, but it {StudentError(**outcome['raised']).describe()} "
             f"({count})")


# ==================================================================================================
# The generated domain (from the specification's sentences): any even dim >= 2 (2, 4, large ones), any
# max_len >= 1 (1, odd, long tables), max_len given by position, by keyword or left to its default; the module
# in train or eval mode, as built or converted (.double(), .half(), .bfloat16(), .float() after .double()); x of
# any batch (0 included) and seq (0, 1, max_len), in the four floating dtypes, contiguous or not (transposed,
# strided, at a storage offset, an expanded batch of stride 0, permuted), small or large values (float16 near its
# largest finite value), requiring grad or not. Invalid arguments and inputs combined: an odd and a too small
# dim, dim < 2 with max_len < 1, x of 0 to 5 dims, a wrong last dim together with seq > max_len.
# ==================================================================================================
GEN_DTYPES = ("float32", "float64", "float16", "bfloat16")
GEN_LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded", "permuted")
GEN_CONVERSIONS = (None, "double", "half", "bfloat16", "float")


@dataclasses.dataclass(frozen=True)
class GenInput:
    batch: int
    seq: int
    dtype: str
    layout: str = "contiguous"
    scale: float = 1.0
    requires_grad: bool = False
    last: int | None = None  # the last dim when it is not the module's (an invalid input)
    dims: int = 3  # x.dim() (an invalid input when not 3)

    def shape(self, dim: int) -> tuple[int, ...]:
        last = dim if self.last is None else self.last
        full = (self.batch, self.seq, last)
        if self.dims == 3:
            return full
        if self.dims < 3:
            return full[3 - self.dims:]
        return (2,) * (self.dims - 3) + full

    def text(self, dim: int) -> str:
        layout = "" if self.layout == "contiguous" else f", {self.layout} (not contiguous)" if self.layout != \
            "offset" else ", at a storage offset"
        extra = (f", values up to {show(self.scale)}" if self.scale != 1.0 else "") + (
            ", requires_grad=True" if self.requires_grad else "")
        return f"x of shape {self.shape(dim)}, {self.dtype}{layout}{extra}"


@dataclasses.dataclass(frozen=True)
class GenConfig:
    dim: int
    max_len: int
    how: str = "positional"  # "positional", "keyword" or "default" (max_len left out: 512)
    convert: str | None = None
    mode: str = "train"
    inputs: tuple[GenInput, ...] = ()

    @property
    def args(self) -> tuple:
        return (self.dim, self.max_len) if self.how == "positional" else (self.dim,)

    @property
    def kwargs(self) -> dict[str, Any]:
        return {"max_len": self.max_len} if self.how == "keyword" else {}

    @property
    def label(self) -> str:
        text = _label(self.args, self.kwargs)
        if self.mode == "eval":
            text += ".eval()"
        if self.convert == "float":
            text += ".double().float()"
        elif self.convert is not None:
            text += f".{self.convert}()"
        return text


def make_input(spec: GenInput, dim: int, seed: int) -> torch.Tensor:
    """The tensor ``spec`` describes (both processes can build it; the judge sends it)."""
    generator = torch.Generator().manual_seed(seed)
    shape = spec.shape(dim)
    dtype = getattr(torch, spec.dtype)

    def randn(*size: int) -> torch.Tensor:
        return (torch.randn(size, generator=generator, dtype=torch.float64) * spec.scale).to(dtype)

    if spec.dims != 3 or spec.layout == "contiguous":
        x = randn(*shape)
    elif spec.layout == "transposed":
        x = randn(shape[0], shape[2], shape[1]).transpose(1, 2)
    elif spec.layout == "strided":
        x = randn(shape[0], 2 * shape[1] + 1, shape[2])[:, ::2][:, : shape[1]]
    elif spec.layout == "offset":
        x = randn(shape[0] + 1, shape[1], shape[2])[1:]
    elif spec.layout == "expanded":
        x = randn(1, shape[1], shape[2]).expand(shape)
    else:  # permuted: the batch dim innermost
        x = randn(shape[1], shape[2], shape[0]).permute(2, 0, 1)
    if spec.requires_grad:
        x = x.requires_grad_()
    return x


def _gen_dim(generator: random.Random) -> int:
    return 2 * domain.pick(generator, [1, 1, 2, domain.small_int(generator, 1, 8), generator.randint(1, 64),
                                       generator.randint(65, 512)], [3, 2, 2, 4, 3, 1])


def _gen_max_len(generator: random.Random, dim: int) -> int:
    cap = max(1, min(6000, (1 << 16 if generator.random() < 0.1 else 1 << 13) // dim))
    return domain.pick(generator, [1, 2, domain.small_int(generator, 1, 20), generator.randint(1, 200),
                                   generator.randint(1, cap), cap], [2, 1, 3, 3, 2, 1])


def _gen_seq(generator: random.Random, max_len: int) -> int:
    return domain.pick(generator, [0, 1, max_len, max_len - 1 if max_len > 1 else max_len,
                                   generator.randint(0, min(max_len, 64)), generator.randint(0, max_len)],
                       [1, 2, 3, 1, 4, 2])


def generate_input(generator: random.Random, dim: int, max_len: int) -> GenInput:
    dtype = domain.pick(generator, GEN_DTYPES, [4, 3, 2, 2])
    seq = _gen_seq(generator, max_len)
    batch = domain.small_int(generator, 0, 4, edge=0.3)
    if batch * seq * dim > 1 << 13:
        batch = 1
        seq = min(seq, max(1, (1 << 13) // dim)) if generator.random() < 0.7 else seq
    scale = domain.pick(generator, [1.0, 1.0, 1.0, 1e-3, 100.0,
                                    6e4 if dtype == "float16" else 1e30 if dtype != "float64" else 1e300])
    return GenInput(batch, seq, dtype, domain.pick(generator, GEN_LAYOUTS, [4, 1, 1, 1, 1, 1]), scale,
                    requires_grad=generator.random() < 0.15)


def generate_config(generator: random.Random) -> GenConfig:
    """A valid module (dim, max_len, how max_len is given, its mode and conversion) and 1-3 valid inputs."""
    dim = _gen_dim(generator)
    how = domain.pick(generator, ["positional", "keyword", "default"], [3, 2, 1])
    max_len = 512 if how == "default" else _gen_max_len(generator, dim)
    if how == "default" and dim > 256:
        dim = 256
    inputs = tuple(generate_input(generator, dim, max_len) for _ in range(domain.small_int(generator, 1, 3)))
    return GenConfig(dim, max_len, how, domain.pick(generator, GEN_CONVERSIONS, [5, 1, 1, 1, 1]),
                     domain.pick(generator, ["train", "eval"]), inputs)


def config_size(config: GenConfig) -> tuple[int, ...]:
    return (config.dim * config.max_len, sum(s.batch * s.seq for s in config.inputs), len(config.inputs),
            config.convert is not None, config.how != "positional")


def _smaller_configs(config: GenConfig) -> list[GenConfig]:
    """Smaller variants of a failing configuration (still valid), for shrinking."""
    out = []
    if len(config.inputs) > 1:
        out += [dataclasses.replace(config, inputs=(spec,)) for spec in config.inputs]
    for index, spec in enumerate(config.inputs):
        simpler = [dataclasses.replace(spec, layout="contiguous"), dataclasses.replace(spec, requires_grad=False),
                   dataclasses.replace(spec, scale=1.0), dataclasses.replace(spec, batch=min(spec.batch, 1)),
                   dataclasses.replace(spec, seq=min(spec.seq, 1)), dataclasses.replace(spec, seq=spec.seq // 2),
                   dataclasses.replace(spec, dtype="float32")]
        out += [dataclasses.replace(config, inputs=config.inputs[:index] + (s,) + config.inputs[index + 1:])
                for s in simpler if s != spec]
    seqs = max((s.seq for s in config.inputs), default=0)
    if config.how != "default":
        for max_len in sorted({max(1, seqs), max(1, config.max_len // 2)}):
            if seqs <= max_len < config.max_len:
                out.append(dataclasses.replace(config, max_len=max_len))
    if config.convert is not None:
        out.append(dataclasses.replace(config, convert=None))
    if config.mode != "train":
        out.append(dataclasses.replace(config, mode="train"))
    if config.how != "positional":
        out.append(dataclasses.replace(config, how="positional"))
    return out


def generated_scenario(student: Any, items: list[tuple[GenConfig, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """For each configuration: build the module, read its buffer, set its mode, convert it, run forward on each
    input; what came out (or what was raised, and where)."""
    cls = student.get("PositionalEncoding")
    seen = []
    for config, inputs in items:
        record: dict[str, Any] = {}
        at = config.label
        try:
            module = student.run(cls, *config.args, **config.kwargs)
            if not isinstance(module, nn.Module):
                record["not_module"] = type(module).__name__
                seen.append(record)
                continue
            record["facts"] = _buffer_facts(module)
            record["facts"]["pe"] = None  # the values come from the buffer itself, below
            table = module.__dict__.get("_buffers", {}).get("pe")
            if isinstance(table, torch.Tensor) and table.device.type != "meta":
                record["table"] = table.detach().to("cpu", copy=True)
            student.run(module.train, config.mode == "train")
            if config.convert == "float":
                student.run(module.double)
                student.run(module.float)
            elif config.convert is not None:
                student.run(getattr(module, config.convert))
            converted = module.__dict__.get("_buffers", {}).get("pe")
            if config.convert is not None and isinstance(converted, torch.Tensor) and converted.device.type != "meta":
                record["converted"] = converted.detach().to("cpu", copy=True)
            for i, x in enumerate(inputs):
                at = f"{config.label}, then forward({config.inputs[i].text(config.dim)})"
                before = x.detach().clone()
                y = student.run(module, x)
                record[f"{i}.out"] = _output(y)
                record[f"{i}.x_changed"] = not torch.equal(before, x.detach())
        except StudentRaised as exc:
            record["error"] = dataclasses.asdict(exc.error)
            record["error_at"] = at
        seen.append(record)
    return seen


@judge_only
def _generated_problem(config: GenConfig, inputs: list[torch.Tensor], record: dict[str, Any],
                       tables: dict[tuple[int, int], torch.Tensor]) -> str | None:
    """What is wrong with the student's module on ``config`` (None: nothing)."""
    label, dim, max_len = config.label, config.dim, config.max_len
    if (dim, max_len) not in tables:
        tables[dim, max_len] = encoding(dim, max_len)
    right_table = tables[dim, max_len]
    if "not_module" in record:
        return f"{_label(config.args, config.kwargs)} made a {record['not_module']}, not an nn.Module"
    facts = record.get("facts")
    if facts is not None:
        try:
            table_facts = dict(facts, pe=record["table"].double() if "table" in record else None)
            _check_table(table_facts, _label(config.args, config.kwargs), dim, max_len, right_table)
        except CheckFailed as exc:
            return str(exc)
        if facts["parameters"]:
            return f"{label} has parameters {facts['parameters']}; the module has none (pe is a buffer)"
        if not facts["pe_is_buffer"]:
            return f"{label}.pe is a plain tensor attribute, not a registered buffer (buffers: {facts['buffers']})"
        if facts["state_dict"]:
            return f"{label}.state_dict() has the keys {facts['state_dict']}; it must be empty (persistent=False)"
    if "error" in record:
        error = StudentError(**record["error"])
        return f"{record['error_at']} {error.describe()}"
    own = record.get("converted") if config.convert is not None else record.get("table")
    wanted = {None: None, "double": "float64", "half": "float16", "bfloat16": "bfloat16", "float": "float32"}
    if own is not None and config.convert is not None and dtype_name(own.dtype) != wanted[config.convert]:
        return f"after {label}, pe is {dtype_name(own.dtype)}, not {wanted[config.convert]}: a buffer follows it"
    for i, (spec, x) in enumerate(zip(config.inputs, inputs)):
        out = record[f"{i}.out"]
        given = f"{label}, then forward({spec.text(dim)})"
        if "other" in out:
            return f"{given} returned a {out['other']}; forward must return the tensor x + pe[:seq]"
        if out["shape"] != list(x.shape) or out["dtype"] != dtype_name(x.dtype) or out["device"] != "cpu":
            return (f"{given} returned a {out['dtype']} tensor of shape {tuple(out['shape'])} on {out['device']}; "
                    f"expected {dtype_name(x.dtype)}, shape {tuple(x.shape)}, on cpu (x's)")
        got = out["tensor"]
        if config.convert in (None, "double", "float"):
            right = x.detach().double() + right_table[: x.shape[1]]
            rtol = DTYPE_RTOL[x.dtype]
            atol = tolerance(max_len) * 2 + rtol
            if not torch.allclose(got.double(), right, atol=atol, rtol=rtol, equal_nan=True):
                return (f"{given}: forward(x) is not x + pe[:seq]\n  expected: {show(right.to(x.dtype))}\n  returned: "
                        f"{show(got)}\n  where:    {difference(got, right, rtol=rtol, atol=atol)}")
        if own is not None and list(own.shape) == [max_len, dim]:
            exact = x.detach() + own[: x.shape[1]].to(x.dtype)
            if not torch.equal(got, exact) and not (got.isnan() & exact.isnan()).any():
                return (f"{given}: forward(x) is not exactly x + pe[:seq].to(x.dtype) with the module's own pe\n  "
                        f"expected: {show(exact)}\n  returned: {show(got)}\n  where:    {difference(got, exact)}")
        if record[f"{i}.x_changed"]:
            return f"{given} changed x itself; forward must return a new tensor (no in-place add on the input)"
    return None


@judge_only
def _run_generated(student: Submission, configs: list[GenConfig]) -> list[tuple[list[torch.Tensor], dict]]:
    """Observe every configuration (in chunks, so that no request runs long) and the inputs sent."""
    items = [(config, [make_input(spec, config.dim, 7919 * n + i) for i, spec in enumerate(config.inputs)])
             for n, config in enumerate(configs)]
    seen: list[dict[str, Any]] = []
    chunk, budget = [], 0
    for item in items:
        chunk.append(item)
        budget += item[0].dim * item[0].max_len + sum(x.numel() for x in item[1])
        if len(chunk) >= 15 or budget > 1 << 18:
            seen += student.scenario(generated_scenario, chunk)
            chunk, budget = [], 0
    if chunk:
        seen += student.scenario(generated_scenario, chunk)
    return [(inputs, record) for (_, inputs), record in zip(items, seen)]


@judge_only
def _check_generated(student: Submission, configs: list[GenConfig]) -> None:
    observed = _run_generated(student, configs)
    tables: dict[tuple[int, int], torch.Tensor] = {}
    problems = [_generated_problem(config, inputs, record, tables) for config, (inputs, record) in zip(configs, observed)]
    failing = [p is not None for p in problems]
    if not any(failing):
        return
    config = domain.smallest(configs, failing, size=config_size)
    problem = {c: p for c, p in zip(configs, problems)}

    def fails(candidates: list[GenConfig]) -> list[bool]:
        found = [_generated_problem(c, inputs, record, tables) for c, (inputs, record) in
                 zip(candidates, _run_generated(student, candidates))]
        problem.update(zip(candidates, found))
        return [p is not None for p in found]

    config = domain.shrink(config, _smaller_configs, fails)
    wrong = sum(failing)
    fail(f"on generated modules and inputs ({wrong} of the {len(configs)} tried failed), the smallest failing one:\n"
         f"  {problem[config]}")


@POSITIONAL_ENCODING.check(points=2)
def generated_modules_and_inputs(student: Submission, device: torch.device) -> None:
    """Generated dims, lengths, modes, conversions and inputs (dtypes, layouts, edge sizes and values): the buffer
    holds the encoding and forward returns exactly x + pe[:seq].to(x.dtype), on x's device, in x's dtype."""
    _check_generated(student, domain.draw(generate_config, 80, size=config_size))


# -- invalid arguments and inputs, combined -------------------------------------------------------------------
def generate_bad_arguments(generator: random.Random) -> tuple[tuple, dict[str, Any], str]:
    """(args, kwargs, why): dim odd or < 2, max_len < 1, or both, by position or keyword."""
    bad_dim = domain.pick(generator, [1, 3, 0, -2, -1, 2 * generator.randint(1, 40) + 1, -2 * generator.randint(1, 9)])
    good_dim = 2 * generator.randint(1, 32)
    bad_len = domain.pick(generator, [0, -1, -generator.randint(2, 10**6)])
    good_len = generator.randint(1, 300)
    kind = domain.pick(generator, ["dim", "max_len", "both"])
    dim = bad_dim if kind in ("dim", "both") else good_dim
    max_len = bad_len if kind in ("max_len", "both") else good_len
    why = " and ".join(w for w in ((f"dim = {dim} is {'odd' if dim % 2 else '< 2'}" if kind != "max_len" else ""),
                                   (f"max_len = {max_len} < 1" if kind != "dim" else "")) if w)
    if kind == "dim" and generator.random() < 0.3:
        return (dim,), {}, why  # max_len left to its default
    if generator.random() < 0.5:
        return (dim, max_len), {}, why
    return (dim,), {"max_len": max_len}, why


def bad_arguments_scenario(student: Any, calls: list[tuple[tuple, dict]]) -> str:
    cls = student.get("PositionalEncoding")
    seen = []
    for args, kwargs in calls:
        try:
            student.run(cls, *args, **kwargs)
            seen.append({"returned": True})
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
    return json.dumps(seen)


def generate_bad_input(generator: random.Random) -> tuple[int, int, GenInput, str]:
    """(dim, max_len, x, why): x of 0-2 or 4-5 dims, a wrong last dim, seq > max_len, or several at once."""
    dim = 2 * domain.small_int(generator, 1, 8)
    max_len = domain.small_int(generator, 1, 12)
    reasons = set(generator.sample(["dims", "last", "seq"], domain.pick(generator, [1, 1, 2, 3])))
    dims = domain.pick(generator, [0, 1, 2, 4, 5]) if "dims" in reasons else 3
    last = domain.pick(generator, [dim + 2, dim - 1, dim + 1, 1, 2 * dim]) if "last" in reasons else None
    if last is not None and last == dim:
        last = dim + 2
    seq = max_len + domain.pick(generator, [1, 1, generator.randint(2, 30)]) if "seq" in reasons else \
        generator.randint(0, max_len)
    spec = GenInput(domain.small_int(generator, 1, 3), seq, domain.pick(generator, GEN_DTYPES, [3, 1, 1, 1]),
                    last=last, dims=dims)
    why = []
    if dims != 3:
        why.append(f"x has {dims} dims, not 3")
    if last is not None and dims >= 1:
        why.append(f"the last dim is {last}, not dim = {dim}")
    if "seq" in reasons and dims >= 2:
        why.append(f"seq = {seq} > max_len = {max_len}")
    if not why:  # every reason fell away with the dims: a 0-dim x
        why.append(f"x has {dims} dims, not 3")
    return dim, max_len, spec, " and ".join(why)


def bad_input_scenario(student: Any, items: list[tuple[int, int, torch.Tensor]]) -> str:
    cls = student.get("PositionalEncoding")
    seen = []
    for dim, max_len, x in items:
        try:
            module = student.run(cls, dim, max_len)
            y = student.run(module, x)
            seen.append({"returned": {"type": type(y).__name__}})
        except StudentRaised as exc:
            seen.append({"raised": dataclasses.asdict(exc.error)})
    return json.dumps(seen)


@judge_only
def _in_chunks(student: Submission, scenario: Any, items: list[Any], size: int = 50) -> list[dict[str, Any]]:
    """One request per ``size`` items (no request runs long), the JSON replies decoded, error facts rebuilt."""
    seen: list[dict[str, Any]] = []
    for at in range(0, len(items), size):
        seen += json.loads(student.scenario(scenario, items[at:at + size]))
    for record in seen:
        if "raised" in record:
            record["raised"]["exception_types"] = tuple(record["raised"]["exception_types"])
    return seen
