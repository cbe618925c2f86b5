"""Chapter 02 (autograd): references and graders for gelu_function, graph_ops and grad_accumulation."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders import ch02_autograd as grader
from solutions import ch02_autograd as reference
from tests.submissions import cases

EXERCISES = ["gelu_function", "graph_ops", "grad_accumulation"]


# -- gelu_function: the reference agrees with F.gelu on random shapes, strides and dtypes ----------
@st.composite
def strided_inputs(draw):
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    steps = [draw(st.integers(1, 3)) for _ in shape]
    transpose = len(shape) >= 2 and draw(st.booleans())
    scale = draw(st.sampled_from([0.5, 3.0, 10.0]))
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
    seed = draw(st.integers(0, 2**16))
    base = torch.randn([n * s for n, s in zip(shape, steps)], generator=torch.Generator().manual_seed(seed)) * scale
    x = base[tuple(slice(None, None, s) for s in steps)].to(dtype)  # .to() keeps strides (preserve_format)
    return x.transpose(0, 1) if transpose else x


@settings(max_examples=150, deadline=None)
@given(strided_inputs())
def test_reference_gelu_matches_torch(x):
    rtol, atol = grader._TOLERANCE[x.dtype] if x.dtype != torch.float64 else (1e-12, 1e-14)
    leaf = x.detach().clone().requires_grad_(True)
    got = reference.GELUFunction.apply(leaf)
    torch.testing.assert_close(got, F.gelu(x, approximate="tanh"), rtol=rtol, atol=atol)
    grad_output = torch.randn(x.shape, generator=torch.Generator().manual_seed(0)).to(x.dtype)
    (got_grad,) = torch.autograd.grad(got, leaf, grad_output)
    rtol, atol = grader._GRAD_TOLERANCE[x.dtype]
    torch.testing.assert_close(got_grad, grader._torch_gelu_grad(x, grad_output), rtol=rtol, atol=atol)


def test_reference_gelu_gradcheck():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(reference.GELUFunction.apply, (x,))


def test_reference_gelu_detects_inplace_change():
    """The spec's promise: an in-place change of the input after forward makes backward raise."""
    leaf = torch.randn(5, requires_grad=True)
    x = leaf * 1.0
    out = reference.GELUFunction.apply(x)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# -- graph_ops: the grader's walk and the reference equal the nodes the autograd engine runs -------
def _engine_nodes(t: torch.Tensor) -> Counter:
    """The nodes the autograd engine itself schedules for t's backward, by type name."""
    if t.grad_fn is None:
        return Counter()
    order = []
    handle = t.grad_fn.register_prehook(lambda grads: order.extend(torch._C._current_graph_task_execution_order()))
    with torch.autograd.set_multithreading_enabled(False):
        t.backward(torch.ones_like(t))
    handle.remove()
    assert len(order) == len(set(order))
    return Counter(type(node).__name__ for node in order)


@st.composite
def random_graphs(draw):
    """A random expression: leaves (some requiring grad), ops on any earlier tensors (so nodes get shared),
    detach boundaries, and a final reduction of a few of the tensors."""
    n_leaves = draw(st.integers(1, 4))
    # the first leaf requires grad, so most graphs are not empty; the others may not (None inputs)
    pool = [torch.full((3,), 0.5).requires_grad_(i == 0 or draw(st.booleans())) for i in range(n_leaves)]
    for _ in range(draw(st.integers(2, 16))):
        op = draw(st.sampled_from(["add", "mul", "add", "mul", "exp", "sin", "detach", "scale", "sum_expand"]))
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        pool.append({
            "add": lambda: a + b, "mul": lambda: a * b, "exp": lambda: (a * 0.1).exp(), "sin": lambda: a.sin(),
            "detach": lambda: a.detach(), "scale": lambda: a * 2.0, "sum_expand": lambda: a.sum().expand(3),
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


def test_graph_ops_checks_agree_with_engine():
    """The graphs the checks use (a network, an RNN, a residual stack): grader walk == engine."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    loss = F.cross_entropy(model(torch.randn(5, 4)), torch.randint(0, 3, (5,)))
    assert grader._walk_graph(loss).counts == reference.graph_ops(loss) == _engine_nodes(loss)
    x = torch.randn(2, 4)
    for block in [torch.nn.Linear(4, 4) for _ in range(30)]:
        x = x + torch.relu(block(x))
    graph = grader._walk_graph(x.sum())
    assert graph.counts == reference.graph_ops(x.sum()) == _engine_nodes(x.sum())
    assert sum(graph.paths.values()) > 2**30  # the check really does defeat a walk that follows every path


# -- grad_accumulation: the reference equals ordinary training on concatenated windows -------------
@settings(max_examples=25, deadline=None)
@given(windows=st.integers(1, 4), accum=st.integers(1, 4), momentum=st.sampled_from([0.0, 0.9]),
       seed=st.integers(0, 2**16))
def test_reference_accumulation_equals_ordinary_training(windows, accum, momentum, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    batches = [(torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 1, dtype=torch.float64))
               for _ in range(windows * accum)]
    twin = copy.deepcopy(model)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=momentum)
    expected_losses = []
    for w in range(windows):
        window = batches[w * accum:(w + 1) * accum]
        twin_opt.zero_grad()
        loss = F.mse_loss(twin(torch.cat([x for x, _ in window])), torch.cat([y for _, y in window]))
        loss.backward()
        twin_opt.step()
        expected_losses.append(loss.item())
    for p in model.parameters():
        p.grad = torch.full_like(p, 3.0)  # left over from before: must not leak in
    got = reference.train_with_accumulation(model, batches, F.mse_loss,
                                            torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum), accum)
    assert all(type(v) is float for v in got)
    assert got == pytest.approx(expected_losses, rel=1e-9)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n, accum", [(4, 0), (4, -1), (5, 2), (3, 2)])
def test_reference_accumulation_rejects_bad_windows(n, accum):
    model = torch.nn.Linear(2, 1)
    batches = [(torch.randn(2, 2), torch.randn(2, 1))] * n
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError):
        reference.train_with_accumulation(model, batches, F.mse_loss, optimizer, accum)


def test_gelu_catalogue_has_required_styles():
    """The issue asks for a setup_context solution and a once_differentiable one among the correct ones."""
    texts = [p.values[1].read_text() for p in cases("ch02_autograd", "correct_") if p.values[0] == "gelu_function"]
    assert any("def setup_context" in t for t in texts)
    assert any("@once_differentiable" in t for t in texts)


def test_checks_per_exercise():
    for exercise_id in EXERCISES:
        assert 6 <= len(graders.core.get_exercise(exercise_id).checks) <= 10, exercise_id
