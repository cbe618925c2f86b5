"""graph_ops: the grader's walk and the reference equal the nodes the autograd engine runs; the graphs the
checks build are the same in the judge and in the student's process; odd answers fail without grader errors.

The odd answers use the reference solution, hence ``instructor=True``.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders.ch02_autograd import graph_ops as grader
from solutions import ch02_autograd as reference


class _Scheduled(Exception):
    """Raised by the root's pre-hook once the engine has scheduled the pass: no node runs (so a graph whose
    buffers were already freed by an earlier backward can be asked too)."""


def _engine_nodes(t: torch.Tensor) -> Counter:
    """The nodes the autograd engine itself schedules for t's backward, by type name."""
    if t.grad_fn is None:
        return Counter()
    order = []

    def grab(grads):
        order.extend(torch._C._current_graph_task_execution_order())
        raise _Scheduled

    handle = t.grad_fn.register_prehook(grab)
    try:
        with torch.autograd.set_multithreading_enabled(False), pytest.raises(_Scheduled):
            t.backward(torch.ones_like(t), retain_graph=True)
    finally:
        handle.remove()
    assert len(order) == len(set(order))
    return Counter(type(node).__name__ for node in order)


# -- the grader's walk and the reference equal the engine, on random graphs and on the checks' graphs ----
@st.composite
def random_graphs(draw):
    """A random expression: leaves (some requiring grad), ops on any earlier tensors (so nodes get shared),
    multi-output ops, detach boundaries, and a final reduction of a few of the tensors."""
    n_leaves = draw(st.integers(1, 4))
    # the first leaf requires grad, so most graphs are not empty; the others may not (None inputs)
    pool = [torch.full((4,), 0.5).requires_grad_(i == 0 or draw(st.booleans())) for i in range(n_leaves)]
    for _ in range(draw(st.integers(2, 16))):
        op = draw(st.sampled_from(["add", "mul", "add", "mul", "exp", "sin", "detach", "scale", "sum_expand",
                                   "unbind", "split"]))
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        pool.append({
            "add": lambda: a + b, "mul": lambda: a * b, "exp": lambda: (a * 0.1).exp(), "sin": lambda: a.sin(),
            "detach": lambda: a.detach(), "scale": lambda: a * 2.0, "sum_expand": lambda: a.sum().expand(4),
            "unbind": lambda: torch.stack(a.unbind(0)[::-1]),
            "split": lambda: torch.cat([p * q for p, q in [a.split(2)]] * 2),
        }[op]())
    chosen = [pool[-1]] + draw(st.lists(st.sampled_from(pool), max_size=2))
    total = chosen[0]
    for t in chosen[1:]:
        total = total + t
    return total.sum(), pool


@settings(max_examples=150, deadline=None)
@given(random_graphs())
def test_graph_ops_matches_engine(graph):
    t, _keep_alive = graph
    walked = grader._walk_graph(t).counts
    counted = reference.graph_ops(t)
    assert isinstance(counted, Counter)
    assert counted == walked
    assert walked == _engine_nodes(t)


@pytest.mark.parametrize("family", sorted(grader._FAMILIES))
def test_checks_graphs_agree_with_engine(family):
    """Every graph a check uses: grader walk == reference == engine."""
    for description, t in grader.build_family(family, "cpu"):
        walked = grader._walk_graph(t).counts
        assert walked == reference.graph_ops(t), description
        if t.requires_grad:
            assert walked == _engine_nodes(t), description


@pytest.mark.parametrize("family", sorted(grader._FAMILIES))
def test_families_build_the_same_graphs_twice(family):
    """The judge and the runner build a family separately: the node counts must not depend on the build."""
    first = [grader._walk_graph(t).counts for _, t in grader.build_family(family, "cpu")]
    torch.manual_seed(12345)  # another RNG state: values change, the structure must not
    second = [grader._walk_graph(t).counts for _, t in grader.build_family(family, "cpu")]
    assert first == second


def test_no_check_has_a_single_right_answer():
    """A constant answer (an empty Counter, the root alone) cannot pass any check."""
    for family in grader._FAMILIES:
        counts = [grader._walk_graph(t) for _, t in grader.build_family(family, "cpu")]
        assert any(c.counts and sum(c.counts.values()) > 1 for c in counts), family
    no_grad = [grader._walk_graph(t).counts for _, t in grader.build_family("no_grad_fn", "cpu")]
    assert Counter() in no_grad and any(no_grad)


