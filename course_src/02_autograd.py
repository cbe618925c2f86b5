# %% [markdown]
# # 02 · Autograd: the backward graph
#
# *Expected time: about 3 h — 1 h 45 min to read and run the cells, 1 h 15 min for the exercises
# (an estimate from the chapter's length; take the time it takes).*
#
# Every time you compute with a tensor that needs a gradient, PyTorch quietly writes down what it did.
# The record is a graph of small objects, one per operation, each knowing how to turn "the gradient of
# my output" into "the gradients of my inputs". `loss.backward()` does nothing more mysterious than
# start at the loss and walk that record in reverse. Knowing what sits in the record — and when it is
# made, kept, added to and thrown away — explains the classic autograd bugs: the loss curve that
# never settles because nobody zeroed the gradients, the "backward through the graph a second time"
# error, the in-place edit that breaks backward, the evaluation loop whose memory keeps growing.
#
# **In this chapter** you will
# 1. tell leaves from non-leaves, and walk a graph through `grad_fn` and `next_functions`;
# 2. *draw* the backward graph of a small expression and of a two-layer network;
# 3. see that the graph is rebuilt by every forward pass (define-by-run);
# 4. run backward by hand, node by node, to see why it needs a topological order; run `backward()` on
#    scalars and on vectors (vector-Jacobian products), use `torch.autograd.grad` and take second
#    derivatives with `create_graph`;
# 5. run into — and fix — the second `backward`, the missing `zero_grad`, the in-place edit, `.numpy()` on
#    a tensor that requires grad, and the losses, outputs and recurrent states that keep their graphs
#    alive, with measured numbers;
# 6. stop gradients (`detach`, `no_grad`, `inference_mode`), look at inner gradients (`retain_grad`,
#    hooks), and write your own `autograd.Function`, checked by `gradcheck`;
# 7. write three graded exercises: `gelu_function`, `graph_ops` and `grad_accumulation`.

# %% nbgrader=readonly id=opening
import gc
import re
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from coursekit import start_chapter, seed_everything
from coursekit.claims import over, under
from coursekit.graphs import draw_backward_graph
from coursekit.meters import SavedTensorMeter, memory_in_use
from coursekit.plots import plot_bars, plot_curves
from coursekit.practice import predict, uses_your_answer
from graders import check

device = start_chapter("02_autograd")

# %% [markdown]
# ## 1. Leaves, non-leaves and `grad_fn`
#
# Autograd sorts tensors into two kinds:
#
# | kind | how you get one | `grad_fn` | after `backward()` |
# |---|---|---|---|
# | **leaf** | you made it (`torch.tensor`, `torch.randn`, a module's parameters) | `None` | `.grad` is filled, if `requires_grad=True` |
# | **non-leaf** | the result of an operation on something that requires grad | the node that made it | `.grad` stays `None` (unless you ask, section 9) |
#
# `requires_grad` spreads forward: a result requires grad as soon as any input does. A tensor that
# requires no gradient — data, targets, constants — is a leaf too, but autograd ignores it.

# %%
x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)  # we want d(out)/dx
w = torch.tensor(0.5, device=device, requires_grad=True)              # and d(out)/dw
c = torch.ones(3, device=device)                                       # a constant
y = (x * w + c).exp()
out = (y * x).sum()

for name, t in {"x": x, "w": w, "c": c, "y": y, "out": out}.items():
    node = type(t.grad_fn).__name__ if t.grad_fn is not None else None
    print(f"{name:3s} is_leaf={t.is_leaf!s:5s}  requires_grad={t.requires_grad!s:5s}  grad_fn={node}")

# %% [markdown]
# Each `grad_fn` is a node of the **backward graph**. Its `next_functions` is a tuple with one entry per
# input of the operation: the node that produced that input, or `None` when the input needs no
# gradient. Leaves that require grad are represented by a special node, **`AccumulateGrad`**; its
# `variable` attribute is the leaf itself, and its job at the end of backward is to *add* the
# incoming gradient into `leaf.grad`.
#
# (We print `type(node).__name__`: a node's own repr contains its memory address, which changes every
# run.) Following `next_functions` from `out` prints the graph as a tree:

# %%
names = {id(x): "x", id(w): "w"}


def print_tree(node, depth=0):
    label = type(node).__name__
    if label == "AccumulateGrad":
        label += f"  (leaf {names.get(id(node.variable), '?')})"
    print("    " * depth + label)
    for child, _ in node.next_functions:
        if child is None:
            print("    " * (depth + 1) + "None  (an input that needs no gradient: the constant c)")
        else:
            print_tree(child, depth + 1)


print_tree(out.grad_fn)

# %% [markdown]
# `x` shows up twice in the tree, because `out` uses it along two paths (inside the `exp` and in the
# final product). It is still **one** node — the tree print repeats it, the graph does not:

# %%
product = out.grad_fn.next_functions[0][0]   # MulBackward0 of y * x
via_product = product.next_functions[1][0]      # its second input: x
via_exp = product.next_functions[0][0]          # its first input: ExpBackward0 ...
for _ in range(3):                              # ... -> AddBackward0 -> MulBackward0 -> x
    via_exp = via_exp.next_functions[0][0]
print("same AccumulateGrad node on both paths:", via_product is via_exp, "| its variable is x:", via_exp.variable is x)

# %% [markdown]
# **Predict, then run.** Throughout the chapter, cells like the next one ask you to guess before you look:
# replace the `...` with your prediction and run the cell; it says whether you were right, and why.
#
# Which of these five tensors are leaves? (`detach()`, section 7, returns the same values cut off from
# the graph.)

# %%
layer = nn.Linear(3, 2)
batch = torch.randn(4, 3)
scores = layer(batch)
candidates = {"layer.weight": layer.weight, "batch": batch, "scores": scores, "scores.sum()": scores.sum(),
              "scores.detach()": scores.detach()}
guess = ...   # a set of names, e.g. {"batch", "scores"}
predict("02.which_are_leaves", guess, {name for name, t in candidates.items() if t.is_leaf}, unordered=True,
        why="a leaf is any tensor no recorded operation made: a parameter, the data, and detach()'s result")

# %% [markdown]
# ## 2. The backward graph, drawn
#
# A tree print gets hard to read quickly. `draw_backward_graph` (from `coursekit.graphs`, drawn with
# matplotlib only) walks the same `next_functions`, draws every node **once** as a box, and an arrow
# from each node to each of its inputs — the direction the gradients travel during backward. Orange is
# the root, green the `AccumulateGrad` nodes of leaves, blue everything in between.

# %%
draw_backward_graph(out, title="out = (exp(x·w + c) · x).sum()", params={"x": x, "w": w})
print("c has no box: it needs no gradient, so the AddBackward0 node records None for it.")

# %% [markdown]
# Now a two-layer network, `Linear(4, 8) → ReLU → Linear(8, 1)`, and its MSE loss. **Predict, then run:**
# what is the name of the node that the first `nn.Linear` layer records for its output?

