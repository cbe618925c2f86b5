"""What crosses from the student's process back to the judge: observations, never live objects.

Student code runs in its own process (:mod:`graders.isolation`). What it returns is turned into a tree
of plain values by :func:`encode` *in that process*, written with ``torch.save`` and read by the judge
with ``torch.load(weights_only=True)``, which can only build tensors, numbers, strings and plain
containers: a hostile return value cannot run code in the judge while it is being read.
:func:`decode` then rebuilds values the checks can inspect:

- ``None``, bools, ints, floats, complex numbers, strings and bytes come back as themselves;
- lists, tuples, dicts, sets, ``Counter``, ``OrderedDict`` and ``torch.Size`` come back as those types;
  other subclasses of them (a named tuple, a ``defaultdict``, a student's own class) come back as
  :class:`StudentTuple` / :class:`StudentList` / :class:`StudentDict`, which behave like the base type
  and remember the student's type name;
- tensors come back as plain tensors (detached: :func:`tensor_facts` tells whether the student's one
  required grad and its ``grad_fn``) with the same values, dtype, shape, strides and storage offset;
  tensors that shared storage in the student's process share it in the judge too (one ``torch.save``
  keeps that), so "is the result a view of the input" can be judged here;
- NumPy scalars and arrays come back as NumPy scalars and arrays of the same dtype;
- anything else comes back as a :class:`Foreign`: its type name and its ``repr``.
"""

from __future__ import annotations

import collections
import io
import math
from typing import Any

import numpy as np
import torch

MAX_DEPTH = 64
MAX_ITEMS = 200_000
REPR_CHARS = 300

# Facts about a returned tensor that a plain tensor cannot carry (its grad_fn, the student's subclass),
# kept as an attribute of the decoded tensor (a dict keyed by tensors would compare them with ==).
_FACTS_ATTRIBUTE = "_course_student_facts"
_NUMPY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: dtypes the judge rebuilds itself


class Foreign:
    """A value the judge cannot rebuild: shown by the student's type name and repr."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Foreign) and (other.type_name, other.text) == (self.type_name, self.text)

    __hash__ = None  # type: ignore[assignment]


class StudentTuple(tuple):
    """A tuple subclass the student returned (a named tuple, say): behaves as a tuple."""

    type_name = "tuple"
    fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        if self.fields:
            inner = ", ".join(f"{f}={v!r}" for f, v in zip(self.fields, self))
            return f"{self.type_name.rsplit('.', 1)[-1]}({inner})"
        return f"{self.type_name.rsplit('.', 1)[-1]}{tuple(self)!r}"


class StudentList(list):
    type_name = "list"


class StudentDict(dict):
    type_name = "dict"


def type_name(value: Any) -> str:
    """The name of the type the student's value had (``Foreign`` and friends remember it)."""
    name = getattr(value, "type_name", None) if isinstance(value, (Foreign, StudentTuple, StudentList, StudentDict)) else None
    return (name or type(value).__qualname__).rsplit(".", 1)[-1]


def tensor_facts(t: torch.Tensor) -> dict:
    """``{"grad_fn": name or None, "requires_grad": bool, "type": name}`` of a returned tensor."""
    return getattr(t, _FACTS_ATTRIBUTE, None) or {"grad_fn": None, "requires_grad": t.requires_grad, "type": "Tensor"}


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001 - a student's __repr__ may raise anything
        text = f"<{type(value).__qualname__} whose repr raised {type(exc).__name__}>"
    if not isinstance(text, str):
        text = f"<{type(value).__qualname__}>"
    return text if len(text) <= REPR_CHARS else text[: REPR_CHARS - 3] + "..."


