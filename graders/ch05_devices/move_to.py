"""move_to(obj, device, *, non_blocking=False): every tensor inside dicts, lists, tuples, named tuples and
dataclasses moved to ``device``; containers rebuilt, everything else returned as the very same object.

The checks are about object identity ("the very same object", "not copied", "never modified"), which only
the student's own process can see. So a scenario builds each input there (from a named recipe, with a fixed
seed), walks it to record where every object sits (its *path*, ``obj['pair'][1]``), calls the student's
``move_to`` under a recorder of ``Tensor.to`` calls, and returns a description of the result (types, keys,
devices, dtypes, which input object each node *is*) and of the input before and after the call. The judge
builds the same input from the same recipe, derives what the specification promises for it with its own
walk, and compares the two descriptions.

Grading runs on every device there is plus ``meta``, which exists everywhere: on a machine without a GPU the
tensors really move (cpu -> meta), and tensors already on the device (cpu -> cpu, meta -> meta) must come
back untouched. With a GPU, cpu -> cuda moves are graded too, values included.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import itertools
import json
import random
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from graders import domain
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail
from graders.registry import exercise, judge_only
from graders.student import Submission

MOVE_TO = exercise("move_to", chapter="05_devices", names=["move_to"])

MAX_NODES = 2000  # a student's result is described up to this many nodes (the inputs have < 100)
TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)  # what Tensor.to returns for the inputs here


# ==================================================================================================
# The objects the inputs are made of (module level: both processes build them from the same recipes)
# ==================================================================================================
class Batch(NamedTuple):
    inputs: Any
    targets: Any


class Pair(NamedTuple):
    left: Any
    right: Any
    note: str = "pair"


_SERIALS = itertools.count(1)  # each instance built through __init__ gets a new serial; a copy keeps the old one


@dataclasses.dataclass
class Sample:
    image: Any
    label: Any
    extra: Any = None

    def __post_init__(self) -> None:
        self.serial = next(_SERIALS)


@dataclasses.dataclass(frozen=True)
class FrozenSample:
    features: Any
    mask: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "serial", next(_SERIALS))


@dataclasses.dataclass
class WithDerivedField:
    """A dataclass with an ``init=False`` field: replace() cannot rebuild it, so it is returned as is."""

    data: Any
    cached: Any = dataclasses.field(init=False, default=None)


class TaggedDict(dict):
    """A user's dict subclass (no __init__ of its own)."""


class TensorList(list):
    """A list subclass: not an exact list, so returned as is."""


class TensorTuple(tuple):
    """A tuple subclass that is not a named tuple: returned as is."""


class Holder:
    """An object of another type that holds a tensor: returned as is, its tensor untouched."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


class Movable:
    """An object of another type with a ``.to`` method of its own (as a module or a tokenizer output has): returned
    as the very same object, ``.to`` never called (calling whatever has a ``.to`` returns a new object here)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def to(self, *args: Any, **kwargs: Any) -> "Movable":
        return Movable(self.tensor.to(*args, **kwargs))


def _t(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu") -> torch.Tensor:
    if dtype.is_floating_point:
        made = torch.randn(*shape, dtype=dtype)
    elif dtype == torch.bool:
        made = torch.rand(*shape) > 0.5
    else:
        low, high = (-2**40, 2**40) if dtype == torch.int64 else (0, 100)  # int64 values past 32 bits
        made = torch.randint(low, high, shape, dtype=dtype)
    return made.to(device)  # random values are made on the CPU, then moved: the same numbers on every device


def _nested() -> Any:
    shared = _t(3)
    base = _t(4, 6)
    leaf = _t(2, 2).requires_grad_()
    return {"x": _t(2, 3), "pair": (_t(5, dtype=torch.int64), [shared, {"deep": shared}]), "n": 3,
            "views": [base.t(), base[1:, ::2], base[0, 0]], "grad": leaf, "mask": _t(4, dtype=torch.bool)}


def _bare_tensor() -> Any:
    return _t(3, 2, dtype=torch.float64)


def _structured() -> Any:
    return [Batch(_t(2, 4), _t(2, dtype=torch.int64)),
            Sample(image=_t(1, 3, 3), label=_t(dtype=torch.int64), extra={"crop": (_t(2), 7)}),
            FrozenSample(features=_t(3), mask=Pair(_t(3, dtype=torch.bool), _t(1)))]


def _containers() -> Any:
    ordered = collections.OrderedDict([("zeta", _t(2)), ("alpha", _t(1)), ("mid", [_t(3)])])
    grouped = collections.defaultdict(list)
    grouped["b"].append(_t(2))
    grouped["a"].append(_t(1, dtype=torch.int32))
    tagged = TaggedDict(w=_t(2), v=(_t(1),))
    return {"ordered": ordered, "grouped": grouped, "tagged": tagged, 10: _t(1), (1, "k"): [_t(1)], _t(1): "tensor key",
            "tuple": (_t(2),), "list": [_t(2), ()], "empty": {}, "pair": Pair(_t(1), _t(2), "kept"),
            "frozen": FrozenSample(features=_t(2), mask=None)}


def _top_level_ordered() -> Any:
    return collections.OrderedDict([("second", _t(2)), ("first", Batch(_t(1), [_t(2)]))])


def _top_level_defaultdict() -> Any:
    made = collections.defaultdict(lambda: "fallback")  # a factory that cannot be pickled: built here, both sides
    made["q"] = _t(2)
    made["p"] = {"inner": _t(1)}
    return made


def _top_level_named_tuple() -> Any:
    return Batch(inputs={"ids": _t(3, dtype=torch.int64)}, targets=_t(3))


def _top_level_frozen() -> Any:
    return FrozenSample(features=[_t(2), _t(2)], mask=_t(2, dtype=torch.bool))


def _other_objects() -> Any:
    holder_tensor = _t(2)
    derived = WithDerivedField(data=_t(3))
    derived.cached = _t(1)
    return {"moved": _t(2), "int": 12345, "float": 2.5, "str": "text", "none": None, "bytes": b"raw",
            "array": np.arange(6.0).reshape(2, 3), "set": {1, 2, 3}, "frozenset": frozenset({"a"}),
            "class": Sample, "dataclass_class": FrozenSample, "holder": Holder(holder_tensor),
            "list_subclass": TensorList([_t(2)]), "tuple_subclass": TensorTuple((_t(2),)),
            "derived": derived, "range": range(3), "device": torch.device("cpu"), "dtype": torch.float16,
            "function": _t, "nested": [Holder(_t(1)), {1.5, 2.5}, np.zeros(2, dtype=np.float32)]}


def _other_objects_in_tuple() -> Any:
    return (_t(1), np.ones(3), Holder(_t(1)), "s", None, TensorList([_t(1)]))


def _mixed_devices(device: str) -> Any:
    """Tensors already on ``device`` next to tensors on the CPU."""
    there = _t(3, device=device)
    return {"there": there, "cpu": _t(2), "again": there, "list": [_t(2, device=device), _t(1)],
            "pair": Batch(_t(1, device=device), _t(1, dtype=torch.int64)),
            "sample": Sample(image=_t(2, device=device), label=_t(1)), "grad": _t(2, device=device).requires_grad_(),
            "parameter": torch.nn.Parameter(_t(3, device=device))}


def _already_there(device: str) -> Any:
    return {"a": _t(2, device=device), "b": [_t(1, device=device), (_t(3, dtype=torch.int64, device=device),)]}


RECIPES: dict[str, Callable[..., Any]] = {
    "nested": _nested, "bare_tensor": _bare_tensor, "structured": _structured, "containers": _containers,
    "top_level_ordered": _top_level_ordered, "top_level_defaultdict": _top_level_defaultdict,
    "top_level_named_tuple": _top_level_named_tuple, "top_level_frozen": _top_level_frozen,
    "other_objects": _other_objects, "other_objects_in_tuple": _other_objects_in_tuple,
    "mixed_devices": _mixed_devices, "already_there": _already_there,
}

# What the student is shown of each input (the recipes are the grader's; this is the student's view).
SHOWN = {
    "nested": "{'x': tensor(2, 3), 'pair': (int64 tensor(5), [t, {'deep': t}]) with t one tensor used twice, 'n': 3, "
              "'views': [three views of one (4, 6) tensor], 'grad': leaf tensor with requires_grad=True, "
              "'mask': bool tensor}",
    "bare_tensor": "a float64 tensor of shape (3, 2) (obj is the tensor itself)",
    "structured": "[Batch(inputs, targets) (a named tuple), Sample(image, label, extra={'crop': (tensor, 7)}) "
                  "(a dataclass), FrozenSample(features, mask=Pair(...)) (a frozen dataclass holding a named tuple)]",
    "containers": "{'ordered': OrderedDict(zeta, alpha, mid), 'grouped': defaultdict(list) with keys b, a, "
                  "'tagged': a dict subclass, 10: tensor, (1, 'k'): [tensor], 'tuple': (tensor,), 'list': [tensor, ()], "
                  "'empty': {}, 'pair': Pair(tensor, tensor, 'kept') (a named tuple), 'frozen': FrozenSample(...), "
                  "a tensor used as a key: 'tensor key'}",
    "top_level_ordered": "OrderedDict([('second', tensor), ('first', Batch(tensor, [tensor]))])",
    "top_level_defaultdict": "defaultdict(lambda: 'fallback') with keys 'q' (a tensor) and 'p' ({'inner': tensor})",
    "top_level_named_tuple": "Batch(inputs={'ids': int64 tensor}, targets=tensor) (a named tuple)",
    "top_level_frozen": "FrozenSample(features=[tensor, tensor], mask=bool tensor) (a frozen dataclass)",
    "other_objects": "{'moved': tensor, 'int', 'float', 'str', 'none', 'bytes', 'array': a NumPy array, 'set', "
                     "'frozenset', 'class': a class, 'dataclass_class': a dataclass class (not an instance), "
                     "'holder': an object holding a tensor, 'list_subclass', 'tuple_subclass' (not named tuples), "
                     "'derived': a dataclass with an init=False field, 'range', 'device', 'dtype', 'function', "
                     "'nested': [an object holding a tensor, a set, a NumPy array]}",
    "other_objects_in_tuple": "(tensor, a NumPy array, an object holding a tensor, 'str', None, a list subclass)",
    "mixed_devices": "{'there': tensor t already on {device}, 'cpu': tensor on cpu, 'again': t, "
                     "'list': [tensor on {device}, tensor on cpu], 'pair': Batch(...), 'sample': Sample(...), "
                     "'grad': tensor on {device} with requires_grad=True, 'parameter': an nn.Parameter on {device}}",
    "already_there": "{'a': tensor, 'b': [tensor, (int64 tensor,)]}, every tensor already on {device}",
}


def build(recipe: str, seed: int, source_device: str | None) -> Any:
    torch.manual_seed(seed)
    maker = RECIPES[recipe]
    return maker(source_device) if source_device is not None else maker()


# ==================================================================================================
# Describing objects (used in the runner on the student's result, and in the judge on the expectation)
# ==================================================================================================
def _is_named_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple)


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ in ("builtins", __name__) else f"{cls.__module__}.{cls.__qualname__}"


