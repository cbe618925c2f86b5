"""graph_ops(t) -> a Counter of the node type names of t's backward graph, each node counted once.

A tensor with a ``grad_fn`` cannot be sent to the student's process, so every graph is built twice from
the same *family* (a module-level builder named by the check): once in the student's process, where the
student's ``graph_ops`` walks it (twice, to see whether anything survives from one call to the next), and
once here, where the judge walks its own copy of ``grad_fn.next_functions`` (the test suite proves that
walk visits exactly the nodes the autograd engine executes). Graph structure does not depend on the
random values in the tensors, so both copies have the same nodes.

Besides the hand-written families, most checks count generated graphs (``Recipe``: plain data both processes
build from, drawn by ``generate_recipe`` from the specification's whole domain, one scenario call per check) and
report the smallest failing one, shrunk with the student's own function, as the code that builds it; a likely
cause is named only when one catalogued slip gives what came back on every failing graph.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections import Counter
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from graders import domain
from graders.compare import one_torch_thread, show
from graders.isolation import RunnerStudent, StudentRaised
from graders.outcomes import StudentCodeError, StudentError, fail, fail_mismatch
from graders.registry import exercise, judge_only
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


_WIDE = ("t = torch.stack([x.sin() for x in xs]).sum() for 1500 leaves xs of shape (2,): 3002 nodes, yet only 4 "
         "deep")


def _family_wide(device: torch.device, g: torch.Generator) -> Cases:
    """Many nodes side by side (more than a walk capped at 1000 or 2048 nodes sees), shallow enough for any walk."""
    leaves = [_leaf(g, 2, device=device) for _ in range(1500)]
    return [(_WIDE, torch.stack([x.sin() for x in leaves]).sum())]


_FAMILIES: dict[str, Callable[[torch.device, torch.Generator], Cases]] = {
    "wide": _family_wide,
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
# The generated domain (from the specification's sentences): random graphs of any op the autograd engine
# records, on leaves of any floating or complex dtype that require grad or not (None entries of
# next_functions, first, last or everywhere), nodes shared by many paths (an op's operands drawn from every
# earlier tensor), multi-output nodes with all or some outputs used (unbind, split, chunk, max, var_mean, a
# custom Function), detach boundaries and new leaves made from them, no_grad islands, in-place writes
# (CopySlices), hooks and retain_grad, nn.Linear layers (frozen or not, nested Sequentials), chains of one
# op past 256 nodes of a type, roots that are scalars, vectors, views, integer or bool results, leaves,
# detached or made under no_grad, and graphs whose buffers a backward already freed.
#
# A Recipe is plain data: both processes build the same graph from it (the structure of a graph never depends
# on the random values in its tensors).
# ==================================================================================================
@dataclasses.dataclass(frozen=True)
class Recipe:
    dtype: str  # a torch dtype's name
    leaves: tuple[bool, ...]  # requires_grad of each leaf a, b, c, ...
    ops: tuple[tuple[str, int, int, int], ...]  # (op, first operand, second operand, repeat) over the pool
    root: str  # how t is made from the pool: see _ROOTS
    picks: tuple[int, ...]  # the pool entries the root uses
    after_backward: bool = False  # t.backward(...) already ran (its buffers are freed)

    @property
    def size(self) -> tuple[int, ...]:
        return (len(self.ops) + sum(max(0, r - 1) for *_, r in self.ops), len(self.leaves), len(self.picks),
                self.after_backward, _DTYPES.index(self.dtype))


_DTYPES = ("float32", "float64", "bfloat16", "float16", "complex64")
_REAL_ONLY = {"relu", "maximum", "max_dim"}
# op: (code with {a} and {b}, category). Every op maps tensors of shape (4,) to one of shape (4,).
_OPS: dict[str, tuple[str, str]] = {
    "add": ("{out} = {a} + {b}", "binary"), "mul": ("{out} = {a} * {b}", "binary"),
    "sub": ("{out} = {a} - {b}", "binary"), "div": ("{out} = {a} / ({b} * {b} + 1)", "binary"),
    "stack": ("{out} = torch.stack([{a}, {b}]).sum(0)", "binary"),
    "maximum": ("{out} = torch.maximum({a}, {b})", "binary"),
    "matmul": ("{out} = ({a}.reshape(2, 2) @ {b}.reshape(2, 2)).reshape(4)", "binary"),
    "exp": ("{out} = ({a} * 0.1).exp()", "unary"), "sin": ("{out} = {a}.sin()", "unary"),
    "tanh": ("{out} = {a}.tanh()", "unary"), "relu": ("{out} = {a}.relu()", "unary"),
    "sigmoid": ("{out} = {a}.sigmoid()", "unary"), "square": ("{out} = {a} ** 2", "unary"),
    "scale": ("{out} = {a} * 2.0", "unary"), "neg": ("{out} = -{a}", "unary"),
    "clone": ("{out} = {a}.clone()", "unary"),
    "cast": ("{out} = {a}.to(WIDE).sin().to(DTYPE)", "unary"),
    "transpose": ("{out} = {a}.reshape(2, 2).t().reshape(4)", "view"),
    "roll": ("{out} = torch.cat([{a}[2:], {a}[:2]])", "view"), "expand": ("{out} = {a}[:1].expand(4)", "view"),
    "flip": ("{out} = {a}.flip(0)", "view"), "sum_expand": ("{out} = {a}.sum().expand(4)", "view"),
    "unbind": ("{out} = torch.stack({a}.unbind(0)[::-1])", "multi"),
    "split": ("p, q = {a}.split(2); {out} = torch.cat([p * q, q])", "multi"),
    "chunk_one": ("c0, c1 = {a}.chunk(2); {out} = torch.cat([c0, c0])", "multi"),
    "custom": ("f, s = SplitInTwo.apply({a}); {out} = torch.cat([f, s])", "multi"),
    "custom_one": ("f, _ = SplitInTwo.apply({a}); {out} = torch.cat([f, f])", "multi"),
    "max_dim": ("values, indices = {a}.reshape(2, 2).max(dim=1); {out} = torch.cat([values, values * 2])", "multi"),
    "var_mean": ("var, mean = torch.var_mean({a}.reshape(2, 2), dim=0); {out} = torch.cat([var, mean])", "multi"),
    "detach": ("{out} = {a}.detach()", "cut"), "new_leaf": ("{out} = {a}.detach().requires_grad_(True)", "cut"),
    "no_grad": ("{out} = {a} * 2 (under torch.no_grad())", "cut"),
    "inplace_mul": ("{out} = {a}.clone(); {out}.mul_({b})", "inplace"),
    "setitem": ("{out} = {a}.clone(); {out}[1:3] = {b}[1:3] * 2", "inplace"),
    "hook": ("{out} = {a} * 3; {out}.register_hook(lambda g: g)", "state"),
    "retain": ("{out} = {a} * 1.5; {out}.retain_grad()", "state"),
    "linear": ("{out} = nn.Linear(4, 4)({a})", "module"),
    "frozen_linear": ("lin = nn.Linear(4, 4); lin.weight.requires_grad_(False); {out} = lin({a})", "module"),
    "nested": ("{out} = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 4))({a})", "module"),
    "chain": ("{out} = {a} * 1.01 * 1.01 * ... ({repeat} multiplications by 1.01, one after another)", "chain"),
}
_SPLIT_IN_TWO = ("SplitInTwo is a custom torch.autograd.Function with two outputs: forward(ctx, x) returns "
                 "(x[:2] * 2.0, x[2:] * 3.0)")
_ROOTS = {
    "sum": "t = {total}.sum()", "vector": "t = {pick}", "view": "t = {pick}[1:]",
    "integer": "t = {pick}.real.argmax()", "bool": "t = {pick}.real > 0", "leaf": "t = {leaf}",
    "detached": "t = {pick}.detach()", "no_grad": "with torch.no_grad(): t = {pick} * 2",
}
_NO_GRAD_FN_ROOTS = ("integer", "bool", "leaf", "detached", "no_grad")


def _apply_op(op: str, a: torch.Tensor, b: torch.Tensor, repeat: int, dtype: torch.dtype) -> torch.Tensor:
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "sub":
        return a - b
    if op == "div":
        return a / (b * b + 1)
    if op == "stack":
        return torch.stack([a, b]).sum(0)
    if op == "maximum":
        return torch.maximum(a, b)
    if op == "matmul":
        return (a.reshape(2, 2) @ b.reshape(2, 2)).reshape(4)
    if op == "exp":
        return (a * 0.1).exp()
    if op in ("sin", "tanh", "relu", "sigmoid", "neg", "clone"):
        return getattr(a, op)()
    if op == "square":
        return a**2
    if op == "scale":
        return a * 2.0
    if op == "cast":
        return a.to(torch.complex128 if a.is_complex() else torch.float64).sin().to(dtype)
    if op == "transpose":
        return a.reshape(2, 2).t().reshape(4)
    if op == "roll":
        return torch.cat([a[2:], a[:2]])
    if op == "expand":
        return a[:1].expand(4)
    if op == "flip":
        return a.flip(0)
    if op == "sum_expand":
        return a.sum().expand(4)
    if op == "unbind":
        return torch.stack(a.unbind(0)[::-1])
    if op == "split":
        p, q = a.split(2)
        return torch.cat([p * q, q])
    if op == "chunk_one":
        c0, _ = a.chunk(2)
        return torch.cat([c0, c0])
    if op == "custom":
        return torch.cat(list(SplitInTwo.apply(a)))
    if op == "custom_one":
        first, _ = SplitInTwo.apply(a)
        return torch.cat([first, first])
    if op == "max_dim":
        values, _ = a.reshape(2, 2).max(dim=1)
        return torch.cat([values, values * 2])
    if op == "var_mean":
        return torch.cat(list(torch.var_mean(a.reshape(2, 2), dim=0)))
    if op == "detach":
        return a.detach()
    if op == "new_leaf":
        return a.detach().requires_grad_(True)
    if op == "no_grad":
        with torch.no_grad():
            return a * 2
    if op == "inplace_mul":
        y = a.clone()
        return y.mul_(b)
    if op == "setitem":
        y = a.clone()
        y[1:3] = b[1:3] * 2
        return y
    if op == "hook":
        y = a * 3
        if y.requires_grad:
            y.register_hook(_same_gradient)
        return y
    if op == "retain":
        y = a * 1.5
        if y.requires_grad:
            y.retain_grad()
        return y
    if op in ("linear", "frozen_linear", "nested"):
        # nn.Linear's forward is F.linear(x, weight, bias): the same nodes, without the cost of initialising a module
        def linear(x: torch.Tensor, frozen: bool = False) -> torch.Tensor:
            weight = torch.randn(4, 4).to(device=a.device, dtype=dtype).requires_grad_(not frozen)
            return F.linear(x, weight, torch.randn(4).to(device=a.device, dtype=dtype).requires_grad_(True))

        if op == "nested":
            return linear(linear(a).tanh())
        return linear(a, frozen=op == "frozen_linear")
    if op == "chain":
        for _ in range(repeat):
            a = a * 1.01
        return a
    raise ValueError(f"unknown op {op}")


def _same_gradient(grad: torch.Tensor) -> torch.Tensor:
    return grad


def build_recipe(recipe: Recipe, device: torch.device | str) -> tuple[torch.Tensor, list]:
    """t for the recipe, and the pool of tensors (kept alive alongside t). The same nodes wherever it is built."""
    dtype = getattr(torch, recipe.dtype)
    device = torch.device(device)
    with torch.enable_grad():
        pool = [torch.randn(4).to(device=device, dtype=dtype).requires_grad_(rg) for rg in recipe.leaves]
        for op, i, j, repeat in recipe.ops:
            pool.append(_apply_op(op, pool[i], pool[j], repeat, dtype))
        picked = [pool[i] for i in recipe.picks]
        root = recipe.root
        if root == "sum":
            total = picked[0]
            for other in picked[1:]:
                total = total + other
            t = total.abs().sum() if total.is_complex() else total.sum()
        elif root == "vector":
            t = picked[0]
        elif root == "view":
            t = picked[0][1:]
        elif root == "integer":
            t = picked[0].real.argmax()
        elif root == "bool":
            t = picked[0].real > 0
        elif root == "leaf":
            t = pool[recipe.picks[0]]
        elif root == "detached":
            t = picked[0].detach()
        else:
            with torch.no_grad():
                t = picked[0] * 2
        if recipe.after_backward and t.grad_fn is not None:
            t.backward(torch.ones_like(t))
    return t, pool


def _name(index: int, recipe: Recipe) -> str:
    return "abcdefgh"[index] if index < len(recipe.leaves) else f"v{index - len(recipe.leaves) + 1}"


def recipe_code(recipe: Recipe) -> str:
    """The recipe as the code a student would write to build t (one statement a line)."""
    dtype = f"torch.{recipe.dtype}"
    wide = "torch.complex128" if recipe.dtype == "complex64" else "torch.float64"
    lines = [f"{_name(i, recipe)} = torch.randn(4, dtype={dtype}" + (", requires_grad=True)" if rg else ")")
             for i, rg in enumerate(recipe.leaves)]
    for k, (op, i, j, repeat) in enumerate(recipe.ops):
        code = _OPS[op][0].format(out=_name(len(recipe.leaves) + k, recipe), a=_name(i, recipe), b=_name(j, recipe),
                                  repeat=repeat)
        lines.append(code.replace("WIDE", wide).replace("DTYPE", dtype))
    names = [_name(i, recipe) for i in recipe.picks]
    total = " + ".join(names) if len(names) == 1 else f"({' + '.join(names)})"
    root = _ROOTS[recipe.root].format(total=total, pick=names[0], leaf=names[0])
    if recipe.root == "sum" and recipe.dtype == "complex64":
        root = f"t = {total}.abs().sum()"
    lines.append(root)
    if recipe.after_backward:
        lines.append("t.backward(torch.ones_like(t)) (before graph_ops(t): the graph's buffers are freed)")
    custom = any(op in ("custom", "custom_one") for op, *_ in recipe.ops)
    return "; ".join(lines) + (f"  ({_SPLIT_IN_TWO})" if custom else "")


_CATEGORIES = ("binary", "unary", "view", "multi", "cut", "inplace", "state", "module", "chain")
_FLAVOURS: dict[str, dict[str, float]] = {  # the weight of each category of op, per check
    "any": dict.fromkeys(_CATEGORIES, 1.0) | {"binary": 3.0, "unary": 2.0, "chain": 0.3},
    "shared": dict.fromkeys(_CATEGORIES, 0.3) | {"binary": 4.0, "multi": 4.0, "view": 1.0},
    "without_grad": dict.fromkeys(_CATEGORIES, 0.5) | {"binary": 4.0, "module": 1.5},
    "cut": dict.fromkeys(_CATEGORIES, 0.5) | {"binary": 3.0, "cut": 3.0},
    "modules": dict.fromkeys(_CATEGORIES, 0.2) | {"module": 4.0, "binary": 1.0, "unary": 1.0},
    "long": dict.fromkeys(_CATEGORIES, 0.3) | {"chain": 1.5, "binary": 2.0},
}


def generate_recipe(generator, flavour: str = "any", *, root: str | None = None) -> Recipe:
    """A random graph: 1-5 leaves, 1-16 ops of the flavour's mix, any root (``root`` forces one)."""
    dtype = domain.pick(generator, _DTYPES, [4, 2, 1, 1, 1])
    n_leaves = domain.small_int(generator, 1, 5)
    share_without = domain.pick(generator, [0.0, 0.3, 0.6, 1.0], [2, 3, 2, 1] if flavour != "without_grad"
                                else [0, 2, 3, 2])
    leaves = tuple(generator.random() >= share_without for _ in range(n_leaves))
    if not any(leaves) and generator.random() < 0.8:  # mostly graphs with something to count
        leaves = (True,) + leaves[1:] if flavour != "without_grad" or n_leaves == 1 else leaves[:-1] + (True,)
    weights = _FLAVOURS[flavour]
    ops_of = {c: [op for op, (_, cat) in _OPS.items() if cat == c and not (dtype == "complex64" and op in _REAL_ONLY)]
              for c in _CATEGORIES}
    ops = []
    chained = 0
    for _ in range(domain.small_int(generator, 1, 16)):
        category = domain.pick(generator, _CATEGORIES, [weights[c] for c in _CATEGORIES])
        if category == "chain" and chained:
            category = "binary"
        op = domain.pick(generator, ops_of[category])
        size = n_leaves + len(ops)
        recent = max(0, size - 3)
        # operands: often the newest tensors (deep graphs), often any earlier one (shared nodes, diamonds)
        i = generator.randint(recent, size - 1) if generator.random() < 0.5 else generator.randint(0, size - 1)
        j = generator.randint(0, size - 1) if generator.random() < 0.7 else i  # x op x: one node, two edges
        repeat = 1
        if op == "chain":
            # past 256 nodes of one type only where the check is about long graphs (they cost ~1 ms each)
            repeat = generator.randint(257, 300) if flavour == "long" else domain.small_int(generator, 2, 20)
            chained += 1
        ops.append((op, i, j, repeat))
    size = n_leaves + len(ops)
    kind = root or domain.pick(generator, ["sum", "vector", "view", "integer", "bool", "leaf", "detached", "no_grad"],
                               [6, 2, 1, 0.3, 0.3, 0.4, 0.3, 0.3])
    if kind == "leaf":
        picks = (generator.randint(0, n_leaves - 1),)
    elif kind == "sum":
        picks = (size - 1,) + tuple(generator.randint(0, size - 1) for _ in range(domain.small_int(generator, 0, 3)))
    else:
        picks = (domain.pick(generator, [size - 1, generator.randint(0, size - 1)]),)
    after = kind in ("sum", "vector", "view") and generator.random() < 0.15
    return Recipe(dtype, leaves, tuple(ops), kind, picks, after)