def test_residual_check_defeats_a_walk_that_follows_every_path():
    (_, t), = grader.build_family("residual_large", "cpu")
    graph = grader._walk_graph(t)
    assert sum(graph.paths.values()) > 2**30
    assert sum(graph.counts.values()) < 200


def test_multi_output_check_tells_nodes_from_their_outputs():
    """Counting (node, input_nr) pairs differs from counting nodes on the multi-output graphs, and on no other
    check's graphs; counting edges differs from counting pairs on at least one of them."""
    multi = [grader._walk_graph(t) for _, t in grader.build_family("multi_output", "cpu")]
    assert sum(g.pairs != g.counts for g in multi) >= 5
    assert any(g.pairs != g.edges and g.pairs != g.counts for g in multi)
    for family in set(grader._FAMILIES) - {"multi_output"}:
        for _, t in grader.build_family(family, "cpu"):
            graph = grader._walk_graph(t)
            assert graph.pairs == graph.counts, family


def test_reference_passes(device):
    report = graders.check_namespace("graph_ops", vars(reference), device=device, instructor=True)
    assert report.passed, report.as_text()
    assert report.score == report.max_score == len(report.results)


# -- odd answers fail with a message, never with a grader error ------------------------------------
# Written as source and run here, so cloudpickle sends the functions by value: the runner then need not import
# this test module (and pytest and hypothesis with it) for every check.
ODD_ANSWERS = """
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Mapping

import torch
from solutions.ch02_autograd import graph_ops as right


def returns_list(t):
    return sorted(right(t))


def returns_defaultdict(t):
    counts = defaultdict(int)
    counts.update(right(t))
    return counts


def returns_ordered_dict(t):
    return OrderedDict(right(t))


def returns_tuple_keys(t):
    return Counter({(name, 0): n for name, n in right(t).items()})


def returns_float_counts(t):
    return Counter({name: n + 0.5 for name, n in right(t).items()})


def returns_string_counts(t):
    return {name: str(n) for name, n in right(t).items()}


def returns_generator(t):
    return (name for name in right(t))


def returns_set(t):
    return set(right(t))


class BrokenMapping(Mapping):
    def __getitem__(self, key):
        raise KeyError(key)

    def __iter__(self):
        raise RuntimeError("cannot iterate")

    def __len__(self):
        return 3

    def __repr__(self):
        raise RuntimeError("no repr either")


def returns_broken_mapping(t):
    return BrokenMapping()


def returns_tensor_keys(t):
    return {torch.tensor(1.0): 1}


class BrokenCounter(Counter):
    def items(self):
        raise RuntimeError("no items")

    def __iter__(self):
        raise RuntimeError("no keys")


def returns_broken_counter(t):
    return BrokenCounter(right(t))
"""
_namespace = {"__name__": "odd_graph_ops_answers"}
exec(compile(ODD_ANSWERS, "<odd graph_ops answers>", "exec"), _namespace)
ODD = {name: f for name, f in _namespace.items() if name.startswith("returns_")}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_answers_fail_without_grader_errors(name, device):
    report = graders.check_namespace("graph_ops", {"graph_ops": ODD[name]}, device=device, instructor=True)
    assert not report.grader_errors, report.as_text()
    assert not report.passed, report.as_text()


def test_a_counter_of_the_right_counts_in_another_mapping_type_fails_only_the_type_check():
    report = graders.check_namespace("graph_ops", {"graph_ops": ODD["returns_ordered_dict"]}, device="cpu",
                                     instructor=True)
    failed = [r.name for r in report.results if not r.passed]
    assert failed == ["returns_counter", "no_grad_fn_is_empty"], report.as_text()


def test_checks():
    checks = graders.get_exercise("graph_ops").checks
    assert 6 <= len(checks) <= 10


# -- the generated domain: every class the specification allows, and the check that uses it ----------------
def _recipes(flavour: str = "any", count: int = 500, seed: int = 0, **options) -> list:
    generator = random.Random(seed)
    return [grader.generate_recipe(generator, flavour, **options) for _ in range(count)]


def _built(recipes):
    for recipe in recipes:
        t, pool = grader.build_recipe(recipe, "cpu")
        yield recipe, t, grader._walk_graph(t)


@pytest.mark.parametrize("flavour", sorted(grader._FLAVOURS))
def test_generated_graphs_agree_with_the_reference_and_the_engine(flavour):
    for recipe, t, graph in _built(_recipes(flavour, 60, seed=1)):
        assert graph.counts == reference.graph_ops(t), grader.recipe_code(recipe)
        if t.requires_grad:
            assert graph.counts == _engine_nodes(t), grader.recipe_code(recipe)


