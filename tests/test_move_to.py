"""move_to: the reference against the specification on generated nested structures, and the grader's own
machinery (its expected descriptions, path parsing, the Tensor.to recorder)."""

from __future__ import annotations

import collections
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.ch05_devices import move_to as grader
from solutions import ch05_devices as reference


# -- generated inputs: every container the spec names, nested, with leaves that must stay as they are --------
def _leaves():
    tensors = st.builds(lambda n, dtype: torch.zeros(n, dtype=dtype), st.integers(0, 3),
                        st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float16]))
    others = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3), st.none(),
                       st.just(frozenset({1})), st.builds(grader.Holder, tensors))
    return st.one_of(tensors, others)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), children, max_size=3),
        st.dictionaries(st.text(max_size=2), children, max_size=3).map(collections.OrderedDict),
        st.tuples(children, children).map(lambda pair: grader.Batch(*pair)),
        st.tuples(children, children).map(lambda pair: grader.Sample(*pair)),
        st.tuples(children, children).map(lambda pair: grader.FrozenSample(*pair)),
    )


structures = st.recursive(_leaves(), _containers, max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(structures, st.sampled_from(["meta", torch.device("meta"), "cpu"]), st.booleans())
def test_reference_matches_the_graders_description_of_the_spec(obj, target, non_blocking):
    paths = grader.paths_of(obj)
    before = grader.describe(obj, paths)
    result = reference.move_to(obj, target, non_blocking=non_blocking)
    expected = grader.expected(obj, target, paths)
    got = grader.describe(result, paths)
    observed = grader.Observed(grader.Case("nested", target), {"result": got, "before": before}, expected)
    assert grader.tensor_problems(observed) == []
    assert grader._container_problem(observed) is None
    assert grader._first_difference(before, grader.describe(obj, paths)) is None  # the input is untouched
    for path, want in grader._leaves(expected):
        if want["kind"] == "as_is" or want["same"] is not None:
            assert grader._find(got, path)["same"] == want["same"], path


def test_the_recipes_cover_every_kind_the_spec_names():
    kinds = set()
    for recipe in grader.RECIPES:
        obj = grader.build(recipe, 0, "cpu" if recipe in ("mixed_devices", "already_there") else None)
        kinds |= {type(x).__name__ for x in _walk(obj)}
    assert {"OrderedDict", "defaultdict", "TaggedDict", "Batch", "Pair", "Sample", "FrozenSample",
            "WithDerivedField", "TensorList", "TensorTuple", "Holder", "ndarray", "set", "frozenset", "type",
            "range", "device", "dtype", "bytes", "NoneType", "tuple", "list", "Tensor"} <= kinds


def _walk(obj, depth=0):
    yield obj
    if depth > 8:
        return
    children = (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) and
                not isinstance(obj, (str, bytes)) else
                [getattr(obj, f.name) for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) and
                not isinstance(obj, type) else [])
    for child in children:
        yield from _walk(child, depth + 1)


def test_a_dataclass_with_an_init_false_field_and_subclasses_come_back_as_is():
    obj = grader.build("other_objects", 0, None)
    result = reference.move_to(obj, "meta")
    for key in ("derived", "list_subclass", "tuple_subclass", "holder", "array", "set", "dataclass_class"):
        assert result[key] is obj[key], key
    assert result["moved"].device.type == "meta"


def test_paths_are_parsed_back_into_steps():
    path = "obj['a'][(1, 'k')][0].image['b]']"
    assert grader._steps(path) == [("key", "'a'"), ("key", "(1, 'k')"), ("index", 0), ("field", "image"),
                                   ("key", "'b]'")]


@pytest.mark.parametrize("call, expected", [
    (lambda t: t.to("meta", non_blocking=True), [True]),
    (lambda t: t.to("meta"), [False]),
    (lambda t: t.to(torch.device("meta"), torch.float32, True), [True]),
    (lambda t: t.to(device="meta", non_blocking=False), [False]),
])
def test_the_to_recorder_reads_non_blocking_however_it_is_passed(call, expected):
    recorder = grader._ToCalls()
    with recorder:
        call(torch.ones(2))
    assert recorder.to_calls == expected


def test_moves_to_a_real_device_keep_the_values(device):
    """On cuda (when there is one) the grader compares values too: the reference keeps them."""
    obj = grader.build("nested", 3, None)
    result = reference.move_to(obj, device)
    assert torch.equal(result["x"].cpu(), obj["x"]) and result["x"].device.type == device
    assert result["pair"][1][0] is not obj["pair"][1][0] or device == "cpu"