class _Encoder:
    def __init__(self) -> None:
        self.items = 0
        self.path: set[int] = set()

    def __call__(self, value: Any, depth: int = 0) -> Any:
        self.items += 1
        if depth > MAX_DEPTH or self.items > MAX_ITEMS:
            return ("foreign", "too deep or too large", f"<{type(value).__qualname__}: nested too deeply or too large to show>")
        cls = type(value)
        if value is None or cls in (bool, int, str, bytes):
            return ("plain", value)
        if cls is float:
            return ("float", value if math.isfinite(value) else repr(value))
        if cls is complex:
            return ("complex", ("float", value.real) if math.isfinite(value.real) else ("float", repr(value.real)),
                    ("float", value.imag) if math.isfinite(value.imag) else ("float", repr(value.imag)))
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, np.generic) and value.dtype.kind in _NUMPY_KINDS:
            return ("np_scalar", value.dtype.str, ("plain", value.item()) if value.dtype.kind in "biu"
                    else self(value.item(), depth + 1))
        if isinstance(value, np.ndarray) and value.dtype.kind in _NUMPY_KINDS:
            return ("ndarray", value.dtype.str, torch.from_numpy(np.ascontiguousarray(value).astype(value.dtype.newbyteorder("="))
                                                                 if value.dtype.byteorder == ">" else np.ascontiguousarray(value)).clone())
        if isinstance(value, torch.dtype):
            return ("dtype", str(value).removeprefix("torch."))
        if isinstance(value, torch.device):
            return ("device", str(value))
        if id(value) in self.path:
            return ("foreign", cls.__qualname__, "<a container that contains itself>")
        if isinstance(value, (tuple, list, dict, set, frozenset)):
            self.path.add(id(value))
            try:
                return self._container(value, depth)
            except Exception:  # noqa: BLE001 - a student's container that cannot be walked is shown, not crashed on
                return ("foreign", _qualified(cls), _safe_repr(value))
            finally:
                self.path.discard(id(value))
        return ("foreign", _qualified(cls), _safe_repr(value))

    def _tensor(self, t: torch.Tensor) -> Any:
        try:
            facts = {"grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
                     "requires_grad": bool(t.requires_grad), "type": type(t).__qualname__}
            plain = t.detach()
            if type(plain) is not torch.Tensor:
                plain = plain.as_subclass(torch.Tensor)
            if plain.layout != torch.strided or plain.is_quantized or plain.is_nested:
                raise TypeError("not a strided tensor")
            return ("tensor", plain, facts)
        except BaseException:  # noqa: BLE001 - an exotic tensor is still shown, not crashed on
            return ("foreign", _qualified(type(t)), _safe_repr(t))

    def _container(self, value: Any, depth: int) -> Any:
        cls = type(value)
        name = _qualified(cls)
        if isinstance(value, torch.Size):
            return ("size", [int(v) for v in value])
        if isinstance(value, dict):
            pairs = [(self(k, depth + 1), self(v, depth + 1)) for k, v in list(value.items())]
            extra = None
            if isinstance(value, collections.defaultdict):
                extra = _safe_repr(value.default_factory)
            return ("dict", name, pairs, extra)
        items = [self(v, depth + 1) for v in list(value)]
        if isinstance(value, tuple):
            fields = tuple(getattr(cls, "_fields", ())) if all(isinstance(f, str) for f in getattr(cls, "_fields", ())) else ()
            return ("tuple", name, items, list(fields))
        if isinstance(value, list):
            return ("list", name, items)
        return ("set", name, items)


def encode(value: Any) -> Any:
    """Turn any value into the plain tree :func:`decode` reads (runs in the student's process)."""
    return _Encoder()(value)


def to_bytes(tree: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(tree, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=True, map_location=None)


_KNOWN = {
    "builtins.tuple": tuple, "builtins.list": list, "builtins.dict": dict, "builtins.set": set,
    "builtins.frozenset": frozenset, "collections.Counter": collections.Counter,
    "collections.OrderedDict": collections.OrderedDict,
}


def _float(node: Any) -> float:
    value = node[1]
    return float(value) if isinstance(value, str) else value


def decode(node: Any) -> Any:
    """Rebuild, in the judge, the value that :func:`encode` described."""
    kind = node[0]
    if kind == "plain":
        return node[1]
    if kind == "float":
        return _float(node)
    if kind == "complex":
        return complex(_float(node[1]), _float(node[2]))
    if kind == "tensor":
        tensor, facts = node[1], node[2]
        setattr(tensor, _FACTS_ATTRIBUTE, dict(facts))
        return tensor
    if kind == "np_scalar":
        return np.dtype(node[1]).type(decode(node[2]))
    if kind == "ndarray":
        return node[2].numpy().astype(np.dtype(node[1]), copy=False)
    if kind == "dtype":
        dtype = getattr(torch, node[1], None)
        return dtype if isinstance(dtype, torch.dtype) else Foreign("torch.dtype", node[1])
    if kind == "device":
        return torch.device(node[1])
    if kind == "size":
        return torch.Size(node[1])
    if kind == "foreign":
        return Foreign(node[1], node[2])
    if kind == "dict":
        name, pairs, factory = node[1], node[2], node[3]
        keys = [decode(k) for k, _ in pairs]
        values = [decode(v) for _, v in pairs]
        try:
            built = dict(zip(keys, values))
        except TypeError:  # an unhashable key the judge rebuilt as a list: show it, do not crash
            return Foreign(name, "{" + ", ".join(f"{k!r}: {v!r}" for k, v in zip(keys, values)) + "}")
        if name in _KNOWN:
            return _KNOWN[name](built)
        result = StudentDict(built)
        result.type_name = name
        result.default_factory = factory  # type: ignore[attr-defined]
        return result
    if kind == "tuple":
        name, items, fields = node[1], [decode(i) for i in node[2]], tuple(node[3])
        if name == "builtins.tuple":
            return tuple(items)
        result = StudentTuple(items)
        result.type_name, result.fields = name, fields
        return result
    if kind == "list":
        name, items = node[1], [decode(i) for i in node[2]]
        if name == "builtins.list":
            return items
        result = StudentList(items)
        result.type_name = name
        return result
    if kind == "set":
        name, items = node[1], [decode(i) for i in node[2]]
        try:
            return _KNOWN.get(name, set)(items) if name in _KNOWN else Foreign(name, "{" + ", ".join(map(repr, items)) + "}")
        except TypeError:
            return Foreign(name, "{" + ", ".join(map(repr, items)) + "}")
    raise ValueError(f"unknown wire node {kind!r}")