def _without(recipe: Recipe, index: int, substitute: int) -> Recipe | None:
    """The recipe with pool entry ``index`` removed, its uses replaced by ``substitute`` (an earlier entry)."""
    def moved(k: int) -> int:
        k = substitute if k == index else k
        return k - 1 if k > index else k

    n_leaves = len(recipe.leaves)
    if index < n_leaves:
        if n_leaves == 1:
            return None
        leaves = recipe.leaves[:index] + recipe.leaves[index + 1:]
        ops = recipe.ops
    else:
        leaves = recipe.leaves
        ops = recipe.ops[:index - n_leaves] + recipe.ops[index - n_leaves + 1:]
    new_ops = tuple((op, moved(i), moved(j), r) for op, i, j, r in ops)
    picks = tuple(moved(k) for k in recipe.picks)
    if recipe.root == "leaf" and picks[0] >= len(leaves):
        return None
    return dataclasses.replace(recipe, leaves=leaves, ops=new_ops, picks=picks)


def _used_only(recipe: Recipe) -> Recipe:
    """The recipe without the leaves and ops that t does not depend on."""
    used = set(recipe.picks)
    n_leaves = len(recipe.leaves)
    for k in range(len(recipe.ops) - 1, -1, -1):
        if n_leaves + k in used:
            used.update(recipe.ops[k][1:3])
    if not used & set(range(n_leaves)):
        used.add(0)  # at least one leaf
    index = {old: new for new, old in enumerate(sorted(used))}
    return dataclasses.replace(
        recipe, leaves=tuple(rg for i, rg in enumerate(recipe.leaves) if i in used),
        ops=tuple((op, index[i], index[j], r) for k, (op, i, j, r) in enumerate(recipe.ops) if n_leaves + k in used),
        picks=tuple(index[k] for k in recipe.picks))


