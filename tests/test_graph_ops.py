"""graph_ops: the grader's walk and the reference equal the nodes the autograd engine runs; the graphs the
checks build are the same in the judge and in the student's process; odd answers fail without grader errors.

The odd answers use the reference solution, hence ``instructor=True``.
"""

from __future__ import annotations

from collections import Counter

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