# %%
seed_everything(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
inputs, targets = torch.randn(16, 4).to(device), torch.randn(16, 1).to(device)
guess = ...   # a node's type name, e.g. "MulBackward0"
predict("02.linear_grad_fn", guess, type(model[0](inputs).grad_fn).__name__,
        why="nn.Linear computes bias + input @ weightᵀ as one fused operation, addmm")

# %% [markdown]
# `nn.Linear` runs one fused operation, `addmm` (bias + input @ weightᵀ), so each layer is one
# `AddmmBackward0` with three inputs: the bias, the layer's input and the transposed weight (`TBackward0`).
# Passing `params=dict(model.named_parameters())` labels the green boxes with the parameter names.

# %%
two_layer_loss = F.mse_loss(model(inputs), targets)
draw_backward_graph(two_layer_loss, title="MSE loss of Linear(4, 8) → ReLU → Linear(8, 1)",
                    params=dict(model.named_parameters()))
print("inputs.requires_grad:", inputs.requires_grad, "-> the first AddmmBackward0 has None for its input")

# %% [markdown]
# Read the picture from the top: backward starts at the loss, goes through the second layer, splits
# into the three gradients of `addmm`, and keeps going down through the ReLU into the first layer. Each
# green box is where a `.grad` will be written. The data batch has no box: nobody asked for its
# gradient, so autograd does not compute it.
#
# ## 3. Define-by-run: a new graph every forward
#
# There is no graph until you run the code, and the graph is exactly what your Python *did*. An `if`
# on the data, or a loop whose length changes, gives a different graph on every call. The function
# below takes a different branch for positive and negative sums:

# %%
def branchy(v):
    h = v * 3
    if h.sum() > 0:          # ordinary Python, decided by the values, on every call
        h = h.relu() + h
    else:
        h = -h
    return h.sum()


positive = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
negative = torch.tensor([-1.0, -2.0], device=device, requires_grad=True)
fig, axes = plt.subplots(1, 2, figsize=(7.5, 4.8))
draw_backward_graph(branchy(positive), title="branchy(positive)", params={"v": positive}, ax=axes[0], show=False)
draw_backward_graph(branchy(negative), title="branchy(negative)", params={"v": negative}, ax=axes[1], show=False)
fig.tight_layout()
plt.show()

run_1, run_2 = branchy(positive), branchy(positive)
print("same code, same input, two calls -> the same graph object?", run_1.grad_fn is run_2.grad_fn)

# %% [markdown]
# The same input run twice gives two separate graphs: the graph is built during the forward pass and
# belongs to its result. This is why you can change the model's structure between iterations, and
# why everything in the later sections — what gets freed, what gets kept — is tied to the lifetime of
# the tensors you hold.
#
# ## 4. Running backward
#
# ### A scalar output
#
# `out.backward()` walks the graph from `out` and leaves d(out)/d(leaf) in each leaf's `.grad`. Check
# it against the derivative by hand: with `y = exp(x·w + 1)` and `out = Σ y·x`,
# d(out)/dx = y·(w·x + 1) and d(out)/dw = Σ y·x².

# %%
out.backward()
y_hand = torch.exp(x.detach() * w.detach() + 1)
# Each side is an exp and a few products, each rounded to float32 once, and exp's last bit may differ between
# CPUs' kernels: a few float32 steps apart (one step of x.grad's 30.5 here, 2e-6). rtol 1e-5 is about 80 steps.
torch.testing.assert_close(x.grad, y_hand * (w.detach() * x.detach() + 1), rtol=1e-5, atol=0)
torch.testing.assert_close(w.grad, (y_hand * x.detach() ** 2).sum(), rtol=1e-5, atol=0)
print("x.grad =", x.grad, "| w.grad =", w.grad)
print("autograd agrees with the derivatives by hand")

# %% [markdown]
# ### How `backward()` walks the graph
#
# Backward visits the nodes in a particular order, and the order matters as soon as one tensor is used
# in more than one place (**fan-out**). Take
#
#     b = a · 2,    c = b · b + exp(b),    at a = 0.5 (so b = 1)
#
# By hand: b appears three times in `c` (the two factors of b·b, and inside the exp), so dc/db has one
# term per use, dc/db = b + b + exp(b) = 2 + e, and dc/da = 2 · dc/db = 2(2 + e) ≈ 9.4366.
# Here is its graph:

# %%
a = torch.tensor(0.5, device=device, requires_grad=True)
b = a * 2
c = b * b + b.exp()
draw_backward_graph(c, title="c = b·b + exp(b),  b = a·2", params={"a": a})
add_node = c.grad_fn                                        # AddBackward0: the root
mul_node, exp_node = (node for node, _ in add_node.next_functions)
b_node = exp_node.next_functions[0][0]                      # MulBackward0 of a * 2: the node that made b

# %% [markdown]
# **Predict, then run.** The left `MulBackward0` (of b·b) has one arrow going down. What does its
# `next_functions` hold? Answer with a tuple of type names, one per entry.

# %%
guess = ...   # e.g. ("AccumulateGrad",); write None for an entry that is None
predict("02.fan_out_next_functions", guess,
        tuple(type(node).__name__ if node is not None else None for node, _ in mul_node.next_functions),
        why="b·b has two inputs and both are b, so both entries are b's node (the picture draws the pair as one arrow)")
print("both entries are the same node object:", mul_node.next_functions[0][0] is mul_node.next_functions[1][0] is b_node)

# %% [markdown]
# So `b`'s node receives gradients along **three** edges: two from `b·b`, one from `exp`. Each node is
# callable: given the gradient of its output, it returns the gradient for each of its inputs, in the
# order of `next_functions` — the chain rule for that one operation. That lets us run backward by hand.
# The rule is: a node runs only when **every** node that uses its output has sent its gradient, and then
# it runs once, on the **sum** of what it received.

# %%
node_names = {add_node: "c = b·b + exp(b)", mul_node: "b·b", exp_node: "exp(b)", b_node: "b = a·2",
              b_node.next_functions[0][0]: "leaf a"}


def run_node(node, grad_output):
    """Call one backward node on the gradient of its output; print and return what it sends to each input."""
    with torch.no_grad():                       # the backward computation itself needs no graph
        sent = node(grad_output)
    sent = sent if isinstance(sent, tuple) else (sent,)
    for (target, _), grad in zip(node.next_functions, sent):
        if target is None:
            print(f"  {node_names[node]:>16s} -> None (the constant 2): nothing")
        else:
            print(f"  {node_names[node]:>16s} -> {node_names[target]:16s} {grad.item():.4f}")
    return sent


print("the right order: b's node waits for all three of its gradients, then runs once, on their sum")
to_mul, to_exp = run_node(add_node, torch.tensor(1.0, device=device))   # dc/dc = 1
from_left, from_right = run_node(mul_node, to_mul)
(from_exp,) = run_node(exp_node, to_exp)
at_b = from_left + from_right + from_exp      # all three consumers of b have sent: add them up
to_a, _ = run_node(b_node, at_b)             # we stop at the leaf: its AccumulateGrad would write a.grad
(from_autograd,) = torch.autograd.grad(c, a, retain_graph=True)   # retain: we walk this graph again below
print(f"dc/da by hand: {to_a.item():.4f} | torch.autograd.grad: {from_autograd.item():.4f}")

# %% [markdown]
# Now a wrong order: run `b`'s node as soon as `b·b` has sent, before `exp` has. It passes on a partial
# gradient, and what `exp` sends afterwards arrives at a node that has already run:

# %%
print("a wrong order: b's node runs before exp(b) has sent its gradient")
to_mul, to_exp = run_node(add_node, torch.tensor(1.0, device=device))
from_left, from_right = run_node(mul_node, to_mul)
too_early, _ = run_node(b_node, from_left + from_right)   # only 2 of its 3 incoming gradients so far
(too_late,) = run_node(exp_node, to_exp)                   # b's node has already run: this is lost
print(f"dc/da from this order: {too_early.item():.4f} instead of {to_a.item():.4f} "
      f"(the {too_late.item():.4f} from exp never reaches a)")

# %% [markdown]
# The wrong order gives 4.0 instead of 9.4366: exactly the missing e ≈ 2.7183 times the 2 of `b = a · 2`.
# PyTorch's engine avoids this with a **dependency count**: before running anything it walks the graph
# once and counts, for every node, how many edges point into it (3 for `b`'s node). Gradients arriving at a
# node are added up in a buffer, each arrival lowers the count by one, and a node runs when its count
# reaches zero. That is a *topological order*: every node runs after all the nodes that use its output.
#
# (Running `b`'s node a second time on the late 2.7183 would repair this small case, since the chain rule
# is linear. The engine runs each node exactly once instead: the work stays proportional to the size of
# the graph rather than to the number of paths through it — which doubles with every fan-out along a
# chain — and a node can free its saved tensors as soon as it has run.)
#
# ### Trap: `backward()` on a non-scalar
#
# For a vector output there is no single "the gradient": each output element has its own. Calling
# `backward()` without arguments on one fails:

# %%
A = torch.randn(3, 2).to(device)
v = torch.randn(2).to(device).requires_grad_()
z = A @ v                    # 3 outputs, 2 inputs: the Jacobian dz/dv is A itself (3 x 2)
try:
    z.backward()
except RuntimeError as error:
    print("RuntimeError:", str(error).splitlines()[0])

# %% [markdown]
# `z.backward(u)` is what backward *always* computes: the **vector-Jacobian product** `uᵀ·J`, the
# gradient of the scalar `(u · z).sum()`. For a scalar output `u` is just `1.0`, which is why
# `backward()` needs no argument there. The full Jacobian is never built — that is what makes reverse
# mode cheap when one loss depends on millions of parameters. We check it against
# `torch.autograd.functional.jacobian`, which does build it:

# %%
u = torch.tensor([1.0, 0.0, -2.0], device=device)
z.backward(u)
jacobian = torch.autograd.functional.jacobian(lambda t: A @ t, v.detach())
# Both sides are 1·A[0] + 0·A[1] − 2·A[2] in float32, added in whatever order the kernel picks: a rounding or
# two apart at most (equal here), far inside 1e-6.
torch.testing.assert_close(v.grad, u @ jacobian, rtol=1e-6, atol=1e-6)
print("v.grad = uᵀJ =", v.grad)
# Exactly equal on any CPU: row i of the Jacobian is the backward of the unit vector eᵢ, which multiplies A by
# ones and zeros and adds them, and x + 0 is x in floating point.
print("jacobian shape", tuple(jacobian.shape), "| same as A:", torch.equal(jacobian, A))

# %% [markdown]
# ### `torch.autograd.grad`: gradients as return values
#
# `backward()` writes into `.grad` of every leaf. `torch.autograd.grad(outputs, inputs)` instead
# *returns* the gradients for the inputs you list, and leaves every `.grad` untouched — handy inside a
# function, or when you need a gradient that is not the training gradient.

# %%
p = torch.tensor([2.0, -1.0], device=device, requires_grad=True)
(gp,) = torch.autograd.grad((p ** 3).sum(), p)
print("returned:", gp, "| p.grad is still", p.grad)

# %% [markdown]
# ### Higher derivatives: `create_graph=True`
#
# Normally the backward pass itself is not recorded. With `create_graph=True` it is: the gradient you
# get back has its own `grad_fn`, so you can differentiate it again. Here autograd gives us the first
# and second derivatives of `tanh` on a whole grid at once (the sum trick works because each output
# depends only on its own input), and we compare them with the formulas 1 − tanh² and −2·tanh·(1 − tanh²).

# %%
grid = torch.linspace(-3, 3, 121, device=device, requires_grad=True)
value = torch.tanh(grid)
(first,) = torch.autograd.grad(value.sum(), grid, create_graph=True)
(second,) = torch.autograd.grad(first.sum(), grid)
print("first derivative has a grad_fn:", type(first.grad_fn).__name__)
t = value.detach()
# Autograd and the formulas compute from the same tanh values t (|t| < 1) in another order: a float32 step or
# two of numbers near 1 apart (6e-8 each; 6e-8 at most measured). So the tolerance is absolute: near x = ±3,
# 1 − t² ≈ 0.01 keeps only the absolute precision of its subtraction, and a relative one would fail there.
torch.testing.assert_close(first.detach(), 1 - t**2, rtol=0, atol=1e-6)
torch.testing.assert_close(second, -2 * t * (1 - t**2), rtol=0, atol=1e-6)
xs = grid.detach().cpu().tolist()
plot_curves({"tanh(x)": (xs, t.cpu().tolist()), "first derivative": (xs, first.detach().cpu().tolist()),
             "second derivative": (xs, second.cpu().tolist())}, xlabel="x", ylabel="value",
            title="tanh and two derivatives, by autograd")

# %% [markdown]
# ## 5. A graph is used once: `retain_graph`
#
# To compute gradients, many nodes need values from the forward pass — `exp` needs its output, a
# product needs both factors. Nodes keep these **saved tensors**, and backward frees them as it goes,
# because that memory (all the activations of a network) is usually the largest thing in training.
#
# ### Trap: a second `backward` through the same graph

# %%
a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
loss_a = (a.exp() * a).sum()
loss_a.backward()
print("first backward: a.grad =", a.grad)
try:
    loss_a.backward()
except RuntimeError as error:
    print("second backward -> RuntimeError:", str(error).split(". ")[0])

# %% [markdown]
# The saved tensors are gone, so the graph cannot be walked again. If you really need two passes,
# keep them with `retain_graph=True` on every pass but the last. Notice the second pass **adds** to
# `a.grad`: the result is now twice the gradient (section 6).

# %%
a.grad = None
loss_a = (a.exp() * a).sum()
loss_a.backward(retain_graph=True)
once = a.grad.clone()
loss_a.backward()
print("after one pass:", once, "| after two passes:", a.grad, "| ratio:", (a.grad / once).tolist())

# %% [markdown]
# Most of the time the real fix is different: when two losses share part of a graph, add them and call
# `backward()` once — `(loss1 + loss2).backward()` walks the shared part one time and frees it once.
#
# **Predict, then run.** `m` is 2.0. Two backward passes follow, each through a graph of its own (so no
# `retain_graph` is needed), with nothing cleared in between: first of m³, then of 5·m. What is `m.grad`?

# %%
m = torch.tensor(2.0, device=device, requires_grad=True)
(m ** 3).backward()
(m * 5).backward()
guess = ...   # a number
predict("02.grad_after_two_backwards", guess, m.grad.item(),
        why="the first pass leaves 3·m² = 12 in m.grad and the second adds its 5 to it: gradients add up (section 6)")

# %% [markdown]
# ## 6. Gradients add up
#
# `AccumulateGrad` *adds* into `.grad`; it never overwrites. Two backward passes without clearing give
# the sum of both gradients — whether they come from the same loss or, as in the prediction above, from
# two different ones:

# %%
b = torch.tensor([3.0], device=device, requires_grad=True)
for call in range(3):
    (b ** 2).sum().backward()
    print(f"after backward #{call + 1}: b.grad = {b.grad.item():.1f}   (d(b²)/db = {2 * b.item():.1f})")

# %% [markdown]
# ### Trap: the missing `zero_grad`
#
# So the training loop has to clear the gradients every step: **`zero_grad` → forward → loss → backward
# → step**. Forget the first part and each step uses the sum of *all* gradients so far — like momentum
# that never decays. Below, the same linear regression is trained twice with SGD; only the
# `zero_grad()` call differs.

# %%
def fit_line(clear_gradients: bool, steps: int = 60, lr: float = 0.1) -> list[float]:
    seed_everything(0)
    features = torch.randn(128, 5).to(device)
    labels = (features @ torch.randn(5, 1).to(device)) + 0.1 * torch.randn(128, 1).to(device)
    line = nn.Linear(5, 1).to(device)
    optimizer = torch.optim.SGD(line.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        if clear_gradients:
            optimizer.zero_grad()
        loss = F.mse_loss(line(features), labels)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


without_zero, with_zero = fit_line(clear_gradients=False), fit_line(clear_gradients=True)
for step in (0, 10, 20, 40, 59):
    print(f"step {step:2d}: loss without zero_grad {without_zero[step]:7.4f} | with zero_grad {with_zero[step]:7.4f}")
plot_curves({"without zero_grad()": without_zero, "with zero_grad()": with_zero}, logy=True,
            title="the same model and data: only zero_grad differs")

# %% [markdown]
# Without `zero_grad` the loss first drops, then swings up and down and never settles: the summed
# gradient keeps pushing the weights past the minimum. Nothing raises an error — the curve is the only
# symptom. (Optimizers clear with `set_to_none=True` by default: `.grad` becomes `None` rather than a
# tensor of zeros, which saves memory and a kernel launch.)
#
# ### Deliberate accumulation, with the loss scaled
#
# The same adding-up is useful on purpose: when a batch of 32 does not fit in memory, run 4
# micro-batches of 8, call `backward()` on each, and step once. The gradients add up — so to get the
# gradient of the *mean* loss over 32 samples, divide each micro-batch's (mean) loss by the number of
# micro-batches before `backward()`:

# %%
seed_everything(0)
net = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1)).to(device)
batch_x, batch_y = torch.randn(32, 3).to(device), torch.randn(32, 1).to(device)