def smaller_recipes(recipe: Recipe) -> list[Recipe]:
    """Smaller variants of a failing recipe, for shrinking: what t does not use dropped, then one op or leaf
    less (its uses taken by an earlier tensor), a shorter chain, one tensor summed, no backward first, float32."""
    out = [_used_only(recipe)]
    n_leaves = len(recipe.leaves)
    for k in range(len(recipe.ops) - 1, -1, -1):
        _, i, _, _ = recipe.ops[k]
        smaller = _without(recipe, n_leaves + k, i)
        if smaller is not None:
            out.append(smaller)
    for leaf in range(n_leaves - 1, 0, -1):
        smaller = _without(recipe, leaf, 0)
        if smaller is not None:
            out.append(smaller)
    for k, (op, i, j, repeat) in enumerate(recipe.ops):
        if repeat > 2:
            shorter = recipe.ops[:k] + ((op, i, j, max(2, repeat // 2)),) + recipe.ops[k + 1:]
            out.append(dataclasses.replace(recipe, ops=shorter))
    if len(recipe.picks) > 1:
        out.append(dataclasses.replace(recipe, picks=recipe.picks[:1]))
        out.extend(dataclasses.replace(recipe, picks=recipe.picks[:k] + recipe.picks[k + 1:])
                   for k in range(len(recipe.picks)))
    if recipe.after_backward:
        out.append(dataclasses.replace(recipe, after_backward=False))
    if recipe.dtype != "float32":
        out.append(dataclasses.replace(recipe, dtype="float32"))
    return out


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


def observe_recipes(student: RunnerStudent, recipes: list[Recipe], device: str) -> list[dict]:
    """Scenario: graph_ops(t) once for each recipe's t (built here, in the student's process)."""
    observed = []
    with one_torch_thread():
        for recipe in recipes:
            t, _pool = build_recipe(recipe, device)
            observed.append(_call(student, t))
    return observed


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


@judge_only
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
# In the judge: generated graphs
# ==================================================================================================
@judge_only
def _recipe_graph(recipe: Recipe, device: torch.device | str) -> _Graph:
    """The grader's own walk of the recipe's graph (its nodes are kept alive in the _Graph)."""
    with one_torch_thread():
        t, _pool = build_recipe(recipe, device)
        return _walk_graph(t)


@judge_only
def _recipe_fails(graph: _Graph, seen: dict) -> bool:
    return "raised" in seen or _counts(seen) != graph.counts


@judge_only
def _recipe_causes(graph: _Graph, seen: dict) -> list[str]:
    """The catalogued slips that give exactly what came back for this graph."""
    if "raised" in seen or seen.get("items") is None:
        return []
    counts = _counts(seen)
    return _key_causes(seen["items"]) or (_counts_causes(graph, counts) if counts is not None else [])


def _observe_recipes(student: Submission, recipes: list[Recipe], device: torch.device) -> list[dict]:
    try:
        return student.scenario(observe_recipes, recipes, str(device))
    except StudentCodeError as exc:
        raise exc.within(f"graph_ops(t) on {len(recipes)} generated graphs") from None


@judge_only
def _expect_generated(student: Submission, device: torch.device, what: str, count: int, flavour: str = "any",
                      roots: tuple[str, ...] | None = None) -> None:
    """graph_ops on ``count`` generated graphs (one scenario call); on a failure, the smallest failing graph
    (shrunk with the student's own function), and a likely cause only when one catalogued slip gives what came
    back on every failing graph."""
    def generate(generator):
        root = domain.pick(generator, roots) if roots else None
        return generate_recipe(generator, flavour, root=root)

    recipes = domain.draw(generate, count, size=lambda r: r.size)
    seen_of = dict(zip(recipes, _observe_recipes(student, recipes, device)))
    graphs = {recipe: _recipe_graph(recipe, device) for recipe in recipes}
    failing = [_recipe_fails(graphs[r], seen_of[r]) for r in recipes]
    if not any(failing):
        return
    tried, wrong = len(recipes), sum(failing)
    recipe = domain.smallest(recipes, failing, size=lambda r: r.size)

    def fails(candidates: list[Recipe]) -> list[bool]:
        seen = _observe_recipes(student, candidates, device)
        for candidate, observed in zip(candidates, seen):
            seen_of[candidate] = observed
            graphs.setdefault(candidate, _recipe_graph(candidate, device))
        return [_recipe_fails(graphs[c], s) for c, s in zip(candidates, seen)]

    recipe = domain.shrink(recipe, smaller_recipes, fails, rounds=30)
    seen, graph = seen_of[recipe], graphs[recipe]
    description = f"the generated graph  {recipe_code(recipe)}"
    if "raised" in seen:
        _raised(seen["raised"], description)
    if seen.get("items") is None:
        fail_mismatch(what, given=description, expected=_show_counts(graph.counts), got=_show_observed(seen),
                      cause="graph_ops must return a collections.Counter of node type names")
    # A slip shows in every graph it touches: name it only when it alone explains every failing graph.
    explained = [_recipe_causes(graphs[r], s) for r, s in seen_of.items() if _recipe_fails(graphs[r], s)]
    common = [c for c in explained[0] if all(c in other for other in explained)]
    counts = _counts(seen)
    fail_mismatch(f"{what} ({wrong} of the {tried} generated graphs tried were counted wrong; the smallest one)",
                  given=description, expected=_show_counts(graph.counts),
                  got=_show_counts(counts) if counts is not None else _show_items(seen["items"]),
                  where=_difference(graph.counts, counts) if counts is not None else _items_where(seen["items"]),
                  cause=common[0] if len(common) == 1 else None)


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
    _expect_generated(student, device, "wrong node counts for a generated graph", 40)


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
    _expect_generated(student, device, "wrong node counts for a generated graph (a t without grad_fn gives an empty "
                      "Counter)", 16, roots=_NO_GRAD_FN_ROOTS + ("sum", "vector", "view"))


@GRAPH_OPS.check(points=1)
def shared_nodes_counted_once(student: Submission, device: torch.device) -> None:
    """A node reached by several paths (a diamond, a leaf used twice, a node with several outputs) counts once."""
    _expect_counts(student, "shared_nodes", device, "wrong node counts for a graph with shared nodes")
    # A node with several outputs (unbind, split, chunk, max, var_mean, a custom Function) is reached through
    # several next_functions entries that differ in input_nr: still one node.
    _expect_counts(student, "multi_output", device, "wrong node counts for a graph with a multi-output node")
    _expect_generated(student, device, "wrong node counts for a generated graph with shared and multi-output nodes",
                      30, "shared")


@GRAPH_OPS.check(points=1)
def inputs_without_grad_skipped(student: Submission, device: torch.device) -> None:
    """Inputs that do not require grad (None entries of next_functions, first or last) are not nodes."""
    _expect_counts(student, "inputs_without_grad", device,
                   "wrong node counts for a graph with inputs that do not require grad")
    _expect_generated(student, device, "wrong node counts for a generated graph with inputs that do not require "
                      "grad", 24, "without_grad")


@GRAPH_OPS.check(points=1)
def stops_at_detach(student: Submission, device: torch.device) -> None:
    """detach() cuts the graph; a detached tensor made to require grad is a new leaf; t may be any non-leaf."""
    _expect_counts(student, "detach", device, "wrong node counts for a graph with a detach or a non-leaf")
    _expect_generated(student, device, "wrong node counts for a generated graph with detach, no_grad and new leaves",
                      20, "cut")


@GRAPH_OPS.check(points=1)
def two_layer_network(student: Submission, device: torch.device) -> None:
    """The loss of a two-layer network (Linear, ReLU, Linear, cross-entropy) on a batch."""
    _expect_counts(student, "two_layer", device, "wrong node counts for a two-layer network's loss")
    _expect_generated(student, device, "wrong node counts for a generated graph of linear layers", 12, "modules")


@GRAPH_OPS.check(points=1)
def unrolled_rnn(student: Submission, device: torch.device) -> None:
    """An RNN unrolled 130 steps (a graph ~400 nodes deep, 260 nodes of a type) sharing its weights; and a graph of
    3002 nodes side by side."""
    _expect_counts(student, "rnn", device, "wrong node counts for an unrolled RNN")
    _expect_counts(student, "wide", device, "wrong node counts for a graph of many nodes side by side")
    _expect_generated(student, device, "wrong node counts for a generated graph with a long chain (over 256 nodes of "
                      "a type)", 4, "long")


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
