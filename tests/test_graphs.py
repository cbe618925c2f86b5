"""coursekit.graphs: the backward-graph picture has one box per node and one arrow per edge."""

from __future__ import annotations

from collections import Counter

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from torch import nn  # noqa: E402

from coursekit.graphs import EDGE_GID, NODE_GID, backward_graph, draw_backward_graph  # noqa: E402


def _boxes(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch) and p.get_gid() == NODE_GID]


def _arrows(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch) and p.get_gid() == EDGE_GID]


def _labels(fig):
    return sorted(t.get_text() for t in fig.axes[0].texts)


def _diamond():
    """x feeds two branches that meet again: x -> (x * 2, x.exp()) -> add -> sum."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return x, ((x * 2) + x.exp()).sum()


def test_diamond_draws_each_node_once():
    _, out = _diamond()
    fig = draw_backward_graph(out, show=False)
    try:
        # Sum, Add, Mul, Exp and ONE AccumulateGrad for x, although two paths reach it.
        assert len(_boxes(fig)) == 5
        assert len(_arrows(fig)) == 5  # Sum->Add, Add->Mul, Add->Exp, Mul->Acc, Exp->Acc
        assert _labels(fig) == sorted(["SumBackward0", "AddBackward0", "MulBackward0", "ExpBackward0",
                                       "AccumulateGrad\nleaf (2,)"])
    finally:
        plt.close(fig)


def test_arrows_point_down_and_boxes_do_not_overlap():
    _, out = _diamond()
    fig = draw_backward_graph(out, show=False)
    try:
        boxes = [(b.get_x(), b.get_y(), b.get_width(), b.get_height()) for b in _boxes(fig)]
        for i, (x1, y1, w1, h1) in enumerate(boxes):
            for x2, y2, w2, h2 in boxes[i + 1:]:
                assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1
        for arrow in _arrows(fig):
            vertices = arrow.get_path().vertices
            assert vertices[0][1] > vertices[-1][1]  # the input (arrow head) is drawn below its user
    finally:
        plt.close(fig)


def test_layout_is_deterministic():
    def positions():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
        loss = model(torch.randn(5, 3)).pow(2).mean()
        fig = draw_backward_graph(loss, params=dict(model.named_parameters()), show=False)
        try:
            return [(b.get_x(), b.get_y()) for b in _boxes(fig)], _labels(fig)
        finally:
            plt.close(fig)

    assert positions() == positions()


def test_parameters_are_named_and_inputs_without_grad_skipped():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    loss = model(torch.randn(5, 3)).pow(2).mean()  # the input does not require grad: no box for it
    graph = backward_graph(loss)
    assert Counter(type(node).__name__ for node in graph.nodes) == Counter(
        MeanBackward0=1, PowBackward0=1, AddmmBackward0=2, ReluBackward0=1, TBackward0=2, AccumulateGrad=4)
    fig = draw_backward_graph(loss, params=dict(model.named_parameters()), show=False)
    try:
        leaves = [t for t in _labels(fig) if t.startswith("AccumulateGrad")]
        assert leaves == sorted(f"AccumulateGrad\n{name} {tuple(p.shape)}" for name, p in model.named_parameters())
    finally:
        plt.close(fig)


def test_tensor_without_graph_is_refused():
    with pytest.raises(ValueError, match="no grad_fn"):
        draw_backward_graph(torch.ones(2, requires_grad=True), show=False)
    with pytest.raises(ValueError, match="does not require grad"):
        draw_backward_graph(torch.ones(2), show=False)


def test_draws_into_given_axes():
    _, out = _diamond()
    fig, (left, right) = plt.subplots(1, 2)
    try:
        assert draw_backward_graph(out, ax=right, show=False) is fig
        assert not left.patches and len(right.patches) == 10
    finally:
        plt.close(fig)