def test_generated_graphs_build_the_same_nodes_twice():
    for recipe in _recipes(count=100, seed=2):
        first = grader._walk_graph(grader.build_recipe(recipe, "cpu")[0]).counts
        torch.manual_seed(99)
        assert grader._walk_graph(grader.build_recipe(recipe, "cpu")[0]).counts == first


def test_the_generator_draws_every_dtype_op_and_root():
    recipes = _recipes()
    assert {r.dtype for r in recipes} == set(grader._DTYPES)
    assert {op for r in recipes for op, *_ in r.ops} == set(grader._OPS)
    assert {r.root for r in recipes} == set(grader._ROOTS)
    assert any(r.after_backward for r in recipes) and not all(r.after_backward for r in recipes)
    assert {len(r.leaves) for r in recipes} == {1, 2, 3, 4, 5}
    assert max(len(r.ops) for r in recipes) == 16 and min(len(r.ops) for r in recipes) == 1


def test_the_generator_draws_inputs_that_do_not_require_grad_first_last_and_only():
    """None entries of next_functions: first, last, and graphs whose leaves all do not require grad."""
    first = last = False
    for recipe, t, graph in _built(_recipes("without_grad", 300)):
        for node in graph.nodes:
            entries = [child is None for child, _ in node.next_functions]
            first |= len(entries) > 1 and entries[0] and not all(entries)
            last |= len(entries) > 1 and entries[-1] and not all(entries)
    assert first and last
    assert any(not any(r.leaves) for r in _recipes("without_grad"))


def test_the_generator_draws_shared_and_multi_output_nodes():
    graphs = [graph for _, _, graph in _built(_recipes("shared", 200))]
    assert sum(g.paths != g.counts for g in graphs) > 50  # a node reached by several paths
    assert sum(g.edges != g.counts for g in graphs) > 50  # a node named by several next_functions entries
    assert sum(g.pairs != g.counts for g in graphs) > 10  # a node with several outputs used
    multi_partly = [g for g in graphs if any(type(n).__name__ == "SplitInTwoBackward" for n in g.nodes)]
    assert multi_partly


def test_the_generator_draws_roots_without_grad_fn_and_with():
    roots = [t.grad_fn is None for _, t, _ in _built(_recipes("any", 300))]
    assert any(roots) and not all(roots)
    forced = _recipes(count=100, root="integer")
    assert all(grader.build_recipe(r, "cpu")[0].grad_fn is None for r in forced)


def test_the_generator_draws_cut_graphs_in_place_writes_hooks_and_layers():
    names = Counter()
    for _, _, graph in _built(_recipes("any", 300, seed=3)):
        names.update(graph.counts)
    assert names["CopySlices"] and names["CloneBackward0"]  # in-place writes on non-leaves
    assert names["ToCopyBackward0"]  # dtype casts
    assert names["SplitInTwoBackward"] and names["UnbindBackward0"] and names["VarMeanBackward0"]
    ops = Counter(op for r in _recipes("cut") for op, *_ in r.ops)
    assert ops["detach"] and ops["new_leaf"] and ops["no_grad"]
    ops = Counter(op for r in _recipes("modules") for op, *_ in r.ops)
    assert ops["nested"] and ops["frozen_linear"] and ops["linear"]
    ops = Counter(op for r in _recipes() for op, *_ in r.ops)
    assert ops["hook"] and ops["retain"]


def test_the_long_graphs_have_over_256_nodes_of_one_type():
    counts = [graph.counts for _, _, graph in _built(_recipes("long", 20))]
    assert any(max(c.values(), default=0) > 256 for c in counts)


def test_shrinking_candidates_are_smaller_and_build():
    for recipe in _recipes(count=60, seed=4):
        for smaller in grader.smaller_recipes(recipe):
            assert smaller == recipe or smaller.size < recipe.size
            grader.build_recipe(smaller, "cpu")


def test_a_cache_keyed_by_node_id_fails_the_generated_graphs_with_the_smallest_one_shown():
    """Only the generated graphs (built and freed one after another) catch it: the fixed ones stay alive."""
    path = Path(__file__).parent / "submissions" / "ch02_autograd" / "graph_ops" / "bug_cache_by_node_id.py"
    report = graders.check_file("graph_ops", str(path), ["small_expressions"], device="cpu")
    (result,) = report.results
    assert not result.passed
    assert "generated graphs tried were counted wrong; the smallest one" in result.message
    assert "the generated graph  a = torch.randn(4" in result.message