def paths_of(obj: Any) -> dict[int, str]:
    """``id`` of every object reachable through the spec's containers (and a few others) -> its first path."""
    found: dict[int, str] = {}

    def visit(value: Any, path: str) -> None:
        if id(value) in found:
            return
        found[id(value)] = path
        if isinstance(value, dict):
            if isinstance(value, collections.defaultdict):
                found.setdefault(id(value.default_factory), f"{path}.default_factory")
            for key, item in value.items():
                visit(item, f"{path}[{key!r}]")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                visit(item, f"{path}[{i}]")
        elif _is_dataclass_instance(value):
            for field in dataclasses.fields(value):
                visit(getattr(value, field.name), f"{path}.{field.name}")
        elif isinstance(value, Holder):
            visit(value.tensor, f"{path}.tensor")

    visit(obj, "obj")
    return found


def _factory(item: collections.defaultdict, paths: dict[int, str]) -> str:
    """The input's own factory by its path (``obj['grouped'].default_factory``); another one by its name."""
    factory = item.default_factory
    if factory is None:
        return "None"
    return paths.get(id(factory)) or getattr(factory, "__qualname__", _type_name(factory))


def describe(value: Any, paths: dict[int, str], *, with_values: bool = True) -> dict[str, Any]:
    """A plain description of ``value``: its type, which input object it is (``same``), and its contents.

    Only the containers the specification names (and the grader's Holder) are entered; anything else is
    described by its type alone, so no student code (a __repr__, a property) runs here.
    """
    count = [0]

    def walk(item: Any, depth: int) -> dict[str, Any]:
        count[0] += 1
        node: dict[str, Any] = {"type": _type_name(item), "same": paths.get(id(item))}
        if depth > 12 or count[0] > MAX_NODES:
            node["kind"] = "cut"
            return node
        if isinstance(item, torch.Tensor):
            # Read through torch's own descriptors, so that a Tensor subclass cannot claim another device.
            base = torch._C.TensorBase
            device = base.device.__get__(item)
            node.update(kind="tensor", device=str(device), dtype=str(base.dtype.__get__(item)).removeprefix("torch."),
                        shape=list(base.shape.__get__(item)), requires_grad=bool(base.requires_grad.__get__(item)),
                        version=int(base._version.__get__(item)), subclass=type(item) not in TENSOR_TYPES)
            if with_values and device.type != "meta":
                with torch._C.DisableTorchFunction():
                    node["values"] = torch.Tensor.detach(item).to("cpu", copy=True)
        elif isinstance(item, dict):
            node.update(kind="dict", keys=[repr(k) for k in item.keys()],
                        items=[walk(v, depth + 1) for v in list(item.values())])
            if isinstance(item, collections.defaultdict):
                node["factory"] = _factory(item, paths)
        elif isinstance(item, (list, tuple)):
            node.update(kind="sequence", items=[walk(v, depth + 1) for v in list(item)])
            if _is_named_tuple(item):
                node["fields"] = list(type(item)._fields)
        elif _is_dataclass_instance(item):
            node.update(kind="dataclass", fields={f.name: walk(getattr(item, f.name, None), depth + 1)
                                                  for f in dataclasses.fields(item)})
            if isinstance(item, (Sample, FrozenSample)):
                node["serial"] = item.__dict__.get("serial")
        elif isinstance(item, (Holder, Movable)):
            node.update(kind="holder", fields={"tensor": walk(item.tensor, depth + 1)})
        elif type(item) is torch.nn.Linear:  # the grader's own module: its parameters must stay where they are
            node.update(kind="holder", fields={name: walk(value, depth + 1) for name, value
                                               in (("weight", item.weight), ("bias", item.bias))})
        else:
            node["kind"] = "other"
        return node

    return walk(value, 0)


# ==================================================================================================
# Inside the runner
# ==================================================================================================
class _ToCalls(TorchFunctionMode):
    """Records the ``non_blocking`` that reaches each ``Tensor.to`` call (and counts other ways of moving)."""

    def __init__(self) -> None:
        super().__init__()
        self.to_calls: list[bool] = []
        self.other_moves: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.to:
            self.to_calls.append(_non_blocking_of(args, kwargs))
        elif func in (torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.copy_):
            self.other_moves.append(func.__name__)
        return func(*args, **kwargs)


def _non_blocking_of(args: tuple, kwargs: dict) -> Any:
    # Tensor.to(device, dtype, non_blocking, copy), to(dtype, non_blocking, copy), to(other, non_blocking, copy):
    # non_blocking is the first positional bool after the target(s), or the keyword.
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    for value in args[1:]:
        if isinstance(value, bool):
            return value
    return False


