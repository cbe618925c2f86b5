"""Drawing autograd's backward graph with matplotlib alone (no graphviz binary to install).

    from coursekit.graphs import draw_backward_graph
    draw_backward_graph(loss, title="my loss", params=dict(model.named_parameters()))

The walk starts at ``tensor.grad_fn`` and follows ``next_functions``. Every node is drawn once, however
many paths reach it, as a box labelled with its type (``MulBackward0``, ``AccumulateGrad``...); an
``AccumulateGrad`` box also names its leaf (the parameter's name when ``params`` is given, else its
shape). An arrow goes from each node to each of its inputs: the direction in which backward passes
gradients. Nodes are laid out in rows by their longest distance from the root, so every arrow points
down, and the layout depends only on the graph: the same graph is always drawn the same way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

NODE_GID = "backward-node"
EDGE_GID = "backward-edge"
_COLOURS = {"root": "#f6c667", "leaf": "#a8d5ba", "op": "#cfe2f3"}
_BOX_W, _BOX_H = 1.7, 0.62  # in data units; columns are 2 apart and rows 1.2 apart
_INCH = 1.0  # inches per data unit in a figure of its own


@dataclass
class BackwardGraph:
    """The nodes reachable from a root (in discovery order) and the edges node -> input."""

    nodes: list = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)  # indices into nodes

    def labels(self, params: Mapping[str, torch.Tensor] | None = None) -> list[str]:
        names = {id(p): name for name, p in (params or {}).items()}
        out = []
        for node in self.nodes:
            kind = type(node).__name__
            variable = getattr(node, "variable", None) if kind == "AccumulateGrad" else None
            if variable is None:
                out.append(kind)
            elif id(variable) in names:
                out.append(f"{kind}\n{names[id(variable)]} {tuple(variable.shape)}")
            else:
                out.append(f"{kind}\nleaf {tuple(variable.shape)}")
        return out


def backward_graph(tensor: torch.Tensor) -> BackwardGraph:
    """Walk ``tensor.grad_fn`` breadth first; each node once, ``None`` inputs (no grad needed) skipped."""
    if tensor.grad_fn is None:
        why = "a leaf" if tensor.requires_grad else "a tensor that does not require grad"
        raise ValueError(f"this tensor has no grad_fn ({why}): there is no backward graph behind it")
    graph = BackwardGraph(nodes=[tensor.grad_fn])
    index = {tensor.grad_fn: 0}  # node objects are hashable; keeping them referenced keeps them stable
    queue, edges = deque([tensor.grad_fn]), set()
    while queue:
        node = queue.popleft()
        for child, _input_nr in node.next_functions:
            if child is None:
                continue
            if child not in index:
                index[child] = len(graph.nodes)
                graph.nodes.append(child)
                queue.append(child)
            edge = (index[node], index[child])
            if edge not in edges:  # an op may take the same tensor twice (x * x): one arrow
                edges.add(edge)
                graph.edges.append(edge)
    return graph


def _layout(graph: BackwardGraph) -> tuple[dict[int, tuple[float, float]], list[list[tuple[float, float]]]]:
    """Node centres, and for each edge the points its arrow passes through.

    A node's row is its longest distance from the root, so every arrow points down. An edge that skips
    rows gets a narrow invisible slot in each row it crosses, so it runs between the boxes, not through
    them. Rows are ordered by the mean position of their neighbours (a few sweeps down and up; ties in
    discovery order), which keeps crossings few and makes the layout a function of the graph alone.
    """
    n = len(graph.nodes)
    children: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for a, b in graph.edges:
        children[a].append(b)
        indegree[b] += 1
    order, ready = [], [0]  # topological order: every parent before its children
    while ready:
        v = ready.pop(0)
        order.append(v)
        for c in children[v]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    depth = [0] * n
    for v in order:
        for c in children[v]:
            depth[c] = max(depth[c], depth[v] + 1)
    # Slots: the real nodes 0..n-1, then one slot per row an edge crosses (ids n, n+1, ...).
    slot_depth, width = list(depth), [1.0] * n
    up: dict[int, list[int]] = {v: [] for v in range(n)}
    down: dict[int, list[int]] = {v: [] for v in range(n)}
    routes: list[list[int]] = []
    for a, b in graph.edges:
        chain = [a]
        for d in range(depth[a] + 1, depth[b]):
            slot = len(slot_depth)
            slot_depth.append(d)
            width.append(0.35)
            up[slot], down[slot] = [], []
            chain.append(slot)
        chain.append(b)
        for s, t in zip(chain, chain[1:]):
            down[s].append(t)
            up[t].append(s)
        routes.append(chain)
    rows: list[list[int]] = [[] for _ in range(max(depth) + 1)]
    for slot, d in enumerate(slot_depth):
        rows[d].append(slot)
    x: dict[int, float] = {}

    def place(row: list[int]) -> None:
        total = sum(width[s] for s in row)
        left = -total / 2
        for s in row:
            x[s] = left + width[s] / 2
            left += width[s]

    def sweep(row: list[int], neighbours: dict[int, list[int]]) -> None:
        def key(s: int) -> tuple[float, int]:
            near = [x[t] for t in neighbours[s] if t in x]
            return (sum(near) / len(near) if near else x.get(s, 0.0), s)

        row.sort(key=key)
        place(row)

    place(rows[0])
    for _ in range(2):
        for row in rows[1:]:
            sweep(row, up)
        for row in reversed(rows[:-1]):
            sweep(row, down)
    for row in rows[1:]:
        sweep(row, up)
    # The order within each row is now fixed; move each slot towards the mean of its neighbours, keeping
    # that order and the boxes apart, so chains (and edges that skip rows) run straight.
    neighbours = {s: up[s] + down[s] for s in x}
    for _ in range(4):
        for row in rows[1:] + list(reversed(rows[:-1])):
            wanted = [sum(x[t] for t in neighbours[s]) / len(neighbours[s]) if neighbours[s] else x[s] for s in row]
            for s, value in zip(row, _spread(wanted, [width[s] for s in row])):
                x[s] = value
    centre = {s: (2.0 * x[s], -1.2 * slot_depth[s]) for s in x}
    return {v: centre[v] for v in range(n)}, [[centre[s] for s in chain] for chain in routes]


def _spread(wanted: list[float], widths: list[float]) -> list[float]:
    """Positions closest (least squares) to ``wanted`` that keep their order and neighbours' half-widths
    apart: isotonic regression (pool adjacent violators) on ``wanted`` minus the running gaps."""
    offsets = [0.0]
    for a, b in zip(widths, widths[1:]):
        offsets.append(offsets[-1] + (a + b) / 2)
    blocks: list[list[float]] = []  # [sum of values, count]
    for value in (w - o for w, o in zip(wanted, offsets)):
        blocks.append([value, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    fitted = [total / count for total, count in blocks for _ in range(int(count))]
    return [f + o for f, o in zip(fitted, offsets)]


def draw_backward_graph(tensor: torch.Tensor, *, title: str | None = None,
                        params: Mapping[str, torch.Tensor] | None = None, ax=None, show: bool = True):
    """Draw the backward graph behind ``tensor`` and return the figure.

    ``params`` (e.g. ``dict(model.named_parameters())``) names the AccumulateGrad boxes of those
    tensors. ``ax`` draws into an existing axes (for pictures side by side). ``show=False`` leaves the
    figure open and undisplayed (for tests, or to save it).
    """
    graph = backward_graph(tensor)
    labels = graph.labels(params)
    centre, routes = _layout(graph)
    xs = [x for x, _ in centre.values()] + [x for route in routes for x, _ in route]
    left, right = min(xs) - _BOX_W / 2 - 0.1, max(xs) + _BOX_W / 2 + 0.1
    bottom, top = min(y for _, y in centre.values()) - _BOX_H / 2 - 0.1, _BOX_H / 2 + 0.1
    if ax is None:  # the same scale on both axes, so every graph is drawn with boxes of one size
        fig, ax = plt.subplots(figsize=(max(2.8, _INCH * (right - left)), _INCH * (top - bottom) + 0.45))
    else:
        fig = ax.figure
    for v, (x, y) in sorted(centre.items()):
        kind = "root" if v == 0 else "leaf" if type(graph.nodes[v]).__name__ == "AccumulateGrad" else "op"
        box = FancyBboxPatch((x - _BOX_W / 2, y - _BOX_H / 2), _BOX_W, _BOX_H,
                             boxstyle="round,pad=0.02,rounding_size=0.08", facecolor=_COLOURS[kind],
                             edgecolor="black", linewidth=0.8, zorder=2)
        box.set_gid(NODE_GID)
        ax.add_patch(box)
        longest = max(len(line) for line in labels[v].splitlines())
        ax.text(x, y, labels[v], ha="center", va="center", fontsize=min(8.5, 8.5 * 17 / longest), zorder=3)
    for route in routes:
        # From the bottom edge of the node to the top edge of its input, through the rows in between.
        points = [(route[0][0], route[0][1] - _BOX_H / 2 - 0.03)] + route[1:-1] + \
                 [(route[-1][0], route[-1][1] + _BOX_H / 2 + 0.03)]
        path = Path(points, [Path.MOVETO] + [Path.LINETO] * (len(points) - 1))
        arrow = FancyArrowPatch(path=path, arrowstyle="-|>", mutation_scale=9, linewidth=0.8, color="0.25",
                                zorder=1, shrinkA=0, shrinkB=0)
        arrow.set_gid(EDGE_GID)
        ax.add_patch(arrow)
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)
    ax.set_aspect("equal", adjustable="box")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    if show:
        fig.tight_layout()
        plt.show()
    return fig
