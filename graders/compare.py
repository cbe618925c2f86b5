"""Comparing what came back with what was expected, and saying how they differ.

One meaning per helper, used by every exercise: :func:`close` is the tolerance test, :func:`show` prints
a value with enough digits that two different numbers never print the same, :func:`difference` says
where two tensors differ and by how much.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import Any

import torch

from graders.wire import Foreign, type_name  # noqa: F401 - re-exported for the exercise modules


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` rather than ``torch.float32``, as students write it."""
    return str(dtype).removeprefix("torch.")


def show_number(x: Any) -> str:
    """``repr`` of a float is the shortest text that reads back as the same float: never ambiguous."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return repr(x)
    if isinstance(x, numbers.Integral):
        return str(int(x))
    return repr(float(x))


def show(value: Any, limit: int = 12) -> str:
    """A value as the student would print it, shortened; tensors with dtype and shape."""
    if isinstance(value, torch.Tensor):
        return show_tensor(value, limit)
    if isinstance(value, float):
        return show_number(value)
    text = repr(value)
    return text if len(text) <= 400 else text[:397] + "..."


def show_tensor(t: torch.Tensor, limit: int = 12) -> str:
    flat = t.detach().reshape(-1).cpu()
    values = [show_number(v) if not isinstance(v, bool) else repr(v) for v in flat[:limit].tolist()]
    more = f", … ({t.numel()} values)" if t.numel() > limit else ""
    return f"[{', '.join(values)}{more}] (shape {tuple(t.shape)}, {dtype_name(t.dtype)})"


def describe_tensor(t: torch.Tensor) -> str:
    """Shape, dtype, device and layout: what a student needs to rebuild the input."""
    layout = "contiguous" if t.is_contiguous() else f"strides {t.stride()}"
    offset = f", storage offset {t.storage_offset()}" if t.storage_offset() else ""
    return f"a {dtype_name(t.dtype)} tensor of shape {tuple(t.shape)} on {t.device.type} ({layout}{offset})"


def close(got: torch.Tensor, expected: torch.Tensor, *, rtol: float, atol: float) -> bool:
    """Same shape, and every element within ``atol + rtol * |expected|`` (NaN matches NaN, inf matches inf)."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return False
    a = got.detach().to("cpu", torch.float64)
    b = expected.detach().to("cpu", torch.float64)
    return bool(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).all())


def close_number(got: float, expected: float, *, rtol: float, atol: float = 0.0, any_nonfinite: bool = False) -> bool:
    """Two floats within ``atol + rtol * |expected|``. NaN matches NaN and inf the same inf; with
    ``any_nonfinite`` (a spec that says "inf or NaN") any non-finite result matches any non-finite expected one."""
    if not (math.isfinite(got) and math.isfinite(expected)):
        if any_nonfinite:
            return not math.isfinite(got) and not math.isfinite(expected)
        return (math.isnan(got) and math.isnan(expected)) or got == expected
    return abs(got - expected) <= atol + rtol * abs(expected)


def difference(got: torch.Tensor, expected: torch.Tensor, *, rtol: float = 0.0, atol: float = 0.0) -> str:
    """Where the largest disagreement is, by how much, and how many elements disagree."""
    a = got.detach().to("cpu", torch.float64)
    b = expected.detach().to("cpu", torch.float64)
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} instead of {tuple(b.shape)}"
    bad = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    count = int(bad.sum())
    if not count:
        return "no element differs"
    error = torch.where(bad, (a - b).abs().nan_to_num(nan=math.inf, posinf=math.inf), torch.zeros_like(a))
    flat = int(error.reshape(-1).argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)) if a.dim() else ()
    where = f"at index {list(index)}" if index else "at the only element"
    tolerance = f" (tolerance {show_number(atol + rtol * abs(b[index].item()))})" if (rtol or atol) else ""
    return (f"{count} of {a.numel()} elements differ; the largest difference is {where}: expected "
            f"{show_number(b[index].item())}, returned {show_number(a[index].item())}{tolerance}")


@contextlib.contextmanager
def one_torch_thread():
    """Run the block with one intra-op thread (the checks' tensors are tiny), then restore the setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
