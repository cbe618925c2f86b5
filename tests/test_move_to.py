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


# -- the generated domain (issue 32): each class the specification allows is drawn ---------------------------
def _drawn_cases(count=500, seed=0, targets=("meta", "meta", "cpu")):
    import random

    from graders import domain

    random.seed(seed)
    return domain.draw(lambda g: grader.generate_case(g, targets), count)


def _nodes(plan, depth=0):
    yield plan, depth
    kind = plan[0]
    children = ([c for _, c in plan[2]] if kind == "dict" else list(plan[1]) if kind in ("list", "tuple") else
                list(plan[2]) if kind in ("named_tuple", "dataclass") else [])
    for child in children:
        yield from _nodes(child, depth + 1)


def test_the_generator_draws_every_container_nested_deeper_and_wider():
    nodes = [(node, depth) for case in _drawn_cases() for node, depth in _nodes(case.plan)]
    assert {n[1] for n, _ in nodes if n[0] == "dict"} == set(grader.DICTS)
    assert {n[1] for n, _ in nodes if n[0] == "named_tuple"} == set(grader.NAMED_TUPLES)
    assert {n[1] for n, _ in nodes if n[0] == "dataclass"} == set(grader.DATACLASSES)
    assert {"list", "tuple"} <= {n[0] for n, _ in nodes}
    assert max(depth for _, depth in nodes) >= 4  # deeper than any recipe
    assert any(n[0] in ("list", "tuple") and len(n[1]) == 0 for n, _ in nodes)  # empty containers
    assert any(n[0] == "dict" and len(n[2]) == 0 for n, _ in nodes)
    assert any(n[0] in ("list", "tuple") and len(n[1]) >= 4 for n, _ in nodes)  # wider
    assert {k[1] for n, _ in nodes if n[0] == "dict" for k, _ in n[2]} == set(grader.KEYS)


def test_the_generator_draws_every_tensor_state_and_every_object_returned_as_is():
    cases = _drawn_cases()
    nodes = [node for case in cases for node, _ in _nodes(case.plan)]
    tensors = [n for n in nodes if n[0] == "tensor"]
    assert {t[1] for t in tensors} == set(grader.GEN_DTYPES)
    assert {t[3] for t in tensors} == {"contiguous", "zero_dim", "empty", "transposed", "strided", "offset", "expanded"}
    assert {t[4] for t in tensors} == {"no", "leaf", "nonleaf", "parameter"}
    assert {t[5] for t in tensors} == {"cpu", "there"}  # some already on the target
    assert any(n[0] == "shared" for n in nodes)  # the same tensor object twice
    assert {n[1] for n in nodes if n[0] == "atom"} == set(grader.ATOMS)
    assert {str(c.target) for c in cases} == {"meta", "cpu"}
    assert {type(c.target) for c in cases} == {str, torch.device}
    assert {c.non_blocking for c in cases} == {None, False, True}


def test_built_plans_are_the_same_in_both_processes_and_have_what_the_plan_says():
    for case in _drawn_cases(200):
        first = grader.build_plan(case.plan, case.seed, case.target)
        second = grader.build_plan(case.plan, case.seed, case.target)
        a = grader._jsonable(grader.describe(first, grader.paths_of(first)))
        b = grader._jsonable(grader.describe(second, grader.paths_of(second)))
        strip = lambda d: {k: strip(v) for k, v in d.items() if k not in ("serial",)} if isinstance(d, dict) else \
            [strip(v) for v in d] if isinstance(d, list) else d  # noqa: E731
        assert strip(a) == strip(b), grader.plan_text(case.plan)
    made = grader.build_plan(("list", (("tensor", "float16", (2, 3), "transposed", "leaf", "there"),
                                       ("tensor", "int64", (2,), "expanded", "no", "cpu"),
                                       ("atom", "fields_record"), ("dataclass", "ChildSample", (("atom", "none"),) * 4))),
                             0, "meta")
    assert made[0].device.type == "meta" and made[0].requires_grad and not made[0].is_contiguous()
    assert made[1].stride()[0] == 0 and made[1].dtype == torch.int64
    assert isinstance(made[2], grader.FieldsRecord) and not isinstance(made[2], tuple)
    assert isinstance(made[3], grader.Sample) and type(made[3]) is grader.ChildSample


def test_the_reference_meets_every_promise_on_generated_structures():
    """The judge's own criteria applied to the reference, in process."""
    for case in _drawn_cases(300, seed=3):
        obj = grader.build_plan(case.plan, case.seed, case.target)
        paths = grader.paths_of(obj)
        before = grader.describe(obj, paths)
        recorder = grader._ToCalls()
        kwargs = {} if case.non_blocking is None else {"non_blocking": case.non_blocking}
        with recorder:
            result = reference.move_to(obj, case.target, **kwargs)
        seen = grader._jsonable({"before": before, "result": grader.describe(result, paths),
                                 "after": grader.describe(obj, paths), "to_calls": recorder.to_calls})
        expected = grader._jsonable(grader.expected(obj, case.target, paths))
        assert grader._generated_problem(grader.Observed(case, seen, expected)) is None, grader.gen_call_text(case)


@pytest.mark.parametrize("fixture, words", [("bug_fields_without_tuple_check", "FieldsRecord"),
                                            ("bug_dataclass_own_annotations", "ChildSample")])
def test_a_generated_check_rejects_a_bug_the_recipes_miss_and_shows_the_smallest_case(fixture, words):
    import graders
    from tests.submissions import ROOT

    path = ROOT / "ch05_devices" / "move_to" / f"{fixture}.py"
    report = graders.check_file("move_to", str(path), device="cpu")
    failed = [r for r in report.results if not r.passed]
    assert [r.name for r in failed] == ["generated_structures"]  # every hand-written check passes it
    message = failed[0].message
    assert words in message and "this is the smallest" in message
    shown = message.split(" with obj = ")[1].split("\n")[0]
    assert shown.count("(") <= 6  # shrunk: one container around the culprit, not the drawn structure