def flat_grad(module):
    return torch.cat([q.grad.flatten() for q in module.parameters()])


net.zero_grad()
F.mse_loss(net(batch_x), batch_y).backward()   # the gradient we want: one batch of 32
full = flat_grad(net)

for scaled in (False, True):
    net.zero_grad()
    for chunk_x, chunk_y in zip(batch_x.split(8), batch_y.split(8)):
        micro_loss = F.mse_loss(net(chunk_x), chunk_y)
        (micro_loss / 4 if scaled else micro_loss).backward()
    accumulated = flat_grad(net)
    print(f"loss / 4 = {scaled!s:5s}: accumulated / full-batch gradient = {(accumulated.norm() / full.norm()).item():.3f}")
# The full batch adds each weight's 32 per-sample terms in one sum, the accumulation in 4 sums of 8 and then
# adds those: the two orders differ by float32 roundings (3e-8 here, on gradients up to 0.29), far inside 1e-6.
torch.testing.assert_close(accumulated, full, rtol=1e-5, atol=1e-6)
print("with the scaling, assert_close(accumulated, full) passes")

# %% [markdown]
# Unscaled, the accumulated gradient is 4× too large. What that does to training depends on the
# optimizer. Predict before you run: one step from the same start, unscaled against scaled, with SGD
# and with Adam — which one moves the weights differently?

