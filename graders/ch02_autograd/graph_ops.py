"""graph_ops(t) -> a Counter of the node type names of t's backward graph, each node counted once.

A tensor with a ``grad_fn`` cannot be sent to the student's process, so every graph is built twice from
the same *family* (a module-level builder named by the check): once in the student's process, where the
student's ``graph_ops`` walks it (twice, to see whether anything survives from one call to the next), and
once here, where the judge walks its own copy of ``grad_fn.next_functions`` (the test suite proves that
walk visits exactly the nodes the autograd engine executes). Graph structure does not depend on the
random values in the tensors, so both copies have the same nodes.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections import Counter
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from graders.compare import one_torch_thread, show
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise
from graders.student import Submission

GRAPH_OPS = exercise("graph_ops", chapter="02_autograd", names=["graph_ops"])


# ==================================================================================================
# The graphs (built identically in the judge and in the student's process)
# ==================================================================================================
class SplitInTwo(torch.autograd.Function):
    """A custom autograd Function with two outputs: its one backward node (``SplitInTwoBackward``) is the
    input of both outputs' consumers, reached through two edges with different ``input_nr``."""

    @staticmethod
    def forward(ctx, x):
        return x[:2] * 2.0, x[2:] * 3.0

    @staticmethod
    def backward(ctx, grad_first, grad_second):
        return torch.cat([grad_first * 2.0, grad_second * 3.0])