def move_scenario(student: RunnerStudent, recipe: str, seed: int, source_device: str | None, target: Any,
                  non_blocking: bool | None) -> dict[str, Any]:
    """Build the input, call ``move_to`` on it, and describe the input before, the result, and the input after."""
    obj = build(recipe, seed, source_device)
    paths = paths_of(obj)
    before = describe(obj, paths)
    kwargs = {} if non_blocking is None else {"non_blocking": non_blocking}
    recorder = _ToCalls()
    seen: dict[str, Any] = {"before": before}
    try:
        with recorder:
            result = student.call("move_to", obj, target, **kwargs)
    except StudentRaised as exc:
        seen["error"] = dataclasses.asdict(exc.error)
        return seen
    seen["result"] = describe(result, paths)
    seen["after"] = describe(obj, paths)
    seen["to_calls"] = recorder.to_calls
    seen["other_moves"] = recorder.other_moves
    return seen


# ==================================================================================================
# In the judge: what the specification promises for an input
# ==================================================================================================
@judge_only
def expected(obj: Any, target: Any, paths: dict[int, str]) -> dict[str, Any]:
    """The description of ``move_to(obj, target)`` as the specification defines it (its own walk)."""

    def walk(item: Any) -> dict[str, Any]:
        path = paths.get(id(item))
        if isinstance(item, torch.Tensor):
            moved = item.to(target)
            node = {"kind": "tensor", "type": _type_name(moved), "same": path if moved is item else None,
                    "device": str(moved.device), "dtype": str(item.dtype).removeprefix("torch."),
                    "shape": list(item.shape), "requires_grad": bool(item.requires_grad)}
            if moved.device.type != "meta":
                node["values"] = item.detach().to("cpu", copy=True)
            return node
        if isinstance(item, dict):
            node = {"kind": "dict", "type": _type_name(item), "same": None, "keys": [repr(k) for k in item.keys()],
                    "items": [walk(v) for v in item.values()]}
            if isinstance(item, collections.defaultdict):
                node["factory"] = _factory(item, paths)
            return node
        if type(item) in (list, tuple) or _is_named_tuple(item):
            node = {"kind": "sequence", "type": _type_name(item), "same": None, "items": [walk(v) for v in item]}
            if _is_named_tuple(item):
                node["fields"] = list(type(item)._fields)
            return node
        if _is_dataclass_instance(item) and all(f.init for f in dataclasses.fields(item)):
            return {"kind": "dataclass", "type": _type_name(item), "same": None,
                    "fields": {f.name: walk(getattr(item, f.name)) for f in dataclasses.fields(item)}}
        return {"kind": "as_is", "type": _type_name(item), "same": path}

    return walk(obj)


def _children(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, node) of each direct child of a container node of an expected description."""
    if node["kind"] == "dict":
        return [(f"{path}[{key}]", item) for key, item in zip(node["keys"], node["items"])]
    if node["kind"] == "sequence":
        return [(f"{path}[{i}]", item) for i, item in enumerate(node["items"])]
    if node["kind"] == "dataclass":
        return [(f"{path}.{name}", item) for name, item in node["fields"].items()]
    return []


def _leaves(node: dict[str, Any], path: str = "obj") -> list[tuple[str, dict[str, Any]]]:
    """(path, node) for every tensor and every object returned as is, in the expected description."""
    if node["kind"] in ("tensor", "as_is"):
        return [(path, node)]
    return [found for child_path, child in _children(node, path) for found in _leaves(child, child_path)]


def _find(got: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
    """The node of the student's result at ``path`` (a path of the expected description), leniently: a key
    of a dict, an index of any sequence, a field of a dataclass or the key of a dict made from one."""
    node = got
    for step in _steps(path):
        if node is None:
            return None
        kind, key = step
        if node.get("kind") == "dict":
            node = dict(zip(node["keys"], node["items"])).get(key if kind == "key" else repr(key))
        elif node.get("kind") == "sequence" and kind == "index":
            node = node["items"][key] if key < len(node["items"]) else None
        elif node.get("kind") == "sequence" and kind == "field" and node.get("fields") and key in node["fields"]:
            node = node["items"][node["fields"].index(key)]
        elif node.get("kind") in ("dataclass", "holder") and kind == "field":
            node = node["fields"].get(key)
        else:
            return None
    return node


def _closing_bracket(path: str, i: int) -> int:
    """The "]" closing the "[" at ``i``: the first one after which the key reads back as a Python literal; for a
    key whose repr is no literal (a tensor), the first at which the brackets outside quotes balance."""
    ends = [j for j, c in enumerate(path) if c == "]" and j > i]
    for j in ends:
        try:
            ast.literal_eval(path[i + 1:j])
            return j
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    depth, quote = 0, None
    for j in range(i, len(path)):
        c = path[j]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0 and c == "]":
                return j
    raise ValueError(f"unbalanced path {path!r}")


def _steps(path: str) -> list[tuple[str, Any]]:
    """``obj['a'][0].image`` -> [("key", "'a'"), ("index", 0), ("field", "image")]."""
    steps, i = [], 3  # after "obj"
    while i < len(path):
        if path[i] == ".":
            j = i + 1
            while j < len(path) and (path[j].isalnum() or path[j] == "_"):
                j += 1
            steps.append(("field", path[i + 1:j]))
            i = j
        else:  # "[...]": an index, or a repr'd key, which may itself hold brackets and quotes
            j = _closing_bracket(path, i)
            inner = path[i + 1:j]
            steps.append(("index", int(inner)) if inner.isdigit() else ("key", inner))
            i = j + 1
    return steps


# ==================================================================================================
# Running a case and explaining what differs
# ==================================================================================================
class Case(NamedTuple):
    recipe: str
    target: Any  # what the student is given: "meta", torch.device("meta"), "cpu", ...
    source_device: str | None = None
    non_blocking: bool | None = None  # None: left out (the default)


def _target_text(target: Any) -> str:
    return f"torch.device({str(target)!r})" if isinstance(target, torch.device) else repr(target)


def call_text(case: Case) -> str:
    shown = SHOWN[case.recipe].replace("{device}", str(case.source_device))
    extra = "" if case.non_blocking is None else f", non_blocking={case.non_blocking}"
    return f"move_to(obj, {_target_text(case.target)}{extra}) with obj = {shown}"


class Observed(NamedTuple):
    case: Case
    seen: dict[str, Any]
    expect: dict[str, Any]


def run_case(student: Submission, case: Case, index: int) -> Observed:
    seed = 1000 + index
    seen = student.scenario(move_scenario, case.recipe, seed, case.source_device, case.target, case.non_blocking)
    if "error" in seen:
        raise StudentCodeError(StudentError(**seen["error"]), call_text(case))
    obj = build(case.recipe, seed, case.source_device)
    return Observed(case, seen, expected(obj, case.target, paths_of(obj)))


def _target_device(case: Case) -> torch.device:
    return torch.device(case.target)


def tensor_problems(observed: Observed) -> list[tuple[str, str]]:
    """(path, what is wrong) for every expected tensor the student's result does not have, moved as promised."""
    problems = []
    for path, want in _leaves(observed.expect):
        if want["kind"] != "tensor":
            continue
        got = _find(observed.seen["result"], path)
        if got is None or got.get("kind") != "tensor":
            what = "is missing from the result" if got is None else f"is a {got['type']}, not a tensor"
            problems.append((path, f"the tensor at {path} {what}"))
            continue
        if got.get("subclass"):
            problems.append((path, f"the tensor at {path} came back as a {got['type']}, a subclass of Tensor that the "
                                   "input was not; return what t.to(device) returns"))
        elif got["device"] != want["device"]:
            problems.append((path, f"the tensor at {path} is on {got['device']}, not on {want['device']}"))
        elif got["dtype"] != want["dtype"]:
            problems.append((path, f"the tensor at {path} changed dtype: {want['dtype']} became {got['dtype']}"))
        elif got["shape"] != want["shape"]:
            problems.append((path, f"the tensor at {path} changed shape: {want['shape']} became {got['shape']}"))
        elif got["requires_grad"] != want["requires_grad"]:
            problems.append((path, f"the tensor at {path} has requires_grad={got['requires_grad']}, but the input's "
                                   f"has {want['requires_grad']} (Tensor.to keeps it; a detach() or a new tensor "
                                   "loses it)"))
        elif "values" in want and ("values" not in got or not _same_values(got["values"], want["values"])):
            problems.append((path, f"the tensor at {path} holds other values than the input's"))
    return problems