# %%
def one_step(optimizer_class, scaled, **options):
    """One accumulated step (4 micro-batches) from the same start; the weights after it."""
    with torch.random.fork_rng(devices=[]):   # the same start each time, and the notebook's RNG untouched
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1)).to(device)
    optimizer = optimizer_class(model.parameters(), **options)
    for chunk_x, chunk_y in zip(batch_x.split(8), batch_y.split(8)):
        micro_loss = F.mse_loss(model(chunk_x), chunk_y)
        (micro_loss / 4 if scaled else micro_loss).backward()
    optimizer.step()
    return torch.cat([q.detach().flatten() for q in model.parameters()])


gaps = {}
for name, optimizer_class, options in (("SGD", torch.optim.SGD, {"lr": 0.1}),
                                       ("Adam", torch.optim.Adam, {"lr": 0.1})):
    after_unscaled, after_scaled = (one_step(optimizer_class, scale, **options) for scale in (False, True))
    gaps[name] = (after_unscaled - after_scaled).abs().max().item()
# SGD's difference is lr × 3 × a gradient, far above float32's rounding: printed as measured. Adam's is what its
# eps leaves (about lr · 3·eps / |g| for the smallest gradient, 1.5e-3 here: 2e-6) plus float32's rounding of
# the new weights, which differs between CPUs (1.9e-06 on one, 2e-06 on another): printed as the bound it keeps.
print(f"SGD : largest weight difference after one step, unscaled vs scaled: {gaps['SGD']:.2g}")
print(f"Adam: largest weight difference after one step, unscaled vs scaled: {under(gaps['Adam'], 1e-5)}")

# %% [markdown]
# With SGD the step is `lr × gradient`, so a 4× gradient is exactly a 4× learning rate. Adam divides
# each gradient by a running estimate of its own size, so a constant factor cancels (all but its tiny
# `eps`): the unscaled run lands in the same place. That does not make the scaling optional with Adam —
# everything that reads the gradient's *size* still sees 4× too much: a `clip_grad_norm_` threshold, an
# L2 penalty added to the gradient (`weight_decay` in `Adam`, not `AdamW`), the gradient norm you log,
# and a last window of fewer micro-batches, which is then weighted differently from the rest. The
# `grad_accumulation` exercise builds the whole training loop around this.
#
# ## 7. Leaving the graph: `detach`, `no_grad`, `inference_mode`
#
# Three ways to compute *without* recording:
#
# * `t.detach()` — a new tensor over the **same storage**, with no `grad_fn` and `requires_grad=False`:
#   gradients stop there. Use it for values you want to log, plot or feed back as constants.
# * `with torch.no_grad():` — nothing computed inside is recorded. Use it for evaluation, and for
#   updating parameters by hand (that is how optimizers step).
# * `with torch.inference_mode():` — like `no_grad`, and a little faster, because the results are
#   marked as *inference tensors*, which autograd refuses to *save* for a later backward.
#
# **Predict, then run.** `frozen` is computed under `no_grad`; `mixed` is computed after the block,
# from `frozen` and a tensor that requires grad. Which of the two requires grad?

# %%
scale = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
with torch.no_grad():
    frozen = scale * 2
mixed = frozen * scale
guess = ...   # (frozen.requires_grad, mixed.requires_grad), e.g. (True, True)
predict("02.requires_grad_after_no_grad", guess, (frozen.requires_grad, mixed.requires_grad),
        why="nothing inside no_grad is recorded; outside it, one input that requires grad is enough to record again")
print("mixed.grad_fn.next_functions:", [type(node).__name__ if node is not None else None
                                       for node, _ in mixed.grad_fn.next_functions])

# %% [markdown]
# `no_grad` only decides what is recorded *inside* the block: `frozen` is from then on an ordinary
# constant (the `None` entry), and `mixed`'s graph reaches `scale` through the second factor only. The
# three ways side by side:

# %%
weights = torch.randn(3).to(device).requires_grad_()
detached = (weights * 2).detach()
with torch.no_grad():
    in_no_grad = weights * 2
with torch.inference_mode():
    in_inference = weights * 2
print(f"{'':14s} requires_grad  grad_fn  is_inference")
for name, t in {"weights * 2": weights * 2, "detach()": detached, "no_grad": in_no_grad,
                "inference_mode": in_inference}.items():
    node = type(t.grad_fn).__name__ if t.grad_fn is not None else None
    print(f"{name:14s} {t.requires_grad!s:13s}  {node!s:12s} {t.is_inference()}")
print("detach() shares storage with weights:",
      weights.detach().untyped_storage().data_ptr() == weights.untyped_storage().data_ptr())

# %% [markdown]
# The price of `inference_mode` is narrower than "it can never meet autograd again". Adding an
# inference tensor to a graph works: the backward of `+` needs neither input, so nothing is saved.
# Multiplying by it fails, because `*` must keep the other factor to compute its gradient — and an
# inference tensor cannot be kept. The error says exactly that:

# %%
weights.grad = None
(in_inference + weights).sum().backward()    # addition saves nothing: allowed
print("in_inference + weights: backward works, weights.grad =", weights.grad)
try:
    (in_inference * weights).sum().backward()    # multiplication must save in_inference: refused
except RuntimeError as error:
    print("in_inference * weights: RuntimeError:", str(error).split(". ")[0])
weights.grad = None
(in_no_grad * weights).sum().backward()   # a no_grad result is an ordinary constant
print("with the no_grad result instead: weights.grad =", weights.grad)

# %% [markdown]
# ### Trap: `.numpy()` on a tensor that requires grad
#
# NumPy knows nothing about graphs, so `.numpy()` refuses a tensor that requires grad, and the error says
# what to do. (A NumPy array lives in CPU memory, so this example stays on the CPU; a GPU tensor also needs
# `.cpu()`, which copies.)

# %%
fitted = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
try:
    fitted.numpy()
except RuntimeError as error:
    print("fitted.numpy() -> RuntimeError:", str(error).splitlines()[0])
as_array = fitted.detach().numpy()
print("fitted.detach().numpy() works:", as_array)
as_array[0] = 100.0                          # write into the array ...
print("after as_array[0] = 100, fitted is", fitted, "| its version counter:", fitted._version)

# %% [markdown]
# `detach().numpy()` copies nothing: the array is a view of the tensor's memory, so writing into it
# changes `fitted` as well — and, like `.data` in section 8, behind the version counter's back (still 0).
# When you want numbers to keep or to modify, take a copy: `t.detach().cpu().numpy().copy()`, or
# `t.tolist()` for plain Python numbers.

# %% [markdown]
# ## 8. In-place operations and the version counter
#
# Every tensor carries a **version counter** (`t._version`) that each in-place operation (`add_`,
# `mul_`, `t[i] = ...`, `relu_`...) increases. When a node saves a tensor for backward, it notes the
# version; when backward needs the tensor, it checks the version again. A mismatch means the saved value
# was overwritten, and backward refuses to compute a wrong gradient.
#
# ### Trap: editing a saved tensor in place

# %%
q = torch.tensor([0.0, 1.0, 2.0], device=device, requires_grad=True)
e = q.exp()            # ExpBackward0 saves its output e: d exp(q)/dq = exp(q)
print("version of e after exp:", e._version)
e.add_(1)              # "shift by one", in place
print("version of e after add_:", e._version)
try:
    e.sum().backward()
except RuntimeError as error:
    print("RuntimeError:", str(error).split(":")[0])

# %% [markdown]
# The fix is the out-of-place form, `e = e + 1`, which makes a new tensor and leaves the saved one
# alone. (Autograd only complains when the overwritten tensor was *saved*: `add_` on a tensor that no
# node needs is fine.)

# %%
e = q.exp()
e = e + 1
e.sum().backward()
# exp's backward multiplies the incoming 1 by its saved output, exp(q): the same float32 numbers as q.exp()
# computes, so a tolerance of a few float32 roundings (rtol 1e-6) is already loose.
torch.testing.assert_close(q.grad, q.detach().exp(), rtol=1e-6, atol=0)
print("out of place: q.grad = exp(q) =", q.grad)