def _leaf(generator: torch.Generator, *shape: int, device: torch.device, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(shape, generator=generator, dtype=dtype).to(device).requires_grad_(True)


def _data(generator: torch.Generator, *shape: int, device: torch.device) -> torch.Tensor:
    return torch.randn(shape, generator=generator).to(device)


Cases = list[tuple[str, torch.Tensor]]


def _family_returns_counter(device: torch.device, g: torch.Generator) -> Cases:
    a, b = _leaf(g, 3, device=device), _leaf(g, 3, device=device)
    return [("t = (a * b).sum(), with a, b leaves requiring grad", (a * b).sum()),
            ("t = (a.exp().exp() * b).mean(), with a, b leaves requiring grad", (a.exp().exp() * b).mean())]


def _copy_slices(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    y = a.clone()
    y[0] = (b * c).sum()
    return y.sum()


def _family_small_expressions(device: torch.device, g: torch.Generator) -> Cases:
    a, b, c = (_leaf(g, 3, device=device) for _ in range(3))
    w = _leaf(g, 3, 2, device=device)
    z = _leaf(g, 4, device=device, dtype=torch.complex64)
    e = _leaf(g, 0, device=device)
    used = (a * b).exp()
    used.sum().backward()  # its saved buffers are freed: the nodes (and their next_functions) remain
    return [
        ("t = (a * b).sum(), with a, b leaves requiring grad", (a * b).sum()),
        ("t = a.sin().cos().exp(), a leaf requiring grad", a.sin().cos().exp()),
        ("t = ((a * b).exp() + c * 2).mean(), with a, b, c leaves requiring grad", ((a * b).exp() + c * 2).mean()),
        ("t = torch.tanh(a @ w + b[:2]).sum(), with a, w, b leaves requiring grad", torch.tanh(a @ w + b[:2]).sum()),
        ("t = y.sum() where y = a.clone(); y[0] = (b * c).sum() (an in-place write)", _copy_slices(a, b, c)),
        ("t = w.exp()[1:].t() (a non-contiguous view, not a scalar)", w.exp()[1:].t()),
        ("t = (z * z.conj()).real.sum(), z a complex64 leaf requiring grad", (z * z.conj()).real.sum()),
        ("t = a.double().sin().float().sum() (dtype conversions are nodes too)", a.double().sin().float().sum()),
        ("t = (e * 2).sum(), e an empty leaf of shape (0,) requiring grad", (e * 2).sum()),
        ("t = (a * b).exp() after t.sum().backward() already ran (the graph's buffers are freed)", used),
    ]


def _family_no_grad_fn(device: torch.device, g: torch.Generator) -> Cases:
    a = _leaf(g, 3, device=device)
    with torch.no_grad():
        under_no_grad = a * 2
    # Tensors WITH a grad_fn sit between the ones without, so an answer that is always empty is wrong.
    return [
        ("t = a leaf that requires grad (its grad_fn is None)", a),
        ("t = a * 2 (a requires grad, so this one has a grad_fn)", a * 2),
        ("t = a tensor that does not require grad", _data(g, 3, device=device)),
        ("t = a * 2 computed under torch.no_grad()", under_no_grad),
        ("t = (a * 2).detach()", (a * 2).detach()),
        ("t = (a * 2).detach() * a (only the right factor has a graph)", (a * 2).detach() * a),
        ("t = x * y with x, y not requiring grad", _data(g, 3, device=device) * _data(g, 3, device=device)),
        ("t = (a * 2).argmax() (an integer result: never differentiable)", (a * 2).argmax()),
        ("t = a.exp() > 0 (a bool result)", a.exp() > 0),
    ]


def _family_shared_nodes(device: torch.device, g: torch.Generator) -> Cases:
    a, b = _leaf(g, 4, device=device), _leaf(g, 4, device=device)
    y = a.exp()
    h = a * b
    return [
        ("t = a * a (one leaf used twice)", a * a),
        ("t = (y * y.sin() + y).sum() with y = a.exp() (y's node is reached by three paths)",
         (y * y.sin() + y).sum()),
        ("t = (h + h * h).mean() with h = a * b", (h + h * h).mean()),
        ("t = (a * b + a.exp() * b).sum()", (a * b + a.exp() * b).sum()),
        ("t = a[0] * a[1] (one leaf reached through two different views)", a[0] * a[1]),
    ]


def _family_inputs_without_grad(device: torch.device, g: torch.Generator) -> Cases:
    a, w = _leaf(g, 4, device=device), _leaf(g, 4, 2, device=device)
    c, x = _data(g, 4, device=device), _data(g, 5, 4, device=device)
    return [
        ("t = a * c, with c not requiring grad", a * c),
        ("t = c * a, with c not requiring grad (the None entry comes first)", c * a),
        ("t = (x @ w).relu().sum(), with the data x not requiring grad", (x @ w).relu().sum()),
        ("t = (a + c * 3).exp().sum(), with c not requiring grad", (a + c * 3).exp().sum()),
        ("t = torch.stack([c, a, c, a.sin()]).sum(), with c not requiring grad", torch.stack([c, a, c, a.sin()]).sum()),
        ("t = torch.stack([a * w[:, 0], c, a.sin()]).sum(), with c not requiring grad",
         torch.stack([a * w[:, 0], c, a.sin()]).sum()),
    ]


def _family_detach(device: torch.device, g: torch.Generator) -> Cases:
    a, b = _leaf(g, 4, device=device), _leaf(g, 4, device=device)
    h = a.exp().detach().requires_grad_(True)
    y = a * b
    y.retain_grad()
    return [
        ("t = (a.exp().detach() * b).sum()", (a.exp().detach() * b).sum()),
        ("t = (h * b).sum() with h = a.exp().detach().requires_grad_()", (h * b).sum()),
        ("t = a.exp() (a non-leaf in the middle of a larger computation)", a.exp()),
        ("t = y.tanh() with y = a * b and y.retain_grad()", y.tanh()),
        ("t = a[1:] (a view of a leaf is not a leaf)", a[1:]),
    ]


def _family_multi_output(device: torch.device, g: torch.Generator) -> Cases:
    a, m = _leaf(g, 3, 4, device=device), _leaf(g, 6, device=device)
    r0, r1, r2 = a.unbind(0)
    p, q = m.split(3)
    c0, c1, c2 = m.chunk(3)
    values, indices = a.max(dim=1)
    var, mean = torch.var_mean(a, dim=0)
    low, high = torch.aminmax(a, dim=1)
    first, second = SplitInTwo.apply(m[:5])
    only_first, _ = SplitInTwo.apply(m[1:] * 2)
    return [
        ("t = (r0 * r1 + r2 * r0).sum() with r0, r1, r2 = a.unbind(0) (one node with three outputs, all used)",
         (r0 * r1 + r2 * r0).sum()),
        ("t = p * q with p, q = m.split(3)", p * q),
        ("t = (c0 + c2).sum() with c0, c1, c2 = m.chunk(3) (two of the three outputs used)", (c0 + c2).sum()),
        ("t = values.sum() + a.gather(1, indices[:, None]).sum() with values, indices = a.max(dim=1)",
         values.sum() + a.gather(1, indices[:, None]).sum()),
        ("t = (var + mean * mean).sum() with var, mean = torch.var_mean(a, dim=0)", (var + mean * mean).sum()),
        ("t = (high - low).sum() with low, high = torch.aminmax(a, dim=1)", (high - low).sum()),
        ("t = first.sum() * second.sum() with first, second = SplitInTwo.apply(m[:5]) (a custom "
         "autograd.Function with two outputs)", first.sum() * second.sum()),
        ("t = only_first.exp() with only_first, _ = SplitInTwo.apply(m[1:] * 2) (one output of two used)",
         only_first.exp()),
        ("t = a.unbind(0)[1].exp().sum() (one output of unbind used)", a.unbind(0)[1].exp().sum()),
    ]


def _family_two_layer(device: torch.device, g: torch.Generator) -> Cases:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    x, y = _data(g, 5, 4, device=device), torch.randint(0, 3, (5,), generator=g).to(device)
    return [("t = F.cross_entropy(model(x), y), model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), "
             "x of shape (5, 4)", F.cross_entropy(model(x), y))]


def _family_rnn(device: torch.device, g: torch.Generator) -> Cases:
    w_x, w_h, bias = _leaf(g, 3, 4, device=device), _leaf(g, 4, 4, device=device), _leaf(g, 4, device=device)
    xs = _data(g, 130, 2, 3, device=device)
    h = torch.zeros(2, 4).to(device)
    for x in xs:
        h = torch.tanh(x @ w_x + h @ w_h + bias)
    return [("t = h.sum() after 130 steps of h = torch.tanh(x_t @ w_x + h @ w_h + bias)", h.sum())]


def _residual(device: torch.device, g: torch.Generator, blocks: int) -> torch.Tensor:
    x = _data(g, 2, 4, device=device)
    for _ in range(blocks):
        block = nn.Linear(4, 4).to(device)
        x = x + torch.relu(block(x))
    return x.sum()


_RESIDUAL_SMALL = ("t = x.sum() after 8 residual blocks x = x + torch.relu(linear(x)) (256 paths from t to the input "
                   "of the first block)")
_RESIDUAL_LARGE = ("t = x.sum() after 30 residual blocks x = x + torch.relu(linear(x)): each block doubles the "
                   "number of paths (2**30 in all), not the number of nodes")


def _family_residual_small(device: torch.device, g: torch.Generator) -> Cases:
    return [(_RESIDUAL_SMALL, _residual(device, g, 8))]


def _family_residual_large(device: torch.device, g: torch.Generator) -> Cases:
    return [(_RESIDUAL_LARGE, _residual(device, g, 30))]


_FAMILIES: dict[str, Callable[[torch.device, torch.Generator], Cases]] = {
    "returns_counter": _family_returns_counter,
    "small_expressions": _family_small_expressions,
    "no_grad_fn": _family_no_grad_fn,
    "shared_nodes": _family_shared_nodes,
    "inputs_without_grad": _family_inputs_without_grad,
    "detach": _family_detach,
    "multi_output": _family_multi_output,
    "two_layer": _family_two_layer,
    "rnn": _family_rnn,
    "residual_small": _family_residual_small,
    "residual_large": _family_residual_large,
}


def build_family(name: str, device: torch.device | str) -> Cases:
    """The (description, t) cases of a family; the same nodes wherever it is built."""
    generator = torch.Generator().manual_seed(len(name))
    with torch.enable_grad(), one_torch_thread():
        return _FAMILIES[name](torch.device(device), generator)


# ==================================================================================================
# In the student's process: call graph_ops on each graph (twice) and describe what came back
# ==================================================================================================
def _text(value) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a student's __repr__ may raise
        return f"<{type(value).__qualname__}>"
    return text[:80] if isinstance(text, str) else f"<{type(value).__qualname__}>"


def _key(key) -> tuple:
    """How a key of the student's mapping looks: ("str", s), ("class", name), ("node", type name),
    ("none",) or ("other", type name, repr)."""
    if isinstance(key, str):
        return ("str", str(key))
    if key is None:
        return ("none",)
    if isinstance(key, type):
        return ("class", key.__name__)
    if isinstance(key, torch.autograd.graph.Node):
        return ("node", type(key).__name__)
    return ("other", type(key).__qualname__, _text(key))


def _describe(result) -> dict:
    items = None
    if isinstance(result, Mapping):
        try:
            items = [(_key(k), v if isinstance(v, (int, float, str)) else ("repr", _text(v)))
                     for k, v in list(result.items())]
        except Exception:  # noqa: BLE001 - a student's own Mapping may fail to iterate
            items = None
    shown = result if items is None or all(k[0] == "str" for k, _ in items) else None
    if items is None and isinstance(result, Mapping):
        shown = _text(result)  # a mapping that cannot even be iterated: shown by its repr only
    return {"result": shown, "type": type(result).__qualname__, "counter": isinstance(result, Counter),
            "items": items}


def _call(student: RunnerStudent, t: torch.Tensor) -> dict:
    try:
        return _describe(student.call("graph_ops", t))
    except StudentRaised as exc:
        if exc.error.kind != "raised":
            raise
        return {"raised": dataclasses.asdict(exc.error)}


def observe_family(student: RunnerStudent, family: str, device: str) -> list[dict]:
    """Scenario: graph_ops(t) for each graph of the family, called twice on the same t."""
    cases = build_family(family, device)
    return [{"first": _call(student, t), "second": _call(student, t)} for _, t in cases]


# ==================================================================================================
# In the judge: the right counts, and the counts that the usual slips give
# ==================================================================================================
@dataclasses.dataclass
class _Graph:
    """The nodes reachable from a root, found by the grader's own walk over ``next_functions``."""

    nodes: list  # in breadth-first order; the list keeps them alive, so their identity is stable
    counts: Counter
    paths: Counter  # counting every path (no "seen" set): sum over nodes of #paths to it
    edges: Counter  # counting every edge into a node (the root once): a node counted each time it is met
    pairs: Counter  # a "seen" set of (node, input_nr) pairs: a multi-output node counted once per output used
    first_input_only: Counter  # following only next_functions[0]


def _walk_graph(t: torch.Tensor) -> _Graph:
    root = t.grad_fn
    if root is None:
        return _Graph([], Counter(), Counter(), Counter(), Counter(), Counter())
    order, seen, children_of = [root], {root}, {}
    in_edges: Counter = Counter()
    in_pairs: dict = {}
    i = 0
    while i < len(order):
        node = order[i]
        i += 1
        children = []
        for child, input_nr in node.next_functions:
            if child is None:  # an input that does not require grad: not a node
                continue
            children.append(child)
            in_edges[child] += 1
            in_pairs.setdefault(child, set()).add(input_nr)
            if child not in seen:
                seen.add(child)
                order.append(child)
        children_of[node] = children
    counts = Counter(type(n).__name__ for n in order)
    indegree = Counter(in_edges)
    ready, npaths = [root], Counter({root: 1})
    while ready:  # number of paths from the root to each node, in topological order (Kahn's algorithm)
        node = ready.pop()
        for child in children_of[node]:
            npaths[child] += npaths[node]
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    paths, edges, pairs = Counter(), Counter(), Counter()
    for node in order:
        name = type(node).__name__
        paths[name] += npaths[node]
        edges[name] += in_edges[node] if node is not root else 1
        pairs[name] += len(in_pairs[node]) if node is not root else 1
    first, node = Counter(), root
    while node is not None:
        first[type(node).__name__] += 1
        node = node.next_functions[0][0] if node.next_functions else None
    return _Graph(order, counts, paths, edges, pairs, first)


def _show_counts(c: Mapping) -> str:
    return "Counter({" + ", ".join(f"{k!r}: {v}" for k, v in sorted(c.items(), key=lambda kv: str(kv[0]))) + "})"


def _show_items(items: list) -> str:
    shown = []
    for key, value in items:
        if key[0] == "str":
            text = repr(key[1])
        elif key[0] == "class":
            text = f"<class '{key[1]}'>"
        elif key[0] == "node":
            text = f"<{key[1]} object>"
        elif key[0] == "none":
            text = "None"
        else:
            text = key[2]
        shown.append(f"{text}: {value[1] if isinstance(value, tuple) else repr(value)}")
    more = f", … ({len(shown)} entries)" if len(shown) > 12 else ""
    return "{" + ", ".join(shown[:12]) + more + "}"


def _show_observed(observed: dict) -> str:
    if "raised" in observed:
        return f"an error ({observed['raised'].get('summary', '')})"
    counts = _counts(observed)
    if counts is not None:
        return _show_counts(counts)
    if observed["items"] is not None:
        return _show_items(observed["items"])
    return f"{show(observed['result'])} (a {observed['type']})"


def _counts(observed: dict) -> Counter | None:
    """The student's counts as a Counter of str keys (zero counts dropped), or None when they are not that."""
    items = observed.get("items")
    if items is None:
        return None
    if any(key[0] != "str" or not isinstance(value, numbers.Number) or isinstance(value, bool)
           for key, value in items):
        return None
    return Counter({key[1]: value for key, value in items if value != 0})


def _strip_suffix(name: str) -> str:
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix) and name != suffix:
            return name[: -len(suffix)]
    return name


def _key_causes(items: list) -> list[str]:
    kinds = [key[0] for key, _ in items]
    names = [key[1] for key, _ in items if key[0] == "str"]
    if "class" in kinds:
        return ["the keys are node classes; use their names, type(node).__name__"]
    if "node" in kinds:
        return ["the keys are the nodes themselves; count by their type's name, counts[type(node).__name__] += 1"]
    if "none" in kinds or any(n in ("NoneType", "None") for n in names):
        return ["a None entry of next_functions was counted as a node; None marks an input that does not require "
                "grad: skip it"]
    if any("::" in n for n in names):
        return ["node.name() gives 'torch::autograd::AccumulateGrad' for leaves; the keys are type(node).__name__, "
                "which gives 'AccumulateGrad'"]
    if any(n.startswith("<class") for n in names):
        return ["str(type(node)) gives \"<class 'MulBackward0'>\"; the keys are type(node).__name__"]
    if names and all(len(n) == 1 for n in names):
        return ["the keys are single letters: Counter.update(name) with a string counts its letters; add one per node "
                "with counts[name] += 1 (or counts.update([name]))"]
    return []


def _items_where(items: list) -> str | None:
    """Where a mapping that is not a Counter of str keys and counts goes wrong."""
    for key, value in items:
        if key[0] == "other":
            return f"a key of type {key[1]} ({key[2]}); the keys are node type names (str), type(node).__name__"
        if key[0] == "str" and (isinstance(value, (bool, tuple)) or not isinstance(value, numbers.Number)):
            shown = value[1] if isinstance(value, tuple) else repr(value)
            return f"the value for {key[1]!r} is {shown}; the values are numbers of nodes (int)"
    return None


def _counts_causes(graph: _Graph, got: Counter) -> list[str]:
    """The known slips whose wrong walk gives exactly the student's counts on this graph."""
    expected = graph.counts
    root = type(graph.nodes[0]).__name__ if graph.nodes else None
    stripped = Counter()
    for name, count in expected.items():
        stripped[_strip_suffix(name)] += count
    known = [
        (graph.paths, "a node reached by two (or more) paths was counted twice (once per path); keep a set of the "
                      "nodes already seen and count each node once"),
        (graph.edges, "a node was counted every time an edge leads to it (once per entry of next_functions that "
                      "names it); count it only the first time it is seen"),
        (graph.pairs, "a node with several outputs (unbind, split, max, a custom Function...) was counted once per "
                      "output: its next_functions entries (node, input_nr) differ in input_nr; keep a set of the "
                      "nodes themselves, not of the (node, input_nr) pairs"),
        (expected - Counter({root: 1}) if root else None,
         "t.grad_fn itself was not counted; the walk starts at it and it counts too"),
        (expected - Counter({"AccumulateGrad": expected["AccumulateGrad"]}),
         "the AccumulateGrad nodes are missing: each leaf that requires grad is reached through one AccumulateGrad "
         "node, and those count too"),
        (Counter({k: 1 for k in expected}),
         "each node type was counted once; each node adds 1 to its type's count (two MulBackward0 nodes: 2)"),
        (graph.first_input_only,
         "only the first entry of next_functions was followed; a node's inputs are ALL of its next_functions"),
        (stripped, "the keys are the full type names, type(node).__name__ ('MulBackward0', not 'Mul')"),
    ]
    return [cause for wrong, cause in known if wrong is not None and wrong != expected and got == wrong]


def _difference(expected: Counter, got: Counter) -> str | None:
    parts = []
    if expected - got:
        parts.append(f"missing {_show_counts(expected - got)}")
    if got - expected:
        parts.append(f"extra {_show_counts(got - expected)}")
    return "; ".join(parts) or None


def _raised(student_facts: dict, description: str) -> None:
    """graph_ops raised on this graph: report it, with the usual slip where the error singles it out."""
    error = StudentError(**student_facts)
    call = f"graph_ops(t) for {description}"
    message = error.exception_message
    cause = None
    if error.exception_type == "AttributeError" and "'tuple' object has no attribute" in message:
        cause = ("each entry of node.next_functions is a pair (next_node, input_nr); unpack it: "
                 "for child, _ in node.next_functions")
    elif error.exception_type == "AttributeError" and "NoneType" in message:
        cause = ("t.grad_fn is None for a leaf or a tensor that does not require grad (return an empty Counter "
                 "then), and a None entry of next_functions marks an input that does not require grad (skip it)")
    if cause:
        fail(f"{call} {error.describe()}\n  likely cause: {cause}")
    raise StudentCodeError(error).within(call) from None


def _observe(student: Submission, family: str, device: torch.device) -> list[dict]:
    try:
        return student.scenario(observe_family, family, str(device))
    except StudentCodeError as exc:
        raise exc.within(f"graph_ops(t) on the graphs of this check ({family})") from None


def _expect_counts(student: Submission, family: str, device: torch.device, what: str) -> list[dict]:
    """graph_ops on every graph of the family; report the first wrong one, with the slip that explains them all.

    Returns what the first call returned on each graph (its description).
    """
    cases = build_family(family, device)
    graphs = [_walk_graph(t) for _, t in cases]
    observed = _observe(student, family, device)
    failures, results = [], []
    for (description, _), graph, seen in zip(cases, graphs, observed):
        for attempt in ("first", "second"):
            if "raised" in seen[attempt]:
                _raised(seen[attempt]["raised"], description)
        first, second = seen["first"], seen["second"]
        results.append(first)
        items = first["items"]
        if items is None:
            cause = ("graph_ops returned None on this path (a missing return, or a bare `return`); return a "
                     "collections.Counter (an empty one when t.grad_fn is None)" if first["type"] == "NoneType" else
                     "graph_ops must return a collections.Counter of node type names")
            fail_mismatch(what, given=description, expected=_show_counts(graph.counts), got=_show_observed(first),
                          cause=cause)
        counts = _counts(first)
        if counts is None or counts != graph.counts:
            failures.append((description, graph, first, second))
        elif _counts(second) != counts:
            fail_mismatch(f"{what}: a second call on the same t gave different counts", given=description,
                          expected=f"{_show_counts(graph.counts)} both times",
                          got=f"{_show_counts(counts)}, then {_show_observed(second)}",
                          cause="something survives from one call to the next (a Counter or a set of seen nodes "
                                "created once, at module level or as a default argument); create them inside "
                                "graph_ops, fresh for every call")
    if not failures:
        return results
    explained = []
    for _, graph, first, _ in failures:
        counts = _counts(first)
        explained.append(_key_causes(first["items"]) or
                         (_counts_causes(graph, counts) if counts is not None else []))
    description, graph, first, second = failures[0]
    # A slip shows in every graph it touches: name it only when it alone explains every wrong answer.
    common = [c for c in explained[0] if all(c in other for other in explained)]
    cause = common[0] if len(common) == 1 else None
    counts = _counts(first)
    if counts is not None and _counts(second) != counts:
        cause = ("a second call on the same t gave different counts: something survives from one call to the next "
                 "(a Counter or a set of seen nodes created once, at module level or as a default argument); create "
                 "them inside graph_ops, fresh for every call")
    fail_mismatch(what, given=description, expected=_show_counts(graph.counts),
                  got=_show_counts(counts) if counts is not None else _show_items(first["items"]),
                  where=_difference(graph.counts, counts) if counts is not None else _items_where(first["items"]),
                  cause=cause)


# ==================================================================================================
# Checks
# ==================================================================================================
@GRAPH_OPS.check(points=1)
def returns_counter(student: Submission, device: torch.device) -> None:
    """The result is a collections.Counter keyed by node type name, with the right counts."""
    cases = build_family("returns_counter", device)
    observed = _observe(student, "returns_counter", device)
    for (description, t), seen in zip(cases, observed):
        first = seen["first"]
        if "raised" in first:
            _raised(first["raised"], description)
        if not first["counter"]:
            shown = show(first["result"]) if first["items"] is None else _show_items(first["items"])
            same = _counts(first) == _walk_graph(t).counts
            hint = " (a dict with the same counts is not enough: start from Counter() and add 1 per node)" if same else ""
            fail(f"graph_ops(t) for {description} returned {shown}, a {first['type']}; the specification asks "
                 f"for a collections.Counter{hint}")
        bad = [key for key, _ in first["items"] or [] if key[0] != "str"]
        if bad:
            causes = _key_causes(first["items"])
            fail(f"graph_ops(t) for {description} returned {_show_items(first['items'])}: the keys must be node "
                 "type names (strings, type(node).__name__)" + (f"\n  likely cause: {causes[0]}" if causes else ""))
    _expect_counts(student, "returns_counter", device, "wrong node counts")


@GRAPH_OPS.check(points=1)
def small_expressions(student: Submission, device: torch.device) -> None:
    """Small expressions of leaves that require grad (views, complex, dtype casts, empty): every node counted."""
    _expect_counts(student, "small_expressions", device, "wrong node counts for a small expression")


@GRAPH_OPS.check(points=1)
def no_grad_fn_is_empty(student: Submission, device: torch.device) -> None:
    """A tensor without grad_fn (leaf, no requires_grad, no_grad, detach, integer) gives an empty Counter."""
    cases = build_family("no_grad_fn", device)
    results = _expect_counts(student, "no_grad_fn", device,
                             "wrong node counts (a tensor with no grad_fn must give an empty Counter)")
    for (description, t), got in zip(cases, results):
        if t.grad_fn is None and not got["counter"]:
            fail(f"graph_ops(t) for {description} returned {show(got['result'])}, a {got['type']}; the "
                 "specification asks for an empty collections.Counter (likely cause: the early return for a tensor "
                 "without grad_fn returns {} or dict(); return Counter() there too)")


@GRAPH_OPS.check(points=1)
def shared_nodes_counted_once(student: Submission, device: torch.device) -> None:
    """A node reached by several paths (a diamond, a leaf used twice, a node with several outputs) counts once."""
    _expect_counts(student, "shared_nodes", device, "wrong node counts for a graph with shared nodes")
    # A node with several outputs (unbind, split, chunk, max, var_mean, a custom Function) is reached through
    # several next_functions entries that differ in input_nr: still one node.
    _expect_counts(student, "multi_output", device, "wrong node counts for a graph with a multi-output node")


@GRAPH_OPS.check(points=1)
def inputs_without_grad_skipped(student: Submission, device: torch.device) -> None:
    """Inputs that do not require grad (None entries of next_functions, first or last) are not nodes."""
    _expect_counts(student, "inputs_without_grad", device,
                   "wrong node counts for a graph with inputs that do not require grad")


@GRAPH_OPS.check(points=1)
def stops_at_detach(student: Submission, device: torch.device) -> None:
    """detach() cuts the graph; a detached tensor made to require grad is a new leaf; t may be any non-leaf."""
    _expect_counts(student, "detach", device, "wrong node counts for a graph with a detach or a non-leaf")


@GRAPH_OPS.check(points=1)
def two_layer_network(student: Submission, device: torch.device) -> None:
    """The loss of a two-layer network (Linear, ReLU, Linear, cross-entropy) on a batch."""
    _expect_counts(student, "two_layer", device, "wrong node counts for a two-layer network's loss")


@GRAPH_OPS.check(points=1)
def unrolled_rnn(student: Submission, device: torch.device) -> None:
    """An RNN unrolled 130 steps (a graph ~400 nodes deep, 260 nodes of a type) sharing its weights."""
    _expect_counts(student, "rnn", device, "wrong node counts for an unrolled RNN")


@GRAPH_OPS.check(points=1)
def residual_network(student: Submission, device: torch.device) -> None:
    """30 residual blocks x = x + relu(linear(x)): 2**30 paths but ~150 nodes, walked within the time limit."""
    _expect_counts(student, "residual_small", device, "wrong node counts for a residual network")
    try:
        _expect_counts(student, "residual_large", device, "wrong node counts for a residual network")
    except StudentCodeError as exc:
        if exc.error.kind == "timeout":
            fail(f"graph_ops(t) {exc.error.summary}, for {_RESIDUAL_LARGE}; with 8 blocks it was right\n"
                 "  likely cause: the walk goes on below a node already seen, so it follows every path; check whether "
                 "a node was seen BEFORE walking its next_functions, and skip it if so")
        raise