def _same_values(a: Any, b: Any) -> bool:
    """Two tensors' values (or, in generated cases, the hex of their bytes) are the same."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return torch.equal(a, b)


def _kind_of(node: dict[str, Any]) -> str:
    if node["kind"] == "sequence":
        return "named tuple" if node.get("fields") else node["type"]
    if node["kind"] == "dataclass":
        return "dataclass"
    return "dict" if node["type"] == "dict" else node["type"]


def _tensors_under(node: dict[str, Any], path: str = "obj",
                   kinds: frozenset = frozenset()) -> list[tuple[str, frozenset]]:
    """(path, the kinds of every container above it) for each expected tensor."""
    if node["kind"] == "tensor":
        return [(path, kinds)]
    if node["kind"] == "as_is":
        return []
    inner = kinds | {_kind_of(node)}
    return [found for child_path, item in _children(node, path) for found in _tensors_under(item, child_path, inner)]


def _move_cause(observed: Observed, problems: list[tuple[str, str]]) -> str | None:
    """A cause when the missed tensors are exactly those below one kind of container (at any depth)."""
    missed = {p for p, _ in problems}
    tensors = _tensors_under(observed.expect)
    if len(tensors) == 1 and tensors[0][0] == "obj" and missed == {"obj"}:
        return "obj itself is a tensor here: move_to must move a bare tensor too, not only containers"
    for kind in sorted({k for _, kinds in tensors for k in kinds}):
        below = {p for p, kinds in tensors if kind in kinds}
        if below == missed and len(below) < len(tensors):
            plural = kind + ("es" if kind.endswith("s") else "s")
            return (f"every tensor inside a {kind} was missed, and only those: move_to does not recurse into {plural}"
                    + (" (test for named tuples and dataclasses before the plain tuple/dict cases, and rebuild "
                       "them)" if kind in ("named tuple", "dataclass") else ""))
    return None


def require_moved(observed: Observed, check_words: str) -> None:
    """A check that judges *what else* move_to did first makes sure it moved the tensors it had to."""
    problems = tensor_problems(observed)
    if problems:
        fail(f"{call_text(observed.case)}\n  {problems[0][1]}; {check_words} can only be judged once move_to moves "
             f"every tensor inside the containers to the device ({len(problems)} tensor(s) not moved as specified)")


def _cases(device: torch.device, cpu_cases: list[Case], cuda_cases: list[Case]) -> list[Case]:
    """The cases on every device there is: meta (everywhere), and cuda where a GPU is."""
    return cpu_cases + (cuda_cases if device.type == "cuda" else [])


def _run_all(student: Submission, cases: list[Case]) -> list[Observed]:
    return [run_case(student, case, i) for i, case in enumerate(cases)]


# ==================================================================================================
# Checks
# ==================================================================================================
@MOVE_TO.check(points=2)
def moves_every_tensor(student: Submission, device: torch.device) -> None:
    """Every tensor inside dicts, lists, tuples, named tuples and dataclasses, at any depth, ends on the device."""
    cases = _cases(device, [
        Case("nested", "meta"), Case("bare_tensor", torch.device("meta")), Case("structured", "meta"),
        Case("containers", torch.device("meta")), Case("top_level_named_tuple", "meta"),
        Case("top_level_frozen", torch.device("meta")),
    ], [Case("nested", "cuda"), Case("structured", torch.device("cuda", 0)), Case("bare_tensor", "cuda:0")])
    for observed in _run_all(student, cases):
        problems = tensor_problems(observed)
        if problems:
            more = f" (and {len(problems) - 1} more tensor(s))" if len(problems) > 1 else ""
            cause = _move_cause(observed, problems)
            fail(f"{call_text(observed.case)}\n  {problems[0][1]}{more}; every tensor inside dicts, lists, tuples, "
                 f"named tuples and dataclasses must come back on {_target_device(observed.case)}, with its dtype, "
                 "shape and requires_grad" + (f"\n  likely cause: {cause}" if cause else ""))


def _container_nodes(node: dict[str, Any], path: str = "obj") -> list[tuple[str, dict[str, Any]]]:
    if node["kind"] in ("tensor", "as_is"):
        return []
    return [(path, node)] + [found for child_path, child in _children(node, path)
                             for found in _container_nodes(child, child_path)]


def _describe_kind(node: dict[str, Any]) -> str:
    if node.get("kind") == "sequence" and node.get("fields"):
        return f"the named tuple {node['type']}"
    if node.get("kind") == "dataclass":
        return f"the dataclass {node['type']}"
    return f"a {node['type']}"


def _container_cause(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    wanted, came = want["type"], got["type"]
    if want["kind"] == "sequence" and want.get("fields"):
        if came == "tuple":
            return ("tuple(...) of the moved fields loses the named tuple's class: rebuild it with "
                    "type(obj)(*moved_fields) (a named tuple takes its fields as separate arguments)")
        if came == "list":
            return "the named tuple was treated as a list: check for named tuples (hasattr(obj, '_fields')) first"
    if want["kind"] == "dataclass" and got.get("kind") == "dict":
        return ("dataclasses.asdict turns a dataclass into a dict (and recurses into it); build a new instance "
                "with dataclasses.replace(obj, field=moved, ...)")
    if want["kind"] == "dict" and came == "dict" and wanted != "dict":
        return (f"a {wanted} was rebuilt as a plain dict (a dict comprehension or dict(...) makes a plain dict): "
                "build the result with the input's own type")
    if wanted == "tuple" and came == "list":
        return "a tuple was rebuilt as a list (a list comprehension): rebuild tuples as tuples"
    if wanted == "list" and came == "tuple":
        return "a list was rebuilt as a tuple: rebuild lists as lists"
    return None


def _container_problem(observed: Observed) -> str | None:
    for path, want in _container_nodes(observed.expect):
        got = _find(observed.seen["result"], path)
        if got is None:
            return f"{_describe_kind(want)} at {path} is missing from the result"
        if got["type"] != want["type"] or got.get("kind") != want["kind"]:
            cause = _container_cause(want, got)
            return (f"{_describe_kind(want)} at {path} came back as a {got['type']}; dicts (and their subclasses), "
                    "lists, tuples, named tuples and dataclasses keep their exact type"
                    + (f"\n  likely cause: {cause}" if cause else ""))
        if want["kind"] == "dict" and got["keys"] != want["keys"]:
            if sorted(got["keys"]) == sorted(want["keys"]):
                return (f"the keys of {_describe_kind(want)} at {path} came back in the order {got['keys']}, not "
                        f"{want['keys']}: the same keys in the same order (do not sort them)")
            return f"{_describe_kind(want)} at {path} came back with the keys {got['keys']}, not {want['keys']}"
        if "factory" in want and got.get("factory") != want["factory"]:
            return (f"the defaultdict at {path} came back with default_factory {got.get('factory')}, not the input's "
                    f"own factory\n  likely cause: a new defaultdict needs the input's default_factory "
                    "(type(obj)(obj.default_factory) or copy.copy(obj)); without it missing keys raise KeyError")
        if got.get("same") == path and any(n["same"] is None for _, n in _leaves(want) if n["kind"] == "tensor"):
            return (f"{_describe_kind(want)} at {path} came back as the input's own object (changed in place?); a "
                    "container holding a tensor that moves must be a new one, the input left as it was")
        before = _find(observed.seen["before"], path)
        if want["kind"] == "dataclass" and before is not None and before.get("serial") is not None and \
                got.get("serial") == before["serial"]:
            return (f"{_describe_kind(want)} at {path} is a copy of the input's instance, made without calling its "
                    "__init__ (so its __post_init__ never ran)\n  likely cause: copy.copy / __new__ and then setattr; "
                    "build the new instance with dataclasses.replace(obj, **moved_fields), which runs __init__")
        if want.get("fields") and list(got.get("fields") or ()) != list(want["fields"]):
            return f"{_describe_kind(want)} at {path} came back with the fields {list(got.get('fields') or ())}"
    return None


@MOVE_TO.check(points=2)
def keeps_container_types(student: Submission, device: torch.device) -> None:
    """dict subclasses, lists, tuples, named tuples and dataclasses come back as their own types, keys in order."""
    cases = _cases(device, [
        Case("containers", "meta"), Case("top_level_ordered", torch.device("meta")),
        Case("top_level_defaultdict", "meta"), Case("top_level_named_tuple", torch.device("meta")),
        Case("top_level_frozen", "meta"), Case("structured", "meta"),
    ], [Case("containers", "cuda")])
    for observed in _run_all(student, cases):
        require_moved(observed, "the container types")
        problem = _container_problem(observed)
        if problem:
            fail(f"{call_text(observed.case)}\n  {problem}")


@MOVE_TO.check(points=1)
def returns_other_objects_as_is(student: Submission, device: torch.device) -> None:
    """Numbers, strings, None, NumPy arrays, sets, classes and objects of other types come back as the same object."""
    cases = _cases(device, [Case("other_objects", "meta"), Case("other_objects_in_tuple", torch.device("meta"))],
                   [Case("other_objects", "cuda")])
    for observed in _run_all(student, cases):
        require_moved(observed, "what happens to the other objects")
        for path, want in _leaves(observed.expect):
            if want["kind"] != "as_is":
                continue
            got = _find(observed.seen["result"], path)
            if got is None or got.get("same") != path:
                what = "is missing from the result" if got is None else (
                    f"came back as {'None' if got['type'] == 'NoneType' else 'a ' + got['type']}"
                    if got["type"] != want["type"] else f"came back as a new {got['type']}" if got.get("same") is None
                    else f"came back as a different input object ({got['same']})")
                fail(f"{call_text(observed.case)}\n  the {want['type']} at {path} {what}; anything that is not a "
                     "tensor, a dict, an exact list or tuple, a named tuple or a dataclass instance whose fields are "
                     "all init fields must be returned as the very same object (not copied, not converted, not "
                     "entered)" + _as_is_cause(want, got))


def _as_is_cause(want: dict[str, Any], got: dict[str, Any] | None) -> str:
    name = want["type"]
    if got is None:
        return ""
    if name in ("TensorList", "TensorTuple") and got["type"] in ("list", "tuple"):
        return (f"\n  likely cause: isinstance(obj, {'list' if name == 'TensorList' else 'tuple'}) is also true for "
                "subclasses; only the exact types list and tuple (type(obj) is list) are rebuilt")
    if name == "WithDerivedField":
        return ("\n  likely cause: a dataclass with an init=False field cannot be rebuilt by dataclasses.replace; the "
                "spec returns it as is (check that every field of dataclasses.fields(obj) has .init)")
    if name in ("Sample", "FrozenSample") or "class" in name or name == "type":
        return ("\n  likely cause: dataclasses.is_dataclass is True for the dataclass *class* too; only instances "
                "(not isinstance(obj, type)) are rebuilt")
    if name == "numpy.ndarray" and got["kind"] == "tensor":
        return "\n  likely cause: NumPy arrays are not tensors: the spec returns them as they are"
    if name in ("set", "frozenset"):
        return "\n  likely cause: sets are not among the containers move_to enters: return them as they are"
    if name == "Holder":
        return "\n  likely cause: objects of other types are not entered (not even through their __dict__)"
    return ""


@MOVE_TO.check(points=1)
def same_tensor_when_already_there(student: Submission, device: torch.device) -> None:
    """A tensor already on the device (t.to(device) is t) comes back as that same object, not a copy."""
    cases = _cases(device, [Case("mixed_devices", "meta", source_device="meta"),
                            Case("mixed_devices", torch.device("meta"), source_device="meta"),
                            Case("already_there", "cpu", source_device="cpu")],
                   [Case("mixed_devices", "cuda", source_device="cuda")])
    for observed in _run_all(student, cases):
        require_moved(observed, "whether tensors already there are kept")
        for path, want in _leaves(observed.expect):
            if want["kind"] != "tensor" or want["same"] is None:
                continue
            got = _find(observed.seen["result"], path)
            if got is None or got.get("same") != want["same"]:
                fail(f"{call_text(observed.case)}\n  the tensor at {path} was already on {want['device']}, and "
                     f"t.to({_target_text(observed.case.target)}) returns t itself; move_to returned a copy of it"
                     "\n  likely cause: copying what need not move (.clone(), copy=True, torch.tensor(t), "
                     "torch.empty_like + copy_): call t.to(device, non_blocking=...) and return what it returns")


@MOVE_TO.check(points=1)
def passes_non_blocking(student: Submission, device: torch.device) -> None:
    """non_blocking reaches every Tensor.to call: True when asked for, False by default."""
    cases = _cases(device, [Case("nested", "meta", non_blocking=True),
                            Case("structured", torch.device("meta"), non_blocking=True),
                            Case("nested", "meta", non_blocking=False), Case("structured", "meta")],
                   [Case("nested", "cuda", non_blocking=True), Case("structured", "cuda")])
    for observed in _run_all(student, cases):
        require_moved(observed, "non_blocking")
        wanted = bool(observed.case.non_blocking)
        calls = observed.seen["to_calls"]
        if not calls:
            others = sorted(set(observed.seen["other_moves"]))
            fail(f"{call_text(observed.case)}\n  the tensors were moved without any Tensor.to call"
                 + (f" (with {', '.join(others)})" if others else "") +
                 ", so non_blocking never reached one; move each tensor with t.to(device, non_blocking=non_blocking)")
        wrong = [c for c in calls if c != wanted]
        if wrong:
            cause = ("non_blocking is not passed on (t.to(device) alone always means non_blocking=False)"
                     if wanted else "non_blocking=True is hard-coded instead of passing the caller's value")
            if wanted and len(wrong) < len(calls):
                cause = "non_blocking is passed on in some branches of move_to but not in others"
            fail(f"{call_text(observed.case)}\n  {len(wrong)} of the {len(calls)} Tensor.to calls got "
                 f"non_blocking={not wanted}, the caller asked for {wanted}\n  likely cause: {cause}")
    # To the CPU, tensors already there: returning them untouched makes no call (and is right), but Tensor.cpu()
    # takes no non_blocking at all: from a GPU it is a blocking copy, whatever the caller asked for
    for observed in _run_all(student, [Case("nested", "cpu", non_blocking=True)]):
        moves = sorted(set(observed.seen["other_moves"]) & {"cpu", "cuda"})
        if moves:
            fail(f"{call_text(observed.case)}\n  the tensors were moved with Tensor.{moves[0]}(), which has no "
                 "non_blocking argument (from a GPU, .cpu() is a blocking copy whatever the caller asked for); move "
                 "each tensor with t.to(device, non_blocking=non_blocking)")


def _first_difference(before: Any, after: Any, path: str = "obj") -> str | None:
    """Where the description of the input after the call differs from the one before (None: unchanged)."""
    if isinstance(before, dict) and isinstance(after, dict):
        if before.get("same") != after.get("same") or before.get("type") != after.get("type"):
            return f"{path} was replaced: it is another object than before the call (a {after.get('type')})"
        if before.get("kind") == "tensor" and after.get("kind") == "tensor":
            for key in ("device", "dtype", "shape", "version"):
                if before[key] != after[key]:
                    return f"the tensor at {path} was changed in place ({key}: {before[key]} -> {after[key]})"
            if "values" in before and ("values" not in after or not _same_values(before["values"], after["values"])):
                return f"the values of the tensor at {path} changed"
            return None
        if before.get("keys") != after.get("keys"):
            return f"the keys of {path} changed from {before.get('keys')} to {after.get('keys')}"
        if before.get("factory") != after.get("factory"):
            return f"the default_factory of {path} changed"
        for key in ("items",):
            if key in before:
                if len(before[key]) != len(after.get(key, [])):
                    return f"{path} now holds {len(after.get(key, []))} items, not {len(before[key])}"
                labels = before.get("keys") or [str(i) for i in range(len(before[key]))]
                for label, b, a in zip(labels, before[key], after[key]):
                    found = _first_difference(b, a, f"{path}[{label}]")
                    if found:
                        return found
        if "fields" in before and isinstance(before["fields"], dict):
            for name, b in before["fields"].items():
                found = _first_difference(b, after.get("fields", {}).get(name), f"{path}.{name}")
                if found:
                    return found
        return None
    return None if before == after else f"{path} changed"


@MOVE_TO.check(points=1)
def input_not_modified(student: Submission, device: torch.device) -> None:
    """The input and every container in it are left exactly as they were."""
    cases = _cases(device, [Case("nested", "meta"), Case("containers", torch.device("meta")),
                            Case("top_level_frozen", "meta"), Case("structured", "meta"),
                            Case("top_level_defaultdict", "meta"), Case("other_objects", "meta")],
                   [Case("nested", "cuda")])
    for observed in _run_all(student, cases):
        require_moved(observed, "whether the input was left alone")
        change = _first_difference(observed.seen["before"], observed.seen["after"])
        if change:
            # A cause only for what the change itself shows: an item replaced, or a tensor changed in place.
            cause = ("assigning the moved values back into the input (obj[key] = ..., obj[i] = ..., setattr / "
                     "object.__setattr__ on a dataclass) instead of building a new container"
                     if " was replaced" in change else
                     "an in-place operation on the input's tensor (copy_, set_, resize_, an in-place op) instead of "
                     "t.to(device), which returns a new tensor" if "changed in place" in change or "values of the "
                     "tensor" in change else None)
            fail(f"{call_text(observed.case)}\n  after the call, {change}; move_to must build new containers and "
                 "leave the input and its containers exactly as they were" + (f"\n  likely cause: {cause}" if cause
                                                                             else ""))


# ==================================================================================================
# The generated domain (from the specification's sentences): structures of every container it names, nested
# deeper and wider than the recipes (plain dicts, OrderedDicts, defaultdicts with a factory or none, dict and
# defaultdict subclasses; exact lists and tuples, empty ones too; named tuples of 0 to 3 fields, a subclass of
# one, a typing.NamedTuple; dataclasses plain, frozen, with slots, kw_only, inherited, with no fields), keys of
# every hashable kind (a tensor among them), tensors of ten dtypes, 0-dim, empty, transposed, strided, at a
# storage offset, expanded, requiring grad (leaf or not), nn.Parameters, some already on the target and some
# the same object twice; and everything returned as is (numbers, strings, None, bytes, NumPy arrays and
# scalars, sets, classes, a torch.Size, tuple and list subclasses, objects holding tensors, an nn.Module, a
# dataclass with an init=False field, an object with a ``_fields`` attribute that is no tuple); targets given
# as strings or torch.device, non_blocking left out, False or True.
# A case is a *plan* (plain tuples, sent to the runner) that both processes build into the same object.
# ==================================================================================================
@dataclasses.dataclass(slots=True)
class Slotted:
    a: Any
    b: Any = None


@dataclasses.dataclass
class ChildSample(Sample):
    """A dataclass one level deeper: a subclass of Sample with one more field."""

    weight: Any = 1.0


@dataclasses.dataclass(kw_only=True)
class KwOnly:
    x: Any
    y: Any = None


@dataclasses.dataclass
class NoFields:
    pass


class SubBatch(Batch):
    """A subclass of a named tuple (still a named tuple: it has _fields)."""

    __slots__ = ()


Single = collections.namedtuple("Single", ["only"])
NoneTuple = collections.namedtuple("NoneTuple", [])


class Point(NamedTuple):
    x: Any
    y: Any


class Counts(collections.defaultdict):
    """A defaultdict subclass."""


class FieldsRecord:
    """Not a tuple, although its class has ``_fields`` (and it iterates): an object of another type."""

    _fields = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b

    def __iter__(self) -> Any:
        return iter((self.a, self.b))


GEN_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool", "complex64")
NAMED_TUPLES = {"Batch": (Batch, 2), "Pair": (Pair, 3), "Single": (Single, 1), "NoneTuple": (NoneTuple, 0),
                "SubBatch": (SubBatch, 2), "Point": (Point, 2)}
DATACLASSES = {"Sample": (Sample, ("image", "label", "extra")), "FrozenSample": (FrozenSample, ("features", "mask")),
               "Slotted": (Slotted, ("a", "b")), "ChildSample": (ChildSample, ("image", "label", "extra", "weight")),
               "KwOnly": (KwOnly, ("x", "y")), "NoFields": (NoFields, ())}
DICTS = ("dict", "OrderedDict", "defaultdict_list", "defaultdict_none", "defaultdict_lambda", "TaggedDict", "Counts")
ATOMS = ("int", "big_int", "float", "str", "empty_str", "none", "bytes", "bool", "array", "numpy_scalar", "set",
         "frozenset", "class", "dataclass_class", "size", "holder", "list_subclass", "tuple_subclass", "derived",
         "range", "device", "dtype", "function", "module", "fields_record", "nan", "movable")
KEYS = ("str", "odd_str", "int", "negative_int", "tuple", "none", "float", "tensor")


def _gen_tensor(generator: random.Random) -> tuple:
    dtype = domain.pick(generator, GEN_DTYPES, [5, 2, 2, 2, 2, 1, 1, 1, 1, 1])
    layout = domain.pick(generator, ["contiguous", "zero_dim", "empty", "transposed", "strided", "offset", "expanded"],
                         [5, 2, 1, 1, 1, 1, 1])
    shape = tuple(domain.small_int(generator, 1, 4) for _ in range(domain.small_int(generator, 1, 3)))
    floating = dtype in ("float32", "float64", "float16", "bfloat16", "complex64")
    grad = domain.pick(generator, ["no", "leaf", "nonleaf", "parameter"], [6, 2, 1, 1]) if floating else "no"
    if dtype == "complex64" and grad == "parameter":
        grad = "leaf"
    where = domain.pick(generator, ["cpu", "there"], [4, 1])
    return ("tensor", dtype, shape, layout, grad, where)


def _gen_key(generator: random.Random, index: int, tensor_key: bool) -> tuple:
    kind = domain.pick(generator, KEYS, [6, 1, 2, 1, 1, 1, 1, 1 if tensor_key else 0])
    return ("key", kind, index)


def generate_plan(generator: random.Random, depth: int = 0, tensors: list[int] | None = None) -> tuple:
    """A random plan: a container (deeper levels more often leaves), a tensor, a shared tensor, or an atom."""
    tensors = [0] if tensors is None else tensors
    leaf_weight = 1 + 2 * depth
    kind = domain.pick(generator, ["tensor", "shared", "atom", "dict", "list", "tuple", "named_tuple", "dataclass"],
                       [3 * leaf_weight, 1 if tensors[0] else 0, 2 * leaf_weight, 3, 2, 2, 2, 2] if depth < 4 else
                       [3, 1 if tensors[0] else 0, 2, 0, 0, 0, 0, 0])
    if kind == "tensor":
        tensors[0] += 1
        return _gen_tensor(generator)
    if kind == "shared":
        return ("shared", generator.randrange(tensors[0]))
    if kind == "atom":
        return ("atom", domain.pick(generator, ATOMS))
    width = domain.small_int(generator, 0, 4, edge=0.3)
    if kind == "dict":
        keys = [_gen_key(generator, i, i == 0) for i in range(width)]
        return ("dict", domain.pick(generator, DICTS, [4, 2, 1, 1, 1, 1, 1]),
                tuple((key, generate_plan(generator, depth + 1, tensors)) for key in keys))
    if kind in ("list", "tuple"):
        return (kind, tuple(generate_plan(generator, depth + 1, tensors) for _ in range(width)))
    if kind == "named_tuple":
        name = domain.pick(generator, list(NAMED_TUPLES))
        return ("named_tuple", name, tuple(generate_plan(generator, depth + 1, tensors)
                                           for _ in range(NAMED_TUPLES[name][1])))
    name = domain.pick(generator, list(DATACLASSES), [3, 2, 1, 1, 1, 1])
    return ("dataclass", name, tuple(generate_plan(generator, depth + 1, tensors) for _ in DATACLASSES[name][1]))


def plan_size(plan: tuple) -> int:
    if plan[0] == "dict":
        return 1 + sum(plan_size(child) for _, child in plan[2])
    if plan[0] in ("list", "tuple"):
        return 1 + sum(plan_size(child) for child in plan[1])
    if plan[0] in ("named_tuple", "dataclass"):
        return 1 + sum(plan_size(child) for child in plan[2])
    return 1


def _build_tensor(plan: tuple, target: Any) -> torch.Tensor:
    _, dtype_text, shape, layout, grad, where = plan
    dtype = getattr(torch, dtype_text)
    made = (lambda *s: torch.randn(*s, dtype=dtype)) if dtype == torch.complex64 else (lambda *s: _t(*s, dtype=dtype))
    if layout == "zero_dim":
        t = made(1).reshape(())
    elif layout == "empty":
        t = made(0, *shape[1:])
    else:
        if layout == "transposed":
            t = made(shape[0], shape[-1] + 1).t()
        elif layout == "strided":
            t = made(2 * shape[0] + 1, *shape[1:])[::2]
        elif layout == "offset":
            t = made(shape[0] + 1, *shape[1:])[1:]
        elif layout == "expanded":
            t = made(1, *shape[1:]).expand(shape[0] + 1, *shape[1:])
        else:
            t = made(*shape)
    if where == "there":
        t = t.to(target)
    if grad == "leaf":
        t = t.requires_grad_()
    elif grad == "nonleaf":
        t = t.detach().requires_grad_() * 2
    elif grad == "parameter":
        t = torch.nn.Parameter(t.detach().clone() if not t.is_contiguous() else t.detach())
    return t


def _build_key(plan: tuple) -> Any:
    _, kind, index = plan
    return {"str": f"k{index}", "odd_str": f"a]['{index}", "int": index, "negative_int": -index - 1,
            "tuple": (index, "k"), "none": None, "float": index + 0.5,
            "tensor": torch.arange(index + 1) + 1000}[kind]


def _build_atom(kind: str) -> Any:
    if kind == "holder":
        return Holder(_t(2))
    if kind == "list_subclass":
        return TensorList([_t(2)])
    if kind == "tuple_subclass":
        return TensorTuple((_t(1),))
    if kind == "derived":
        made = WithDerivedField(data=_t(3))
        made.cached = _t(1)
        return made
    if kind == "module":
        return torch.nn.Linear(2, 2)
    if kind == "movable":
        return Movable(_t(2))
    if kind == "fields_record":
        return FieldsRecord(_t(2), _t(1))
    if kind == "array":
        return np.arange(4.0).reshape(2, 2)
    return {"int": 12345, "big_int": 2**70 + 1, "float": 2.5, "str": "text", "empty_str": "", "none": None,
            "bytes": b"raw", "bool": True, "numpy_scalar": np.float32(1.5), "set": {1, 2, 3},
            "frozenset": frozenset({"a"}), "class": Sample, "dataclass_class": FrozenSample,
            "size": torch.Size([2, 3]), "range": range(3), "device": torch.device("cpu"), "dtype": torch.float16,
            "function": _t, "nan": float("nan")}[kind]


def build_plan(plan: tuple, seed: int, target: Any) -> Any:
    """The object ``plan`` describes (the same in both processes: the same seed, the same order of draws)."""
    torch.default_generator.manual_seed(seed)  # the CPU generator only (torch.manual_seed also queues CUDA calls)
    made: list[torch.Tensor] = []

    def build(node: tuple) -> Any:
        kind = node[0]
        if kind == "tensor":
            made.append(_build_tensor(node, target))
            return made[-1]
        if kind == "shared":
            return made[node[1]] if node[1] < len(made) else _t(1)
        if kind == "atom":
            return _build_atom(node[1])
        if kind == "dict":
            items = [(_build_key(key), build(child)) for key, child in node[2]]
            variant = node[1]
            if variant == "OrderedDict":
                return collections.OrderedDict(items)
            if variant == "defaultdict_list":
                return collections.defaultdict(list, items)
            if variant == "defaultdict_none":
                return collections.defaultdict(None, items)
            if variant == "defaultdict_lambda":
                return collections.defaultdict(lambda: "fallback", items)
            if variant == "TaggedDict":
                return TaggedDict(items)
            if variant == "Counts":
                return Counts(int, items)
            return dict(items)
        if kind == "list":
            return [build(child) for child in node[1]]
        if kind == "tuple":
            return tuple(build(child) for child in node[1])
        if kind == "named_tuple":
            return NAMED_TUPLES[node[1]][0](*(build(child) for child in node[2]))
        cls, names = DATACLASSES[node[1]]
        return cls(**{name: build(child) for name, child in zip(names, node[2])})

    return build(plan)


def plan_text(plan: tuple) -> str:
    """The object a plan builds, as the student would read it."""
    count = [0]

    def text(node: tuple) -> str:
        kind = node[0]
        if kind == "tensor":
            count[0] += 1
            _, dtype, shape, layout, grad, where = node
            facts = [dtype] + ([] if layout == "contiguous" else [layout]) + (
                [] if grad == "no" else ["nn.Parameter" if grad == "parameter" else "requires_grad" + (
                    " (not a leaf)" if grad == "nonleaf" else "")]) + (["already on the target"] if where == "there" else [])
            return f"t{count[0]}=tensor({', '.join(facts)})"
        if kind == "shared":
            return f"t{node[1] + 1} (the same tensor again)" if node[1] < count[0] else "tensor"
        if kind == "atom":
            return {"holder": "Holder(tensor) (an object holding a tensor)", "list_subclass": "TensorList([tensor])",
                    "tuple_subclass": "TensorTuple((tensor,))", "derived": "WithDerivedField(...) (init=False field)",
                    "module": "nn.Linear(2, 2)", "movable": "Movable(tensor) (an object with a .to method of its "
                    "own)", "fields_record": "FieldsRecord(tensor, tensor) (has _fields, not a "
                    "tuple)", "array": "np.ndarray", "class": "the class Sample", "dataclass_class": "the class "
                    "FrozenSample", "function": "a function", "size": "torch.Size([2, 3])"}.get(
                node[1], repr(_build_atom(node[1])))
        if kind == "dict":
            inner = ", ".join(f"{_key_text(key)}: {text(child)}" for key, child in node[2])
            variant = node[1]
            return {"dict": f"{{{inner}}}", "OrderedDict": f"OrderedDict({{{inner}}})",
                    "defaultdict_list": f"defaultdict(list, {{{inner}}})",
                    "defaultdict_none": f"defaultdict(None, {{{inner}}})",
                    "defaultdict_lambda": f"defaultdict(lambda: 'fallback', {{{inner}}})",
                    "TaggedDict": f"TaggedDict({{{inner}}}) (a dict subclass)",
                    "Counts": f"Counts(int, {{{inner}}}) (a defaultdict subclass)"}[variant]
        if kind == "list":
            return f"[{', '.join(text(child) for child in node[1])}]"
        if kind == "tuple":
            inner = [text(child) for child in node[1]]
            return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
        names = (NAMED_TUPLES[node[1]][0]._fields if kind == "named_tuple" else DATACLASSES[node[1]][1])
        return f"{node[1]}({', '.join(f'{n}={text(c)}' for n, c in zip(names, node[2]))})"

    return text(plan)


def _key_text(key: tuple) -> str:
    value = _build_key(key)
    return f"tensor key {value.tolist()}" if isinstance(value, torch.Tensor) else repr(value)


def _smaller_plans(plan: tuple) -> list[tuple]:
    """Smaller variants of a plan: a container replaced by one of its children, a child dropped, a tensor made
    plain (for shrinking a failing case)."""
    out: list[tuple] = []
    kind = plan[0]
    children: list[tuple] = []
    if kind == "dict":
        children = [child for _, child in plan[2]]
        out += [("dict", plan[1], plan[2][:i] + plan[2][i + 1:]) for i in range(len(plan[2]))]
        if plan[1] != "dict":
            out.append(("dict", "dict", plan[2]))
    elif kind in ("list", "tuple"):
        children = list(plan[1])
        out += [(kind, plan[1][:i] + plan[1][i + 1:]) for i in range(len(plan[1]))]
    elif kind in ("named_tuple", "dataclass"):
        children = list(plan[2])
    elif kind == "tensor" and plan[1:] != ("float32", (2,), "contiguous", "no", "cpu"):
        out.append(("tensor", "float32", (2,), "contiguous", "no", "cpu"))
        out += [plan[:3] + ("contiguous",) + plan[4:], plan[:4] + ("no",) + plan[5:], plan[:5] + ("cpu",)]
    out += [child for child in children if child[0] != "shared"]
    # the same, one level down
    if kind == "dict":
        for i, (key, child) in enumerate(plan[2]):
            out += [("dict", plan[1], plan[2][:i] + ((key, c),) + plan[2][i + 1:]) for c in _smaller_plans(child)[:4]]
    elif kind in ("list", "tuple"):
        for i, child in enumerate(plan[1]):
            out += [(kind, plan[1][:i] + (c,) + plan[1][i + 1:]) for c in _smaller_plans(child)[:4]]
    elif kind in ("named_tuple", "dataclass"):
        for i, child in enumerate(plan[2]):
            out += [(kind, plan[1], plan[2][:i] + (c,) + plan[2][i + 1:]) for c in _smaller_plans(child)[:4]]
    return [p for p in out if p != plan][:40]


class GenCase(NamedTuple):
    plan: tuple
    seed: int
    target: Any
    non_blocking: bool | None = None


def generate_case(generator: random.Random, targets: tuple = ("meta", "meta", "cpu")) -> GenCase:
    target = domain.pick(generator, targets)
    if generator.random() < 0.4:
        target = torch.device(target)
    plan = generate_plan(generator)
    return GenCase(plan, generator.randrange(2**31), target, domain.pick(generator, [None, False, True]))


def case_size(case: GenCase) -> tuple[int, int]:
    return (plan_size(case.plan), case.non_blocking is not None)


def gen_call_text(case: GenCase) -> str:
    extra = "" if case.non_blocking is None else f", non_blocking={case.non_blocking}"
    return f"move_to(obj, {_target_text(case.target)}{extra}) with obj = {plan_text(case.plan)}"


def _jsonable(node: Any) -> Any:
    """A description with each tensor's values as the hex of its bytes (one JSON text decodes fast)."""
    if isinstance(node, dict):
        return {k: (_tensor_hex(v) if k == "values" else _jsonable(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_jsonable(v) for v in node]
    return node


def _tensor_hex(t: torch.Tensor) -> str:
    return f"{t.dtype}:{tuple(t.shape)}:" + t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex()


def generated_scenario(student: RunnerStudent, cases: list[GenCase]) -> str:
    """Each case built, moved and described (input before, result, input after, the Tensor.to calls), as JSON."""
    function = student.get("move_to")
    seen = []
    for case in cases:
        obj = build_plan(case.plan, case.seed, case.target)
        paths = paths_of(obj)
        record: dict[str, Any] = {"before": describe(obj, paths)}
        kwargs = {} if case.non_blocking is None else {"non_blocking": case.non_blocking}
        recorder = _ToCalls()
        try:
            with recorder:
                result = student.run(function, obj, case.target, **kwargs)
        except StudentRaised as exc:
            record["error"] = dataclasses.asdict(exc.error)
            seen.append(_jsonable(record))
            continue
        record.update(result=describe(result, paths), after=describe(obj, paths), to_calls=recorder.to_calls,
                      other_moves=recorder.other_moves)
        seen.append(_jsonable(record))
    return json.dumps(seen)


@judge_only
def _generated_observed(student: Submission, cases: list[GenCase]) -> list[Observed]:
    observed = []
    for at in range(0, len(cases), 40):
        part = cases[at:at + 40]
        for case, seen in zip(part, json.loads(student.scenario(generated_scenario, part))):
            obj = build_plan(case.plan, case.seed, case.target)
            observed.append(Observed(case, seen, _jsonable(expected(obj, case.target, paths_of(obj)))))
    return observed


@judge_only
def _generated_problem(observed: Observed) -> str | None:
    """What the student's result breaks of the specification on one generated case (None: nothing)."""
    seen, case = observed.seen, observed.case
    if "error" in seen:
        error = seen["error"]
        return f"it raised {error['exception_type'] or error['kind']}: {error['exception_message'][:200]}"
    problems = tensor_problems(observed)
    if problems:
        return problems[0][1] + (f" (and {len(problems) - 1} more tensor(s))" if len(problems) > 1 else "")
    problem = _container_problem(observed)
    if problem:
        return problem.split("\n  likely cause:")[0]
    for path, want in _leaves(observed.expect):
        got = _find(seen["result"], path)
        if want["kind"] == "as_is" and (got is None or got.get("same") != want["same"]):
            return (f"the {want['type']} at {path} did not come back as the very same object (anything that is not "
                    "a tensor or one of the containers named is returned as is)")
        if want["kind"] == "tensor" and want["same"] is not None and (got is None or got.get("same") != want["same"]):
            return (f"the tensor at {path} was already on {want['device']}, so t.to({_target_text(case.target)}) "
                    "returns t itself; move_to returned another tensor")
    wanted = bool(case.non_blocking)
    moved = any(want["kind"] == "tensor" and want["same"] is None for _, want in _leaves(observed.expect))
    calls = seen["to_calls"]
    if moved and not calls:
        return "the tensors were moved without any Tensor.to call, so non_blocking never reached one"
    wrong = [c for c in calls if c != wanted]
    if wrong:
        return f"{len(wrong)} of the {len(calls)} Tensor.to calls got non_blocking={not wanted}, the caller asked for {wanted}"
    change = _first_difference(seen["before"], seen["after"])
    if change:
        return f"after the call, {change}; the input and its containers must be left exactly as they were"
    return None


@MOVE_TO.check(points=2)
def generated_structures(student: Submission, device: torch.device) -> None:
    """Generated structures of every container, key, tensor (dtype, layout, grad, device) and other object the
    spec names, nested deeper and wider: every promise of the spec at once, on each."""
    targets = ("meta", "meta", "cpu") + (("cuda", "cuda") if device.type == "cuda" else ())
    cases = domain.draw(lambda g: generate_case(g, targets), 150, size=case_size)
    problems = [_generated_problem(o) for o in _generated_observed(student, cases)]
    failing = [p is not None for p in problems]
    if not any(failing):
        return
    found = dict(zip(cases, problems))

    def fails(candidates: list[GenCase]) -> list[bool]:
        results = [_generated_problem(o) for o in _generated_observed(student, candidates)]
        found.update(zip(candidates, results))
        return [r is not None for r in results]

    case = domain.shrink(domain.smallest(cases, failing, size=case_size),
                         lambda c: [c._replace(plan=p) for p in _smaller_plans(c.plan)]
                         + ([c._replace(non_blocking=None)] if c.non_blocking is not None else []), fails)
    fail(f"{gen_call_text(case)}\n  {found[case]}\n  (a generated case: {sum(failing)} of the {len(cases)} generated "
         "structures failed; this is the smallest)")