# %% [markdown]
# Two relatives of this trap:
#
# * an in-place operation on a **leaf that requires grad** is refused outright (it would change the
#   value the graph started from). To update parameters by hand, do it under `torch.no_grad()`;
# * `.data` hands out the tensor *without* its version counter. An edit through it is not detected,
#   and backward silently uses the overwritten value. `detach()` shares the counter, so the same edit
#   through `detach()` raises. Prefer `detach()`.

# %%
leaf = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
try:
    leaf.mul_(2)
except RuntimeError as error:
    print("leaf.mul_(2):", str(error).split(". ")[0])
with torch.no_grad():
    leaf.mul_(2)
print("under no_grad it works: leaf =", leaf)

r = torch.tensor([0.0, 1.0], device=device, requires_grad=True)
s = r.exp()
s.data.add_(1)         # hidden from the version counter
s.sum().backward()
print("through .data : r.grad =", r.grad, " but the true gradient is exp(r) =", r.detach().exp())
r.grad = None
s = r.exp()
s.detach().add_(1)     # detach() shares the version counter
try:
    s.sum().backward()
except RuntimeError as error:
    print("through detach():", str(error).split(":")[0])

# %% [markdown]
# ## 9. Looking inside: `retain_grad` and tensor hooks
#
# Backward computes the gradient of every intermediate tensor on its way, but only leaves keep it.
# Asking a non-leaf for `.grad` gives `None` — with a warning that explains why:

# %%
k = torch.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
hidden = k * 2
(hidden ** 2).sum().backward()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("hidden.grad:", hidden.grad)
for warning in caught:
    print("warning:", str(warning.message).split(". ")[0])

# %% [markdown]
# `retain_grad()` asks autograd to keep it. A **tensor hook**, `t.register_hook(fn)`, goes further:
# `fn` is called with the gradient of `t` during backward, may look at it, and may return a replacement
# that flows on instead. `register_hook` returns a handle; call `handle.remove()` when you are done.

# %%
k.grad = None
hidden = k * 2
hidden.retain_grad()
seen = []
handle = hidden.register_hook(lambda grad: seen.append(grad.clone()))       # look
clip = hidden.register_hook(lambda grad: grad.clamp(-5, 5))                 # replace
(hidden ** 2).sum().backward()
print("gradient reaching hidden:  ", seen[0], " (= 2 * hidden)")
print("hidden.grad (retain_grad): ", hidden.grad)
print("k.grad, from the clipped one:", k.grad, " (= 2 * clipped)")
handle.remove()
clip.remove()

# %% [markdown]
# Hooks run in registration order, so the first one saw the gradient before clipping. `retain_grad`
# fills `.grad` only after all of the tensor's hooks have run, so it holds the clipped gradient — the
# one that flowed on into `k.grad`. Hooks on parameters (`p.register_hook`) are a quick way to watch or clip
# gradients per layer.
#
# ## 10. Graph lifetime: keep `loss.item()`, not `loss`
#
# A tensor with a `grad_fn` keeps its whole graph alive — every node, and every tensor the nodes saved
# for backward. In a training step, `backward()` frees the saved tensors anyway. But wherever no
# backward runs — an evaluation loop without `no_grad`, a second loss you only log — appending `loss`
# to a list keeps one complete graph, activations included, per step.
#
# To *measure* that on any device, we count the bytes of the tensors that autograd saved for backward
# and that some graph still holds. `SavedTensorMeter` (from `coursekit.meters`, imported at the top) does
# that with `torch.autograd.graph.saved_tensors_hooks`, which hands it every tensor a node saves while the
# meter is active; it keeps only a weak reference to each, so the count drops the moment a graph is freed.
# We pass it the model, whose parameters are saved too but live on anyway: they are not counted.

# %%
seed_everything(0)
evaluated = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 1)).to(device)
batches = [(torch.randn(64, 32).to(device), torch.randn(64, 1).to(device)) for _ in range(40)]


def evaluate(habit: str) -> list[float]:
    """One pass over the 40 batches, written with one habit; the KiB held by saved tensors after each batch."""
    losses, preds, total_loss, held = [], [], 0.0, []
    with SavedTensorMeter(evaluated) as meter:
        for features, labels in batches:
            out = evaluated(features)
            loss = F.mse_loss(out, labels)
            if habit == "losses.append(loss)":
                losses.append(loss)
            elif habit == "losses.append(loss.item())":
                losses.append(loss.item())
            elif habit == "total_loss += loss":
                total_loss += loss
            elif habit == "total_loss += loss.item()":
                total_loss += loss.item()
            elif habit == "preds.append(out)":
                preds.append(out)
            elif habit == "preds.append(out.detach())":
                preds.append(out.detach())
            held.append(meter.held_kib())
    return held


held = {habit: evaluate(habit) for habit in ("losses.append(loss)", "losses.append(loss.item())")}
for habit, curve in held.items():
    print(f"{habit:26s} KiB held after batch 1: {curve[0]:6.1f} | batch 10: {curve[9]:7.1f} | batch 40: {curve[-1]:7.1f}")

# %% [markdown]
# Keeping `loss` holds 72.5 KiB more at every batch; keeping the float holds one batch's worth (the graph
# of the latest `loss`, still in its variable until the next batch replaces it). Where do 72.5 KiB per
# batch come from? `meter.breakdown()` lists every block of memory (storage) that one batch's graph saved:

# %%
features, labels = batches[0]
with SavedTensorMeter(evaluated) as meter:
    one_loss = F.mse_loss(evaluated(features), labels)
for saved in meter.breakdown():
    size = "a parameter: not counted" if saved.excluded else f"{saved.nbytes / 1024:5.2f} KiB"
    print(f"shape {str(saved.shape):10s} saved by {saved.saves} node(s)  {size}")
print(f"total counted: {meter.held_kib():.2f} KiB")
plot_curves(held, ylabel="KiB held by saved tensors", xlabel="batch (0 is the first)",
            title="evaluation loop: what 40 batches leave alive")

# %% [markdown]
# The (64, 256) block is the ReLU's output: the ReLU saved it (its gradient needs to know where the
# output is positive) and so did the second layer (its weight gradient needs its input). One storage,
# counted once: 64 KiB. The (64, 32) block is the input batch, saved by the first layer for its weight
# gradient; the two (64, 1) tensors are the prediction and the target, saved by the MSE loss. The
# second layer's weight is saved as well, but it is a parameter and would exist anyway. Scale that up to
# a real network and a real evaluation set, and the "leak" is every activation of every batch.
#
# ### Two more ways to keep graphs alive by accident
#
# A list of losses is the famous case, but any tensor that leads back into the graph does the same. Two
# lines that look harmless: a running sum `total_loss += loss` (the sum is a tensor with a `grad_fn` whose
# graph reaches every loss added so far), and collecting the model's outputs with `preds.append(out)`.
# The same 40 batches, with each habit and its fix:

# %%
habits = ["total_loss += loss", "total_loss += loss.item()", "preds.append(out)", "preds.append(out.detach())"]
held.update({habit: evaluate(habit) for habit in habits})
with torch.no_grad():
    held["preds.append(out) under no_grad"] = evaluate("preds.append(out)")
for habit, curve in held.items():
    print(f"{habit:32s} KiB held after batch 1: {curve[0]:5.1f} | batch 40: {curve[-1]:7.1f}")

after_40 = {habit: curve[-1] for habit, curve in held.items()}
plot_bars(after_40, ylabel="KiB held by saved tensors after 40 batches", title="what each habit keeps alive",
          fmt="{:.1f}", horizontal=True, colors=["tab:red" if kib > 100 else "tab:green" for kib in after_40.values()])

# %% [markdown]
# `total_loss += loss` keeps exactly as much as the list of losses, 2900 KiB: `total_loss` is a chain of
# additions whose graph reaches every loss. `preds.append(out)` keeps 2880.5 KiB = 40 × 72 + 0.5: each kept
# output holds the 72 KiB its two layers saved, while the MSE's two small (64, 1) tensors, 0.5 KiB, are
# kept only for the latest `loss`. Every fix falls back to one batch's worth, 72.5 KiB — the graph of the
# latest `out` and `loss`, still in their variables: `loss.item()` (a float), `out.detach()` (the values,
# cut off from the graph). Under `torch.no_grad()` nothing is saved in the first place: 0.0 KiB.
#
# So: keep `loss.item()`, keep `out.detach()` (or `.cpu()` copies of it), and evaluate under
# `torch.no_grad()`. In a training loop, `backward()` frees the saved tensors, so a kept `loss` holds only
# its (small) chain of nodes — still no reason to keep it. The memory the tensors live in shows the same
# growth: on the CPU that is the process's own memory; on a GPU it is the GPU's, which
# `torch.cuda.memory_allocated()` reports (the process's memory would barely move there). `memory_in_use`
# (also from `coursekit.meters`) reads whichever applies. Its numbers vary by machine, so this cell is not
# compared when the notebook is tested:

# %% tags=nbval-ignore-output
def growth_mib(keep: str, steps: int = 60) -> float:
    seed_everything(0)
    wide = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 1)).to(device)
    gc.collect()
    before = memory_in_use(device)
    kept = []
    for _ in range(steps):
        loss = wide(torch.randn(256, 64).to(device)).pow(2).mean()
        kept.append(loss if keep == "loss" else loss.item())
    growth = (memory_in_use(device) - before) / 2**20
    del kept, loss
    gc.collect()
    return growth


where = "GPU memory allocated by torch" if device.type == "cuda" else "process memory"
for keep in ("loss", "item"):
    print(f"{where}: growth over 60 steps, keeping {keep:4s}: {growth_mib(keep):6.1f} MiB")
with torch.no_grad():
    print(f"{where}: the same loop under torch.no_grad(), keeping loss: {growth_mib('loss'):6.1f} MiB")

# %% [markdown]
# ### Trap: a recurrent state carried across batches
#
# A recurrent network often reads one long sequence in chunks — here 12 batches of 10 time steps, for 4
# sequences at once — and its hidden state `h` carries over from one batch to the next, so that the network
# remembers what came before. Written naively, `h` carries its *graph* over too: batch 2's loss depends,
# through `h`, on every time step of batch 1. In a training loop that fails at the second batch; the same
# loop with `retain_graph=True`, which the first error message suggests, fails there as well:

# %%
seed_everything(0)
chunks = [torch.randn(10, 4, 8).to(device) for _ in range(12)]   # per batch: 10 steps, 4 sequences, 8 features
chunk_targets = [torch.randn(4, 1).to(device) for _ in range(12)]


def read_stream(train: bool, detach_state: bool, retain_graph: bool = False) -> list[float]:
    """Run an RNN cell over the 12 batches with h carried over; KiB held by saved tensors after each forward."""
    with torch.random.fork_rng(devices=[]):       # the same start each time, and the notebook's RNG untouched
        torch.manual_seed(0)
        rnn, head = nn.RNNCell(8, 32).to(device), nn.Linear(32, 1).to(device)
    parameters = [*rnn.parameters(), *head.parameters()]
    optimizer = torch.optim.SGD(parameters, lr=0.05)
    h = torch.zeros(4, 32, device=device)
    held = []
    with SavedTensorMeter(parameters) as meter:
        for number, (chunk, target) in enumerate(zip(chunks, chunk_targets), start=1):
            if detach_state:
                h = h.detach()                   # the fix: keep h's values, drop its graph
            for x_t in chunk:
                h = rnn(x_t, h)
            loss = F.mse_loss(head(h), target)
            held.append(meter.held_kib())
            if train:
                optimizer.zero_grad()
                try:
                    loss.backward(retain_graph=retain_graph)
                except RuntimeError as error:
                    message = str(error)
                    print(f"  batch {number}: RuntimeError: {message.split('. ')[0].split(':')[0]}")
                    for advice in (s for s in message.split(". ") if s.startswith("Specify retain_graph=True")):
                        print(f"  the message advises: {advice}")
                    version = re.search(r"\[(\d+, \d+)\]\]?.*?(is at version \d+; expected version \d+)", message)
                    if version:
                        print(f"  the saved tensor of shape ({version[1]}) {version[2]}")
                    return held
                optimizer.step()
        if train:
            print(f"  all {len(held)} batches trained")
    return held


for retain_graph in (False, True):
    print(f"training, h carried over, backward(retain_graph={retain_graph}):")
    read_stream(train=True, detach_state=False, retain_graph=retain_graph)

# %% [markdown]
# The first error is section 5's: batch 1's `backward()` freed batch 1's saved tensors, and batch 2's
# backward needs them, because its graph runs back through `h` into batch 1. With `retain_graph=True`
# they are kept — and the second error appears: batch 1's graph saved the recurrent weight as it was (the
# (32, 32) tensor is `weight_hh`, at version 1 after its initialisation), and `optimizer.step()` has changed
# it in place since, to version 2 (section 8's version counter). Even if neither error
# stood in the way, the graph would keep growing. Run the same loop without any backward — as an
# evaluation over a long stream without `no_grad` would — and measure:

# %%
stream_held = {"h carried over": read_stream(train=False, detach_state=False),
               "h = h.detach() at each batch": read_stream(train=False, detach_state=True)}
for name, curve in stream_held.items():
    print(f"{name:28s} KiB held after batch 1: {curve[0]:5.2f} | batch 2: {curve[1]:5.2f} | batch 12: {curve[-1]:6.2f}")
plot_curves({name: (list(range(1, 13)), curve) for name, curve in stream_held.items()}, xlabel="batch",
            ylabel="KiB held by saved tensors", ylim=(0, None), title="a recurrent state carried across 12 batches")
print("training with h = h.detach() at each batch:")
trained_held = read_stream(train=True, detach_state=True)
print("KiB held after each forward:", sorted(set(round(kib, 2) for kib in trained_held)))

# %% [markdown]
# Without the detach, every batch adds its own 6.25 KiB — the 10 hidden states (512 bytes each) and the
# batch's input — and all of them stay reachable from `h`: after 12 batches the graph holds 120 time steps,
# and a backward from there would walk all of them. The fix is **truncated backpropagation through time**:
# `h = h.detach()` at the start of each batch. `h` keeps its *values*, so the network still carries its memory
# forward, but gradients flow back only through the current batch's 10 steps. The held memory stays flat at
# one batch's graph, 6.78 KiB, and training runs through all 12 batches.

# %% [markdown]
# ## 11. Your own backward: `torch.autograd.Function`
#
# When an operation is not differentiable the way you need (a custom kernel, a numerically safer
# formula, a deliberately different gradient), write the node yourself. A subclass of
# `torch.autograd.Function` has two static methods:
#
# * `forward(ctx, *inputs)` computes the result **without** recording a graph, and stores on `ctx`
#   what backward will need — tensors through `ctx.save_for_backward(...)`, anything else as attributes;
# * `backward(ctx, grad_output)` receives d(loss)/d(output) and returns d(loss)/d(input), one result per
#   input of `forward` (`None` for inputs that need no gradient). It is the chain rule, done by hand.
#
# You call it as `MyFunction.apply(x)`. Here is softplus, log(1 + eᵗ), whose derivative is sigmoid(t):

# %%
class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return torch.log1p(torch.exp(t))

    @staticmethod
    def backward(ctx, grad_output):
        (t,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(t)


g = torch.randn(5).to(device).requires_grad_()
result = Softplus.apply(g)
print("the node it records:", type(result.grad_fn).__name__)
# F.softplus has kernels of its own for the value and for the gradient (eᵗ / (1 + eᵗ), not sigmoid): a float32
# step or two from ours (6e-8 measured on the gradient). rtol 1e-5 is about 80 steps.
torch.testing.assert_close(result, F.softplus(g), rtol=1e-5, atol=1e-6)
upstream = torch.randn(5).to(device)
(mine,) = torch.autograd.grad(result, g, upstream)
(theirs,) = torch.autograd.grad(F.softplus(g), g, upstream)
torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
print("values and gradients match F.softplus")

# %% [markdown]
# ### Trap: saving a tensor as a plain attribute
#
# `ctx.t = t` also "works" — until someone changes `t` in place between forward and backward. A plain
# attribute skips the version check of section 8, so backward silently uses the new values;
# `save_for_backward` checks the version and raises.

# %%
class SoftplusAttribute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.t = t                       # not save_for_backward
        return torch.log1p(torch.exp(t))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * torch.sigmoid(ctx.t)


start = torch.zeros(3, device=device, requires_grad=True)
for function in (SoftplusAttribute, Softplus):
    inner = start * 1.0                 # a non-leaf we may edit in place
    result = function.apply(inner)
    inner.add_(10.0)                    # changed after forward
    try:
        (gradient,) = torch.autograd.grad(result.sum(), start)
        print(f"{function.__name__:17s} gradient {[round(value, 4) for value in gradient.tolist()]}"
              "  (the right one is sigmoid(0) = 0.5)")
    except RuntimeError as error:
        print(f"{function.__name__:17s} RuntimeError: {str(error).split(':')[0]}")

# %% [markdown]
# ### `gradcheck`: is my backward right?
#
# `torch.autograd.gradcheck(fn, inputs)` compares your analytic backward with **finite differences**,
# (f(x + ε) − f(x − ε)) / 2ε with ε = 10⁻⁶, element by element, and passes when they agree within
# 10⁻⁵ absolute / 10⁻³ relative. In `float64` softplus passes:

# %%
seed_everything(0)
point = torch.randn(5, dtype=torch.float64).to(device).requires_grad_()
print("float64 gradcheck:", torch.autograd.gradcheck(Softplus.apply, (point,)))

# %% [markdown]
# ### Trap: `gradcheck` in `float32`
#
# The same, correct function in `float32` fails: `gradcheck` raises a Jacobian mismatch, and the warning
# it gave on the way (printed after the error, since it was recorded) already said why:

# %%
point32 = point.detach().float().requires_grad_()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        torch.autograd.gradcheck(Softplus.apply, (point32,))
    except RuntimeError as error:  # gradcheck raises GradcheckError, a RuntimeError
        print(f"{type(error).__name__}:", str(error).splitlines()[0])
for warning in caught[:1]:
    print("warning:", str(warning.message).split(". ")[0])
at = point32.detach()
above, below = Softplus.apply(at + 1e-6), Softplus.apply(at - 1e-6)
numerical = (above - below) / 2e-6                           # gradcheck's estimate, by hand
backward = torch.sigmoid(at)
step = torch.nextafter(below, torch.full_like(below, float("inf"))) - below   # the spacing of float32 numbers at f(x)
# The estimates themselves are not printed: each is a whole number of steps, and which whole number depends on
# the last bit of exp and log1p, which differs between CPUs (0.4172 on one, 0.4470 on another: 14 and 15 steps).
whole = torch.equal((above - below) / step, ((above - below) / step).round())
outside = ((numerical - backward).abs() > 1e-5 + 1e-3 * numerical.abs()).all().item()   # gradcheck's test
print("backward (sigmoid):                  ", [f"{value:.4f}" for value in backward.tolist()])
print("finite differences move in jumps of: ", [f"{value:.4f}" for value in (step / 2e-6).tolist()])
print(f"f(x + ε) − f(x − ε) a whole number of float32 steps: {whole} | "
      f"all 5 estimates outside gradcheck's tolerance: {outside}")

# %% [markdown]
# Nothing is wrong with `backward`: the finite differences are. f(x + ε) and f(x − ε) are `float32`
# numbers, and `float32` keeps about 7 significant digits: between 0.5 and 1, for instance, its numbers lie
# 6·10⁻⁸ apart. So their difference is a whole number of such steps, and dividing it by 2ε = 2·10⁻⁶ turns
# one step into a jump of 0.0298 in the estimate. The estimate can only move in such jumps — 0.0037 to 0.0596
# at these five points, depending on the size of f there — so it is generally off by a good fraction of a
# jump: far outside `gradcheck`'s tolerance (10⁻⁵ absolute plus 10⁻³ relative), and here all five are. Which
# whole number of steps it lands on depends on the last bit that `exp` and `log1p` return, and that bit differs
# between CPUs: another machine's estimates differ from these by whole jumps, which is why the cell prints the
# jumps and not the estimates. A larger ε shrinks the jumps but adds the formula's own truncation error, which
# grows like ε². The picture shows that trade-off for softplus' derivative at t = 0.5: at `gradcheck`'s ε,
# `float32` is off by more than 10⁻³, while `float64`, with about 16 digits, is off by less than 10⁻⁹. The flat
# stretch at the left of the `float32` curve is the extreme case: below about 1.5·10⁻⁸ (half the spacing of
# `float32` numbers just below 0.5), x ± ε rounds back to x itself, both values are equal, the estimate is 0,
# and the error is the whole derivative, sigmoid(0.5) ≈ 0.62, whatever ε. So:
# **always run `gradcheck` in `float64`.**

# %%
steps_eps = torch.logspace(-9, -1, 33, dtype=torch.float64)
exact = torch.sigmoid(torch.tensor(0.5, dtype=torch.float64))
errors = {}
for dtype in (torch.float32, torch.float64):
    at = torch.tensor(0.5, dtype=dtype).to(device)
    errs = []
    for eps in steps_eps.tolist():
        estimate = (F.softplus(at + eps) - F.softplus(at - eps)) / (2 * eps)
        errs.append(max(abs(estimate.item() - exact.item()), 1e-17))
    errors[str(dtype).removeprefix("torch.")] = (steps_eps.tolist(), errs)
# These errors are made of float32 (float64) steps of softplus, and the step an exp or a log1p lands on differs
# between CPUs (float64's error at 1e-6 was 1.2e-11 with one kernel, 4.3e-11 with another), so they are printed
# as the bounds every machine keeps. float32's is over 1e-3 anywhere: its estimates jump by 0.0298 there.
float32_errors, float64_errors = errors["float32"][1], errors["float64"][1]
print(f"float32: error at eps=1e-6 {over(float32_errors[12], 1e-3)}; smallest error {under(min(float32_errors), 1e-5)}")
print(f"float64: error at eps=1e-6 {under(float64_errors[12], 1e-9)}; smallest error {under(min(float64_errors), 1e-10)}")
tiny = torch.tensor(0.5, dtype=torch.float32)
print("float32 at eps=1e-9: 0.5 + eps == 0.5 is", (tiny + 1e-9 == tiny).item(), "| estimate",
      ((F.softplus(tiny + 1e-9) - F.softplus(tiny - 1e-9)) / 2e-9).item(), "| its error", f"{exact.item():.2f}")
plot_curves(errors, xlabel="ε (finite-difference step)", ylabel="|error| of the derivative", logx=True,
            logy=True, marks={"gradcheck's ε": 1e-6}, title="finite differences: float32 vs float64")

# %% [markdown]
# ## Summary
#
# * Leaves are tensors you made; non-leaves carry a `grad_fn`, a node of the backward graph. Nodes link
#   to their inputs' nodes through `next_functions` (`None` for inputs without grad); leaves that
#   require grad end in `AccumulateGrad`, which adds into `.grad`.
# * The graph is built by running Python, anew on every forward, and belongs to the tensors it made.
# * Backward runs each node once, in a topological order found by counting dependencies: a node that
#   feeds several others waits for all of their gradients and runs on their sum.
# * `backward()` on a scalar; `backward(u)` = vector-Jacobian product; `torch.autograd.grad` returns
#   gradients without touching `.grad`; `create_graph=True` makes the backward differentiable.
# * Backward frees saved tensors: a second pass needs `retain_graph=True` (or one summed loss).
# * Gradients add up: `zero_grad` → forward → loss → backward → step. For accumulation over
#   micro-batches, divide each loss by their number.
# * `detach`, `no_grad`, `inference_mode` stop recording; `.numpy()` needs `detach()` first (and shares
#   memory). In-place edits of saved tensors are caught by the version counter (not through `.data`).
#   `retain_grad` and hooks expose inner gradients.
# * Keep `loss.item()` and `out.detach()`, not `loss` or `out` (also not in a running `total_loss +=`),
#   and evaluate under `no_grad`: a kept tensor keeps its graph. Detach a recurrent state at each batch
#   (truncated backpropagation through time), or its graph grows without end.
# * A custom `autograd.Function` saves with `ctx.save_for_backward`; check it with `gradcheck` in
#   `float64`.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check graph_ops my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=gelu_function_task
# ## Exercise 1 · `gelu_function` (8 points)
#
# Write `GELUFunction`, a `torch.autograd.Function` computing the tanh approximation of GELU
#
#     gelu(x) = 0.5 · x · (1 + tanh(u)),   u = sqrt(2/π) · (x + 0.044715 · x³)
#
# with your own `backward` that returns the derivative you worked out by hand (product rule, then
# chain rule through `tanh`; recall tanh′(u) = 1 − tanh(u)²).
#
# * It is used as `GELUFunction.apply(x)`, for `x` of any shape and layout (0-d, empty, transposed,
#   sliced), dtype (`float32`, `float64`, `bfloat16`) and device; the result has `x`'s dtype.
# * Values equal `torch.nn.functional.gelu(x, approximate="tanh")` within the dtype's tolerance, and
#   `torch.autograd.gradcheck(GELUFunction.apply, (x,))` passes for `float64` input.
# * Save what `backward` needs with `ctx.save_for_backward`, so that an in-place change of the input
#   after forward makes backward raise instead of computing a wrong gradient.
# * Compute the formula yourself: do not call `F.gelu`, `nn.GELU` or any other GELU.
#
# ```python
# class GELUFunction(torch.autograd.Function):
#     @staticmethod
#     def forward(ctx, x):
#         ...
#
#     @staticmethod
#     def backward(ctx, grad_output):
#         ...
# ```
#
# *Hint:* section 11's `Softplus` has exactly this shape. Compare your values and gradients with
# `F.gelu(x, approximate="tanh")` using `torch.testing.assert_close`, then run the `gradcheck` cell
# below the checks.

# %% nbgrader=solution id=gelu_function_answer
import torch

### BEGIN SOLUTION
from solutions.ch02_autograd import GELUFunction
### END SOLUTION

# %% nbgrader=test id=gelu_function_matches_torch points=3
check("gelu_function", globals(), "forward_matches_torch", "backward_matches_torch", "gradcheck_float64")

# %% nbgrader=test id=gelu_function_saves_and_computes points=2
check("gelu_function", globals(), "saves_input_for_backward", "computes_formula_itself")

# %% nbgrader=test id=gelu_function_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("gelu_function", globals(), "bfloat16", "any_shape_and_layout", "two_calls_in_one_graph")
### END HIDDEN TESTS

# %% [markdown]
# Your own `gradcheck`: run it on your `GELUFunction` in `float64`. A wrong derivative shows up here as a
# Jacobian mismatch: compare the *numerical* diagonal (finite differences) with the *analytical* one
# (your `backward`). The cell prints the mismatch instead of stopping, and says so if your class is not
# written yet.

# %%
seed_everything(0)
gelu_input = torch.randn(4, dtype=torch.float64).to(device).requires_grad_()
with uses_your_answer("GELUFunction"):
    try:
        passed = torch.autograd.gradcheck(GELUFunction.apply, (gelu_input,))
        print("gradcheck of your GELUFunction in float64:", "passed" if passed else "failed")
    except RuntimeError as error:  # a wrong backward (GradcheckError is a RuntimeError): show it, do not stop
        print(f"gradcheck of your GELUFunction in float64 failed: {type(error).__name__}:")
        print("\n".join(str(error).splitlines()[:16]))  # the numerical, then the analytical Jacobian

# %% [markdown] nbgrader=readonly id=graph_ops_task
# ## Exercise 2 · `graph_ops` (9 points)
#
# Write `graph_ops(t)` returning a `collections.Counter` of the nodes of the backward graph reachable
# from `t.grad_fn` (`t.grad_fn` itself included), keyed by `type(node).__name__` — for example
# `Counter({"AccumulateGrad": 2, "MulBackward0": 1, "SumBackward0": 1})`.
#
# * Every node counts **once**, however many paths lead to it (remember the tree print of section 1,
#   where `x` appeared twice).
# * `None` entries of `next_functions` (inputs that need no gradient) are not nodes.
# * A tensor without `grad_fn` (a leaf, or a result computed under `no_grad`) gives an empty `Counter()`.
# * It must work on long graphs too (an unrolled recurrent network): prefer a loop with a stack or a
#   queue to recursion.
#
# *Hint:* node objects can be put in a `set`. Compare your counts with the boxes that
# `draw_backward_graph` draws for the graphs of sections 2 and 3.

# %% nbgrader=solution id=graph_ops_answer
def graph_ops(t):
    """Counter of backward-graph node type names reachable from t.grad_fn, each node counted once."""
    ### BEGIN SOLUTION
    from solutions.ch02_autograd import graph_ops as reference

    return reference(t)
    ### END SOLUTION

# %% nbgrader=test id=graph_ops_basics points=4
check("graph_ops", globals(), "returns_counter", "small_expressions", "no_grad_fn_is_empty", "shared_nodes_counted_once")

# %% nbgrader=test id=graph_ops_hidden_boundaries points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("graph_ops", globals(), "inputs_without_grad_skipped", "stops_at_detach", "two_layer_network")
### END HIDDEN TESTS

# %% nbgrader=test id=graph_ops_hidden_networks points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("graph_ops", globals(), "unrolled_rnn", "residual_network")
### END HIDDEN TESTS

# %% [markdown]
# Your counts for the two graphs drawn in section 2 — each number should match the boxes of that type
# in the pictures:

# %%
with uses_your_answer("graph_ops"):
    for title, tensor in {"out": out, "two_layer_loss": two_layer_loss}.items():
        print(f"{title}: {dict(sorted(graph_ops(tensor).items()))}")

# %% [markdown] nbgrader=readonly id=grad_accumulation_task
# ## Exercise 3 · `grad_accumulation` (8 points)
#
# Write `train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps)`.
# `micro_batches` is a list of `(inputs, targets)` pairs, all with the same batch size, and
# `loss_fn(outputs, targets)` returns a mean loss.
#
# * Every `accum_steps` consecutive micro-batches form a *window* that makes exactly **one**
#   `optimizer.step()`, with the gradient of the window's **mean** loss — so that afterwards the
#   parameters equal those of ordinary training, one step per window on the concatenated window
#   (with any optimizer: plain SGD, momentum, Adam).
# * Return a list of Python floats: per optimizer step, the mean of the window's micro-batch losses.
# * Raise `ValueError` when `accum_steps < 1`, or when the number of micro-batches is not a multiple of
#   `accum_steps`.
# * Gradients already in `.grad` before the call must not leak into the first step.
#
# *Hint:* section 6 — gradients add up, so scale each micro-batch's loss. And section 10 — what do you
# keep in the list you return?

# %% nbgrader=solution id=grad_accumulation_answer
def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    """One optimizer step per accum_steps micro-batches; returns each window's mean loss (floats)."""
    ### BEGIN SOLUTION
    from solutions.ch02_autograd import train_with_accumulation as reference

    return reference(model, micro_batches, loss_fn, optimizer, accum_steps)
    ### END SOLUTION

# %% nbgrader=test id=grad_accumulation_basics points=3
check("grad_accumulation", globals(), "validates_arguments", "returns_float_list", "losses_are_window_means")

# %% nbgrader=test id=grad_accumulation_training points=2
check("grad_accumulation", globals(), "plain_sgd_matches", "leftover_grads_ignored")

# %% nbgrader=test id=grad_accumulation_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("grad_accumulation", globals(), "momentum_sgd_matches", "adam_matches", "edge_accum_steps")
### END HIDDEN TESTS

# %% [markdown]
# With your function, train the same model twice: with batches of 32, and with micro-batches of 8
# accumulated 4 at a time. The two loss curves should lie on top of each other.

# %%
def regression_runs():
    seed_everything(0)
    data_x = torch.randn(20, 32, 3).to(device)
    data_y = data_x @ torch.randn(3, 1).to(device) + 0.1 * torch.randn(20, 32, 1).to(device)
    first = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    second = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    second.load_state_dict(first.state_dict())
    ordinary = []
    opt = torch.optim.SGD(first.parameters(), lr=0.1)
    for batch_x, batch_y in zip(data_x, data_y):
        opt.zero_grad()
        batch_loss = F.mse_loss(first(batch_x), batch_y)
        batch_loss.backward()
        opt.step()
        ordinary.append(batch_loss.item())
    micro = [(mx, my) for bx, by in zip(data_x, data_y) for mx, my in zip(bx.split(8), by.split(8))]
    accumulated = train_with_accumulation(second, micro, F.mse_loss, torch.optim.SGD(second.parameters(), lr=0.1), 4)
    return ordinary, accumulated


with uses_your_answer("train_with_accumulation"):
    ordinary, accumulated = regression_runs()
    # The same 20 SGD steps, each gradient added in 4 parts instead of one sum: the losses drift apart by float32
    # roundings only (4e-7 at most measured, on losses up to 6.2), so 1e-5 holds on any CPU for a right answer.
    gap = max(abs(first - second) for first, second in zip(ordinary, accumulated))
    print("the two loss curves agree within 1e-5:", gap < 1e-5, "(the blue curve is hidden under the orange one)")
    plot_curves({"batches of 32": ordinary, "8 x 4 accumulated": accumulated}, xlabel="optimizer step",
                title="ordinary training vs gradient accumulation")
