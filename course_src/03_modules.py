# %% [markdown]
# # 03 · `nn.Module`: parameters, buffers and modes
#
# *Expected time: about 2 h 30 min — 1 h 45 min to read and run the cells, 45 min for the exercises
# (an estimate from the chapter's length; take the time it takes).*
#
# An `nn.Module` is two things at once: a function (its `forward`) and a **registry** of state. The
# registry is what makes `model.parameters()`, `model.to(device)`, `model.state_dict()` and
# `model.eval()` work without you listing anything by hand. It fills itself while your `__init__`
# runs, by watching which *kinds* of objects you assign to `self`. Assign the wrong kind — a Python
# list of layers, a plain tensor — and nothing fails: the object is simply not in the registry, and
# the optimizer, the device move or the checkpoint quietly skip it.
#
# **In this chapter** you will
# 1. watch a module register its parameters and submodules, walk and count them;
# 2. see a model whose layers sit in a Python list fail to learn, and fix it with `nn.ModuleList`;
# 3. sort a module's tensors into parameters, buffers and plain attributes, and measure what each
#    kind follows (`.to()`, `state_dict()`, the optimizer);
# 4. measure what `train()` and `eval()` change (Dropout, BatchNorm and its running statistics), and
#    what they do not change (autograd: that is `torch.no_grad()`'s job);
# 5. save and load weights with `state_dict`, and read the errors of a strict load;
# 6. initialise with `apply()` and freeze part of a model;
# 7. look inside a network with forward hooks: compare initialisations (N(0, 1), PyTorch's default,
#    Xavier, Kaiming, all ones) by their activations, and see why `model(x)`, not `model.forward(x)`;
# 8. measure gradient sizes with full backward hooks;
# 9. clip the gradient norm in the training loop, in the right place;
# 10. write two graded modules: `GLU` and `RunningNorm`.
#
# Between the sections, short **"predict, then run"** cells ask you to guess a value before the code
# shows it: replace the `...` after `guess =` with your prediction and run the cell. A wrong guess is not
# an error — the cell tells you the answer and why, and "Run All" goes on.

# %% nbgrader=readonly id=opening
import contextlib
import copy
import io
import warnings

import torch
import torch.nn.functional as F
from IPython.display import Markdown, display
from torch import nn

from coursekit import start_chapter, seed_everything
from coursekit.claims import over, under
from coursekit.meters import SavedTensorMeter
from coursekit.plots import plot_bars, plot_curves, plot_histograms
from coursekit.practice import predict, uses_your_answer
from graders import check

device = start_chapter("03_modules")

# %% [markdown]
# ## 1. How a module registers its state
#
# `nn.Module` overrides `__setattr__`, the method Python calls for every `self.name = value`. It
# looks at the value's type and files it:
#
# | you assign | filed in | reported by |
# |---|---|---|
# | an `nn.Parameter` | `self._parameters` | `parameters()`, `named_parameters()` |
# | an `nn.Module` | `self._modules` | `children()`, `modules()`, `named_modules()` |
# | a tensor through `register_buffer(name, t)` | `self._buffers` | `buffers()`, `named_buffers()` |
# | anything else (ints, lists, plain tensors) | the ordinary `__dict__` | nothing |
#
# The walking methods recurse through `_modules`, prefixing names with the path (`hidden.weight`).

# %%
class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 8)                 # a Module: registered as a submodule
        self.out = nn.Linear(8, 3)
        self.temperature = nn.Parameter(torch.ones(1))  # a Parameter: registered
        self.name = "two-layer"                        # anything else: a normal attribute

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x))) / self.temperature


net = TwoLayer()
print("_modules:   ", list(net._modules))
print("_parameters:", list(net._parameters), "(only its own; the Linear layers hold theirs)")
print("'name' is in __dict__:", "name" in net.__dict__)
print()
for name, p in net.named_parameters():
    print(f"parameter {name:14s} shape {str(tuple(p.shape)):8s} requires_grad={p.requires_grad}")
print()
for name, m in net.named_modules():
    print(f"module {name or '(the root)':11s} {type(m).__name__}")

# %% [markdown]
# Counting parameters is a sum over `parameters()`. Check it against the arithmetic once: a
# `Linear(a, b)` holds `a·b` weights and `b` biases. Counting only those with `requires_grad` gives the
# *trainable* count, which differs once you freeze something (section 6).

# %%
total = sum(p.numel() for p in net.parameters())
trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
by_hand = (4 * 8 + 8) + (8 * 3 + 3) + 1
print(f"parameters: {total} (by hand: {by_hand}), trainable: {trainable}")

# %% [markdown]
# Because registration happens inside `nn.Module.__setattr__`, the module's registries must exist
# before anything is *registered* — that is what `super().__init__()` creates. Forget it, or call it
# too late, and the first assignment of a submodule or a `Parameter` fails. A plain value (`self.x = 3`)
# needs no registry, so it slips through — until the first submodule:

# %%
class Forgetful(nn.Module):
    def __init__(self, first):
        self.size = 3                  # a plain value: no registry needed, no error
        if first == "a Linear":
            self.layer = nn.Linear(2, 2)   # a submodule, before super().__init__()
        else:
            self.scale = nn.Parameter(torch.ones(1))   # a Parameter, before super().__init__()
        super().__init__()


for first in ("a Linear", "a Parameter"):
    try:
        Forgetful(first)
    except AttributeError as error:
        print(f"assigning {first} first -> AttributeError: {error}")

# %% [markdown]
# **Predict, then run.** How many numbers does `parameters()` hold for
# `nn.Sequential(nn.Linear(10, 5), nn.ReLU(), nn.Linear(5, 1))`? Write an `int` in place of `...`.

# %%
guess = ...   # your prediction: an int
probe = nn.Sequential(nn.Linear(10, 5), nn.ReLU(), nn.Linear(5, 1))
predict("03.sequential_parameter_count", guess, sum(p.numel() for p in probe.parameters()),
        why="Linear(10, 5) holds 10·5 weights + 5 biases = 55, Linear(5, 1) holds 5 + 1 = 6, ReLU holds none")

# %% [markdown]
# ## 2. Trap: layers kept in a Python list
#
# A common way to build a stack of variable depth is a list comprehension. A Python `list` is not
# an `nn.Module`, so `__setattr__` files it as a normal attribute, and the layers inside are
# **invisible**: not in `parameters()`, so the optimizer never updates them. `forward` still uses
# them, so the model runs and the loss even goes down a little — the registered output layer learns
# on top of frozen random features.
#
# The habit that catches this early: **overfit one small batch first.** A healthy model drives the
# loss on 128 fixed points close to zero within a few hundred steps; a broken one cannot.

# %%
seed_everything(0)
x_fit = torch.rand(128, 1) * 4 - 2          # data made on the cpu with a fixed seed, then moved
y_fit = torch.sin(3 * x_fit)
x_fit, y_fit = x_fit.to(device), y_fit.to(device)


class Stack(nn.Module):
    """Hidden layers kept in `container`, then a registered output layer."""

    def __init__(self, container, width=32):
        super().__init__()
        # device= makes the layers on the device directly; .to(device) would not reach a plain list
        self.hidden = container([nn.Linear(1, width, device=device), nn.Linear(width, width, device=device)])
        self.head = nn.Linear(width, 1, device=device)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.head(x)


def overfit(model, steps=200, lr=1e-2):
    """Fit (x_fit, y_fit) with Adam; return the loss of every step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()                 # zero_grad -> forward -> loss -> backward -> step
        loss = F.mse_loss(model(x_fit), y_fit)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


curves, ends = {}, {}
for container in (list, nn.ModuleList):
    seed_everything(1)                        # both models start from the same random weights
    model = Stack(container)
    start = model.hidden[0].weight.detach().clone()
    print(f"--- hidden layers in a {container.__name__} ---")
    print(model)
    print("parameters() count:", sum(p.numel() for p in model.parameters()))
    curves[f"hidden layers in a {container.__name__}"] = losses = overfit(model)
    ends[container] = {"loss": losses[-1], "moved": (model.hidden[0].weight - start).abs().max().item(),
                       "grad norm": model.hidden[0].weight.grad.norm().item()}
    print()

# The ModuleList model's last steps are Adam's near a minimum: there, float32 rounding that differs between
# CPUs grows into another second digit of the loss and of the gradient (0.027 on one Xeon, 0.031 on
# another), so those two are stated as the bounds they keep on every machine.
stuck, fitted = ends[list], ends[nn.ModuleList]
print(f"plain list : final loss {stuck['loss']:.2f} | hidden[0].weight moved by {stuck['moved']:g} | "
      f"hidden[0].weight.grad norm {stuck['grad norm']:.0f}")
print(f"ModuleList : final loss {under(fitted['loss'], 0.01)} | hidden[0].weight moved by "
      f"{over(fitted['moved'], 0.1)} | hidden[0].weight.grad norm {under(fitted['grad norm'], 0.1)}")
plot_curves(curves, ylabel="MSE loss on one batch", logy=True, title="Overfitting one batch")

# %% [markdown]
# The plain-list model prints without its hidden layers, counts 33 parameters instead of 1153, and its
# hidden weights moved by exactly 0. Look at the gradient norm too: autograd *did* compute gradients
# for the hidden layers every step (they are ordinary `requires_grad` tensors), but
# `optimizer.zero_grad()` only clears the parameters the optimizer knows, so those gradients piled up
# over 200 steps and were never used: over 300 times the norm of the working model's last step (31 against under 0.1).
#
# The fix is a container that is itself a module: `nn.ModuleList` (indexable, you write the loop),
# `nn.Sequential` (it also runs the layers in order) or `nn.ModuleDict` (by name). A single tensor
# that should be learned goes in an `nn.Parameter`; several in an `nn.ParameterList`.
#
# **Predict, then run.** The module below keeps two `Linear(3, 3)` layers in an `nn.ModuleList` and two
# more in a plain list. How many parameter *tensors* (not numbers) does `named_parameters()` list under
# each attribute? Answer as a pair: `(under listed, under plain)`.

# %%
class TwoContainers(nn.Module):
    def __init__(self):
        super().__init__()
        self.listed = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])
        self.plain = [nn.Linear(3, 3), nn.Linear(3, 3)]


names = [name for name, _ in TwoContainers().named_parameters()]
guess = ...   # your prediction: (under listed, under plain)
predict("03.modulelist_vs_list", guess,
        (sum(n.startswith("listed.") for n in names), sum(n.startswith("plain.") for n in names)),
        why="each registered Linear adds two tensors (weight, bias); a plain list registers nothing")

# %% [markdown]
# ## 3. Parameters, buffers and plain tensor attributes
#
# A module holds three kinds of tensors:
#
# * a **Parameter** — learned: the optimizer updates it;
# * a **buffer** — state that is not learned, such as a running average or a fixed normalisation
#   constant. Registered with `self.register_buffer(name, tensor)`. A buffer registered with
#   `persistent=False` is left out of `state_dict()`: use that for things you can recompute (a mask,
#   a lookup table), so checkpoints stay small;
# * a **plain tensor attribute** — `self.t = torch.tensor(...)`. Not registered at all.
#
# **Predict, then run.** `model.to(torch.float64)` converts a module's tensors to double precision — but
# which ones? Below, a module holds a float Parameter, a float buffer, an integer (int64) buffer and a plain
# float tensor. Which of the four names hold float64 tensors after the call? Answer with a set of names.

# %%
class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2))
        self.register_buffer("stats", torch.zeros(2))
        self.register_buffer("count", torch.tensor(0))      # int64, like BatchNorm's num_batches_tracked
        self.plain = torch.zeros(2)


holder = Holder().to(torch.float64)
guess = ...   # your prediction: a set of names, e.g. {"weight"}
predict("03.float64_names", guess,
        {name for name in ("weight", "stats", "count", "plain") if getattr(holder, name).dtype == torch.float64},
        why="a dtype move converts the floating-point parameters and buffers only: the int64 counter stays "
            "int64, and the plain tensor is not reached at all")

# %% [markdown]
# ### Trap: a plain tensor is left behind by `.to()` and missing from `state_dict()`
#
# Here is an input normaliser whose per-feature mean was stored as a plain tensor (its std, for
# contrast, as a buffer). To show a device move on any machine, we use the `meta` device: a device
# with no memory behind it, whose tensors have a shape and dtype but no values. It stands in for a
# GPU: on a CUDA machine `.to("cuda")` leaves the plain tensor behind in exactly the same way.

# %%
class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean                      # plain attribute: the trap
        self.register_buffer("std", std)      # buffer
        self.gain = nn.Parameter(torch.ones(len(mean)))

    def forward(self, x):
        return (x - self.mean) / self.std * self.gain


norm = Standardize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 2.0]))
norm.to("meta")
print("after .to('meta'):  gain on", norm.gain.device, "| std on", norm.std.device, "| mean on", norm.mean.device)
try:
    norm(torch.zeros(2, 3, device="meta"))
except RuntimeError as error:
    print("forward raised RuntimeError:", error)

norm = Standardize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 2.0])).double()
print("after .double():    gain", norm.gain.dtype, "| std", norm.std.dtype, "| mean", norm.mean.dtype)

# %% [markdown]
# The second half of the trap is quieter. A checkpoint is a `state_dict()`, and the plain tensor is
# not in it. Save the normaliser, load it into a new one made with placeholder statistics (as you
# would when restoring a model), and the outputs differ — with no error anywhere.

# %%
trained = Standardize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 2.0]))
print("state_dict keys:", list(trained.state_dict()))
restored = Standardize(torch.zeros(3), torch.ones(3))   # placeholders, to be overwritten by the load
restored.load_state_dict(trained.state_dict())
x = torch.tensor([[1.0, 2.0, 3.0]])
print("trained :", trained(x).tolist())
print("restored:", restored(x).tolist(), "<- mean was never saved, so it is still the placeholder")

# %% [markdown]
# The fix is one line: `self.register_buffer("mean", mean)`. Then it moves, converts and is saved:

# %%
class StandardizeFixed(Standardize):
    def __init__(self, mean, std):
        super().__init__(mean, std)
        del self.mean                         # drop the plain attribute ...
        self.register_buffer("mean", mean)    # ... and register the same tensor as a buffer


fixed = StandardizeFixed(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 2.0]))
restored = StandardizeFixed(torch.zeros(3), torch.ones(3))
restored.load_state_dict(fixed.state_dict())
print("state_dict keys:", list(fixed.state_dict()))
# The same values through the same subtraction, division and product, each rounded exactly as IEEE 754 prescribes:
# equal to the last bit on any machine.
torch.testing.assert_close(restored(x), fixed(x), rtol=0, atol=0)
print("restored output equals the original:", restored(x).tolist())
print("on meta, output is on", fixed.to("meta")(torch.zeros(2, 3, device="meta")).device)

# %% [markdown]
# ### Measured: which state follows what
#
# One module holding every kind of state side by side. Each cell of the table below is measured:
# `.to('meta')` and `.double()` are applied and the tensor's device and dtype read back; the keys of
# `state_dict()` are searched; the optimizer is asked which tensors it holds.

# %%
class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2))
        self.register_buffer("stats", torch.zeros(2))
        self.register_buffer("mask", torch.zeros(2), persistent=False)
        self.plain = torch.zeros(2)
        self.blocks = nn.ModuleList([nn.Linear(2, 2)])
        self.pylist = [nn.Linear(2, 2)]


# kind of state -> (how to reach the tensor, the state_dict key it would have)
kinds = {
    "`nn.Parameter` attribute": (lambda z: z.weight, "weight"),
    "`register_buffer(...)`": (lambda z: z.stats, "stats"),
    "`register_buffer(..., persistent=False)`": (lambda z: z.mask, "mask"),
    "plain tensor attribute": (lambda z: z.plain, "plain"),
    "layer in an `nn.ModuleList` (its weight)": (lambda z: z.blocks[0].weight, "blocks.0.weight"),
    "layer in a Python list (its weight)": (lambda z: z.pylist[0].weight, "pylist.0.weight"),
}


def yes_no(flag):
    return "yes" if flag else "**no**"


def state_table(kinds, make):
    moved, converted, plain_model = make().to("meta"), make().double(), make()
    keys = plain_model.state_dict().keys()
    optimizer = torch.optim.SGD(plain_model.parameters(), lr=0.1)
    seen = {id(p) for group in optimizer.param_groups for p in group["params"]}
    rows = ["| kind of state | follows `.to('meta')` | follows `.double()` | in `state_dict()` | seen by the optimizer |",
            "|---|---|---|---|---|"]
    for kind, (get, key) in kinds.items():
        rows.append(f"| {kind} | {yes_no(get(moved).device.type == 'meta')} | {yes_no(get(converted).dtype == torch.float64)} "
                    f"| {yes_no(key in keys)} | {yes_no(id(get(plain_model)) in seen)} |")
    return "\n".join(rows)


display(Markdown(state_table(kinds, Zoo)))

# %% [markdown]
# Read it by rows: a Parameter does everything; a buffer does everything except meet the optimizer;
# a non-persistent buffer also stays out of checkpoints; a plain tensor, and anything inside a plain
# list, does nothing at all.
#
# ## 4. `train()` and `eval()`
#
# Every module carries a flag, `self.training`. `model.train()` sets it to `True` on the module and on
# every submodule; `model.eval()` (the same as `model.train(False)`) sets it to `False`. The flag
# changes nothing by itself — it is read by the layers whose behaviour differs:
#
# * **Dropout** zeroes each value with probability `p` in training and scales the survivors by
#   `1 / (1 - p)`, so the expected value is unchanged; in eval mode it passes values through.
# * **BatchNorm** normalises with the current batch's mean and variance in training and updates
#   running averages of them (its buffers); in eval mode it normalises with those running averages.

# %%
drop = nn.Dropout(p=0.5)
ones = torch.ones(8, device=device)
drop.train()
print("train, call 1:", drop(ones))
print("train, call 2:", drop(ones), "(a new random mask each call; survivors scaled by 1/(1-p) = 2)")
drop.eval()
print("eval:         ", drop(ones))

# %% [markdown]
# **Predict, then run.** A model is put in training mode, then only its Dropout layer is put in eval
# mode. What are `(model.training, model[0].training, model[1].training)` afterwards?

# %%
probe = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
probe.train()
probe[1].eval()
guess = ...   # your prediction: three booleans
predict("03.training_flags", guess, (probe.training, probe[0].training, probe[1].training),
        why="eval() sets the flag on the module it is called on and on that module's children, never on its parent")

# %% [markdown]
# BatchNorm's running statistics are buffers (so they move with `.to()` and are saved in
# checkpoints). Each training-mode call blends the batch statistics into them with weight `momentum`
# (0.1 by default): `running = (1 - momentum) · running + momentum · batch_value`, where the variance
# that goes into `running_var` is the *unbiased* one (divided by `N - 1`). `num_batches_tracked`
# counts the calls.

# %%
seed_everything(0)
bn = nn.BatchNorm1d(3).to(device)
print("buffers:", [name for name, _ in bn.named_buffers()])
batch = (torch.randn(16, 3) * 2 + 5).to(device)
bn.train()
bn(batch)
# BatchNorm computes the batch's mean and variance in a kernel of its own, adding the 16 values in another
# order than Tensor.mean and Tensor.var: the two agree to a few float32 steps (1e-6 of the value), not bit for bit.
torch.testing.assert_close(bn.running_mean, 0.9 * torch.zeros(3, device=device) + 0.1 * batch.mean(0),
                           rtol=1e-5, atol=1e-6)
torch.testing.assert_close(bn.running_var, 0.9 * torch.ones(3, device=device) + 0.1 * batch.var(0, unbiased=True),
                           rtol=1e-5, atol=1e-6)
print("running_mean", bn.running_mean, "| running_var", bn.running_var, "| num_batches_tracked", bn.num_batches_tracked.item())

bn.eval()
print("eval mode normalises one sample with the running statistics:", bn(batch[:1]).detach())
bn.train()
try:
    bn(batch[:1])
except ValueError as error:
    print("train mode, one sample -> ValueError:", error)

# %% [markdown]
# ### Trap: evaluating in training mode
#
# A small classifier with BatchNorm and Dropout learns to tell whether a 2-D point lies inside a
# circle. After training we measure its test accuracy the right way (`model.eval()` and
# `torch.no_grad()`), then the way that forgets `eval()`, with the test set fed in batches of
# different sizes.

# %%
def circle_data(n):
    points = torch.randn(n, 2)
    labels = (points.norm(dim=1) < 1.1).long()
    return points.to(device), labels.to(device)


seed_everything(0)
x_train, y_train = circle_data(512)
x_test, y_test = circle_data(512)


def make_classifier(width=64):
    return nn.Sequential(nn.Linear(2, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(width, 2)).to(device)


def train_classifier(model, epochs=20, batch_size=64, lr=0.1):
    # SGD with momentum, not Adam: Adam's steps grow the last-bit differences between CPUs, so after these
    # 160 steps another CPU's weights differed by 15% and its test accuracy in the third digit; SGD keeps
    # them within 1e-6, and every accuracy below prints the same on any machine.
    optimizer = torch.optim.SGD((p for p in model.parameters() if p.requires_grad), lr=lr, momentum=0.9)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x_train)).to(device)
        for start in range(0, len(x_train), batch_size):
            rows = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[rows]), y_train[rows])
            loss.backward()
            optimizer.step()
    return model


def accuracy(model, batch_size=512):
    """Test accuracy, in whatever mode the model is in now."""
    with torch.no_grad():
        correct = sum((model(x_test[s:s + batch_size]).argmax(1) == y_test[s:s + batch_size]).sum().item()
                      for s in range(0, len(x_test), batch_size))
    return correct / len(x_test)


seed_everything(0)
classifier = train_classifier(make_classifier())

classifier.eval()
scores = {"eval()": accuracy(classifier)}
for batch_size in (512, 32, 4):
    careless = copy.deepcopy(classifier).train()      # a copy, so the real model is not disturbed
    seed_everything(0)
    scores[f"train(), batches of {batch_size}"] = accuracy(careless, batch_size)
for name, score in scores.items():
    print(f"{name:22s} test accuracy {score:.3f}")
plot_bars(scores, ylabel="test accuracy", title="The same weights, evaluated in each mode", fmt="{:.3f}")

# %% [markdown]
# The weights are identical in every bar. In eval mode the accuracy does not depend on how the test set
# is batched. In training mode Dropout throws away half the hidden units of every prediction, and
# BatchNorm normalises each test batch by its *own* statistics, so a prediction depends on which other
# points share its batch — the smaller the batch, the noisier those statistics, and the worse the score.
#
# There is a second, silent cost: in training mode BatchNorm also *updates* its running statistics, so
# evaluating this way writes the test data into the model.

# %%
careless = copy.deepcopy(classifier).train()
before = careless[1].running_mean.clone()
accuracy(careless, 32)
print("largest change in running_mean after one evaluation in train mode:",
      f"{(careless[1].running_mean - before).abs().max().item():.3f}")
print("num_batches_tracked:", classifier[1].num_batches_tracked.item(), "->", careless[1].num_batches_tracked.item())

# %% [markdown]
# The habit: `model.eval()` plus `torch.no_grad()` (or `torch.inference_mode()`) for every evaluation,
# and `model.train()` at the top of every training epoch — an evaluation in the middle of training
# leaves the model in eval mode otherwise. A helper that restores the mode it found avoids both:

# %%
def evaluate(model, batch_size=512):
    was_training = model.training
    model.eval()
    try:
        return accuracy(model, batch_size)
    finally:
        model.train(was_training)


classifier.train()
print(f"accuracy {evaluate(classifier, 4):.3f} with batches of 4; mode afterwards: training={classifier.training}")

# %% [markdown]
# ### Trap: `eval()` does not switch off autograd
#
# `eval()` and `torch.no_grad()` sound alike, and the habit above uses both. They are two different
# switches.
#
# **Predict, then run.** The classifier is in eval mode and no `no_grad()` is around the call. Does
# its output have `requires_grad=True`?

# %%
classifier.eval()
output = classifier(x_test)
guess = ...   # your prediction: True or False
predict("03.eval_output_requires_grad", guess, output.requires_grad,
        why="eval() only changes how Dropout and BatchNorm compute; autograd still records every operation")
print("output.grad_fn:", type(output.grad_fn).__name__)

# %% [markdown]
# A recorded graph is not free: for the backward pass, autograd keeps tensors that the forward pass
# computed (a layer's input, for instance) alive as long as the output exists.
# Chapter 02's `SavedTensorMeter` (from `coursekit.meters`) counts what autograd saves. Below, the same
# trained classifier runs on the 512 test points in the four combinations of the two switches; every
# cell of the table is measured (the size counts the memory of saved tensors other than the model's own
# parameters and buffers, which exist anyway).

# %%
rows = ["| mode | autograd | two calls give the same output | BatchNorm's running stats updated | "
        "`output.requires_grad` | `output.grad_fn` | saved for backward |",
        "|---|---|---|---|---|---|---|"]
for mode in ("train()", "eval()"):
    for recording in (True, False):
        model = copy.deepcopy(classifier).train(mode == "train()")
        before = model[1].running_mean.clone()
        seed_everything(0)
        with contextlib.nullcontext() if recording else torch.no_grad():
            with SavedTensorMeter(exclude=model.state_dict().values()) as meter:
                first = model(x_test)
            second = model(x_test)
        saved, kib = meter.saved_tensors(), meter.held_kib()   # counted while `first` keeps its graph alive
        rows.append(f"| `{mode}` | {'on (the default)' if recording else 'off: `torch.no_grad()`'} "
                    f"| {'yes' if torch.equal(first, second) else 'no'} "
                    f"| {'no' if torch.equal(model[1].running_mean, before) else 'yes'} | {first.requires_grad} "
                    f"| {type(first.grad_fn).__name__ if first.grad_fn else None} "
                    f"| {len(saved)} tensors, {kib:.0f} KiB |")
display(Markdown("\n".join(rows)))

# %% [markdown]
# Read the table by columns. The mode decides what the layers *compute*: in `train()` two calls differ
# (Dropout draws a new mask) and BatchNorm updates its running statistics, with or without `no_grad()`.
# `no_grad()` decides what autograd *records*: with it the output has no `grad_fn` and nothing is saved;
# without it, even in `eval()`, the output carries a `grad_fn` and autograd saves tensors for a backward
# pass that never comes.
#
# Here that is 260 KiB in eval mode, freed with the output. It grows with the batch and the model, and it
# adds up when the outputs are kept: a validation loop that collects `model(x)` for every batch without
# `no_grad()` keeps every batch's saved tensors alive until the list is dropped. Evaluate with both:
# `model.eval()` for the layers, `torch.no_grad()` for autograd (or `torch.inference_mode()`, a stricter
# version whose outputs can never be used in an autograd graph later).

# %% [markdown]
# ## 5. `state_dict` and `load_state_dict`
#
# `state_dict()` is an ordered dict from dotted names to tensors: every parameter and every persistent
# buffer, nothing else (no optimizer, no code). Its tensors are *detached views* of the live ones —
# no copy is made. `load_state_dict` copies values back into the existing tensors, matching by name.
#
# **Predict, then run.** Which keys does the `state_dict()` of
# `nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.BatchNorm1d(4))` hold? Answer with a set of strings.

# %%
probe = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.BatchNorm1d(4))
guess = ...   # your prediction: a set of keys, e.g. {"0.weight"}
predict("03.state_dict_keys", guess, set(probe.state_dict()),
        why="keys are '<index in the Sequential>.<name>'; the ReLU (index 1) holds nothing, and BatchNorm's "
            "three buffers are saved beside its weight and bias")

# %% [markdown]
# The trained classifier's `state_dict()`, with each tensor's shape and dtype, and a round trip through
# `torch.save` and `torch.load`:

# %%
for key, value in classifier.state_dict().items():
    print(f"{key:22s} {str(tuple(value.shape)):8s} {value.dtype}")

buffer = io.BytesIO()                          # a file in memory; a path works the same way
torch.save(classifier.state_dict(), buffer)
buffer.seek(0)
state = torch.load(buffer, weights_only=True)  # weights_only: load tensors, never run pickled code
twin = make_classifier()
twin.load_state_dict(state)
classifier.eval()
twin.eval()
# The same weights through the same operations, but held in tensors of their own: MKL, cuBLAS and cuDNN may pick
# a kernel by where a tensor lies in memory, so the outputs agree to float32 rounding (1e-5), not always bit for bit.
torch.testing.assert_close(twin(x_test), classifier(x_test), rtol=1e-5, atol=1e-6)
print("the reloaded model gives the same outputs; test accuracy", f"{evaluate(twin):.3f}")

# %% [markdown]
# ### Trap: "keep the best weights" keeps a live view
#
# Because the tensors in a `state_dict()` share memory with the parameters, storing one as "the best so
# far" stores nothing: it changes with every later optimizer step.

# %%
seed_everything(0)
model = make_classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
best = model.state_dict()                                              # the trap
best_copy = {k: v.detach().clone() for k, v in model.state_dict().items()}  # the fix (or copy.deepcopy)
first_weight = best_copy["0.weight"].clone()

optimizer.zero_grad()
F.cross_entropy(model(x_train), y_train).backward()
optimizer.step()
print("after one more step, 'best' still equals the saved weights? ",
      torch.equal(best["0.weight"], first_weight))
print("after one more step, the cloned copy still equals them?     ",
      torch.equal(best_copy["0.weight"], first_weight))

# %% [markdown]
# ### Missing and unexpected keys
#
# `load_state_dict` is **strict** by default: every key of the model must be in the checkpoint and
# every key of the checkpoint in the model. A frequent mismatch is a prefix: a model wrapped in
# `DistributedDataParallel` saves its keys as `module.0.weight`, a compiled one as `_orig_mod.0.weight`.

# %%
checkpoint = {"module." + key: value for key, value in classifier.state_dict().items()}
fresh = make_classifier()
try:
    fresh.load_state_dict(checkpoint)
except RuntimeError as error:
    lines = str(error).splitlines()
    print(lines[0])
    for line in lines[1:]:
        print("   ", line.strip()[:100] + " ...")

# %% [markdown]
# `strict=False` turns the error into a return value with the two lists. Used to "make the error go
# away", it loads **nothing** here and leaves a random model — always read what it returns.
#
# (8 missing keys, not 9: this hand-made dict lacks the version metadata that a real `state_dict()`
# carries, and BatchNorm treats such a checkpoint as older than its `num_batches_tracked` buffer and
# fills that key in itself.)

# %%
result = fresh.load_state_dict(checkpoint, strict=False)
print(f"missing keys: {len(result.missing_keys)}, unexpected keys: {len(result.unexpected_keys)}")
print(f"test accuracy after the 'successful' load: {evaluate(fresh):.3f} (a random model)")

nn.modules.utils.consume_prefix_in_state_dict_if_present(checkpoint, "module.")   # renames in place
fresh.load_state_dict(checkpoint)          # strict again, and it passes
print(f"after removing the prefix: test accuracy {evaluate(fresh):.3f}")

# %% [markdown]
# `strict=False` has honest uses — loading a pretrained body into a model with a new head — but it
# never forgives a **shape** mismatch; that still raises:

# %%
wider = make_classifier(width=128)
try:
    wider.load_state_dict(classifier.state_dict(), strict=False)
except RuntimeError as error:
    print(str(error).splitlines()[1].strip())

# %% [markdown]
# ## 6. `apply()` for initialisation, and freezing
#
# `model.apply(fn)` calls `fn` on every submodule — children first, the root last — which is the usual
# way to (re)initialise a model by layer type. `nn.init` functions change tensors in place without
# recording autograd history.

# %%
visited = []
classifier.apply(lambda m: visited.append(type(m).__name__))
print("apply visits:", " -> ".join(visited))


def init_small_normal(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.01)
        nn.init.zeros_(module.bias)


seed_everything(0)
model = make_classifier().apply(init_small_normal)   # apply returns the model, so it chains
print(f"first layer weight std: {model[0].weight.std().item():.4f}, bias all zero: {bool((model[0].bias == 0).all())}")

# %% [markdown]
# **Freezing** a part of a model means its parameters get no gradients and no updates:
# `part.requires_grad_(False)`, then give the optimizer only what still requires grad. Here the first
# three layers (Linear, BatchNorm, ReLU) of a trained classifier are frozen and only the rest trains.
#
# ### Trap: frozen weights, moving statistics
#
# `requires_grad_(False)` freezes *parameters*. BatchNorm's running statistics are buffers, updated by
# the forward pass whenever the layer is in training mode — so they keep drifting in a "frozen" body.

# %%
def frozen_fine_tune(model, body_in_eval):
    """Freeze model[:3], train the rest for 20 steps; return the largest change of each body tensor."""
    body = model[:3]                          # slicing an nn.Sequential gives an nn.Sequential
    body.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    print(f"body in eval mode: {body_in_eval!s:5s} | trainable parameters: "
          f"{sum(p.numel() for p in trainable)} of {sum(p.numel() for p in model.parameters())}")
    snapshot = {k: v.clone() for k, v in body.state_dict().items()}
    optimizer = torch.optim.Adam(trainable, lr=1e-2)
    model.train()
    if body_in_eval:
        body.eval()                           # the fix: after model.train(), put the frozen part back in eval
    for _ in range(20):
        optimizer.zero_grad()
        F.cross_entropy(model(x_train[:64] * 3), y_train[:64]).backward()  # new data: 3x the spread
        optimizer.step()
    return {k: (v - snapshot[k]).abs().max().item() for k, v in body.state_dict().items() if v.is_floating_point()}


for body_in_eval in (False, True):
    changes = frozen_fine_tune(copy.deepcopy(classifier), body_in_eval)
    print("    largest change: " + ", ".join(f"{k} {v:.3f}" for k, v in changes.items()))

# %% [markdown]
# The parameters (`0.weight`, `0.bias`, `1.weight`, `1.bias`) did not move in either run; the running
# statistics did, until the body was put in eval mode.
#
# ## 7. Forward hooks: looking at activations
#
# `module.register_forward_hook(fn)` makes the module call `fn(module, inputs, output)` after every
# forward pass, without touching the model's code. It returns a **handle**; `handle.remove()` takes the
# hook off again. The classic use is to record activations.
#
# Below, a deep `tanh` network (five `Linear` + `Tanh` layers of width 128, then a `Linear` to one output)
# is initialised three ways with `apply()`, and a hook on every `Tanh` records what it outputs for the
# same random input.

# %%
def deep_tanh(depth=5, width=128):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(width, 1)).to(device)


def init_with(weight_init):
    def init(module):
        if isinstance(module, nn.Linear):
            weight_init(module.weight)
            nn.init.zeros_(module.bias)
    return init


inits = {
    "N(0, 1)": init_with(lambda w: nn.init.normal_(w, std=1.0)),
    "PyTorch default": None,                  # nn.Linear's own reset_parameters
    "Xavier, tanh gain": init_with(lambda w: nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("tanh"))),
}
seed_everything(0)
x_deep = torch.randn(256, 128).to(device)
deep = deep_tanh()
default_state = copy.deepcopy(deep.state_dict())

captured = {}                                 # layer name -> list of recorded outputs


def record(module, inputs, output):
    captured.setdefault(module.layer_name, []).append(output.detach().cpu())   # detach: keep no graph


handles = []
tanh_layers = [module for module in deep.modules() if isinstance(module, nn.Tanh)]
for number, module in enumerate(tanh_layers, start=1):
    module.layer_name = f"layer {number}"     # a plain attribute is fine for a label
    handles.append(module.register_forward_hook(record))

activations = {}
for init_name, init in inits.items():
    deep.load_state_dict(default_state)
    if init is not None:
        seed_everything(0)
        deep.apply(init)
    captured.clear()
    with torch.no_grad():
        deep(x_deep)
    activations[init_name] = {name: outputs[-1] for name, outputs in captured.items()}
    print(f"{init_name:18s} std per layer: " + "  ".join(f"{a.std().item():.3f}" for a in activations[init_name].values())
          + " | saturated (|a| > 0.99): " + "  ".join(f"{(a.abs() > 0.99).float().mean().item():.0%}"
                                                      for a in activations[init_name].values()))

# %%
for init_name, title in (("N(0, 1)", "weights drawn from N(0, 1): saturated"),
                         ("PyTorch default", "PyTorch's default init: shrinking layer by layer"),
                         ("Xavier, tanh gain", "Xavier init with tanh gain: stable")):
    plot_histograms(activations[init_name], title=f"tanh outputs (layer 1 = next to the input), {title}",
                    xlabel="tanh output", sharex=True)

# %% [markdown]
# With weights of standard deviation 1, each `Linear` multiplies the spread by about `sqrt(128) ≈ 11`,
# so every `tanh` is pushed to ±1 (a U shape: most units are saturated, and their gradient is near
# zero). PyTorch's default init is too small for a deep `tanh` stack: the spread shrinks layer after
# layer (std 0.461 in layer 1, 0.077 in layer 5). Xavier's scale with the `tanh` gain keeps it steady.
#
# ### Kaiming init, made for ReLU
#
# Xavier's scale (weight variance `2 / (fan_in + fan_out)`, here `1 / 128`) keeps the spread of a layer's
# output equal to that of its input — as long as the activation keeps it too. `tanh` nearly does around
# zero, and the gain makes up for the rest. **ReLU does not**: it sets the negative half of its inputs to
# zero, which halves their mean square. **Kaiming** (He) init doubles the variance to `2 / fan_in` to make
# up for exactly that. Below, the same recording hooks on a ReLU stack (every `Tanh` replaced by `ReLU`),
# initialised three ways: PyTorch's default, Xavier (gain 1, as for a linear activation) and Kaiming for
# ReLU.

# %%
def deep_relu(depth=5, width=128):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1)).to(device)


relu_inits = {
    "PyTorch default": None,
    "Xavier (gain 1)": init_with(nn.init.xavier_uniform_),
    "Kaiming (for ReLU)": init_with(lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu")),
}
relu_spread = {}
for init_name, init in relu_inits.items():
    seed_everything(0)
    relu_net = deep_relu()
    if init is not None:
        relu_net.apply(init)
    relu_layers = [module for module in relu_net.modules() if isinstance(module, nn.ReLU)]
    relu_handles = []
    for number, module in enumerate(relu_layers, start=1):
        module.layer_name = f"relu layer {number}"
        relu_handles.append(module.register_forward_hook(record))
    try:
        captured.clear()
        with torch.no_grad():
            relu_net(x_deep)
    finally:
        for handle in relu_handles:
            handle.remove()
    stds = [outputs[-1].std().item() for outputs in captured.values()]
    relu_spread[init_name] = (list(range(1, len(stds) + 1)), stds)
    print(f"{init_name:19s} std of the ReLU outputs per layer: " + "  ".join(f"{v:.3f}" for v in stds))
captured.clear()
plot_curves(relu_spread, xlabel="ReLU layer (1 = next to the input)", ylabel="std of the ReLU outputs", logy=True,
            title="A 5-layer ReLU stack, three initialisations")

# %% [markdown]
# Kaiming keeps the spread (0.833 in layer 1, 0.778 in layer 5: only the noise of a finite width).
# Xavier loses about a factor `sqrt(2) ≈ 1.4` per layer (0.583 to 0.170), the factor ReLU takes away;
# PyTorch's default, smaller still, loses more (0.341 to 0.032). The rule: Xavier for `tanh` and
# `sigmoid`, Kaiming for ReLU and its relatives (`nonlinearity="leaky_relu"` with the slope as `a`).
#
# ### All ones: units that never become different
#
# Why random weights at all? Give every weight the same value — all ones — and every hidden unit of a
# layer computes the same function of the same input, so all give the same output. In the backward pass
# each receives the same gradient, so each gets the same update, and they are still equal after the
# step: forever. A layer of 8 units then behaves like one unit. Below, a small circle classifier
# (`Linear(2, 8)`, `Tanh`, `Linear(8, 2)`) trains for 100 full-batch SGD steps from all ones (biases zero)
# and from PyTorch's default init:

# %%
def small_classifier(init):
    seed_everything(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
    if init == "all ones":
        model.apply(init_with(nn.init.ones_))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(100):
        optimizer.zero_grad()
        F.cross_entropy(model(x_train), y_train).backward()
        optimizer.step()
    return model


outside = (y_test == 0).float().mean().item()  # the share of test points outside the circle (label 0)
for init in ("all ones", "PyTorch default"):
    model = small_classifier(init)
    hidden = model[0].weight.detach()         # row i: the two input weights of hidden unit i
    print(f"{init:15s} | hidden units 0 and 1 after 100 steps: {[round(w, 4) for w in hidden[0].tolist()]} "
          f"and {[round(w, 4) for w in hidden[1].tolist()]}")
    print(f"{'':15s} | all 8 units' weights identical: {torch.equal(hidden, hidden[:1].expand_as(hidden))} | "
          f"test accuracy {evaluate(model):.3f} (always answering 'outside': {outside:.3f})")

# %% [markdown]
# After 100 steps the all-ones units are still exactly equal: they moved (the weights are no longer 1),
# but all together. The classifier has one hidden unit's worth of capacity, and its 0.465 is worse than
# the 0.539 of always answering "outside the circle". From the default init the units spread out and the
# classifier reaches 0.969. Any constant init has this problem: random init exists to **break the
# symmetry**, and its scale (Xavier, Kaiming) is chosen to keep the signal's size.
#
# Chapter 06 (mixed precision) comes back to these initialisations: its exercise `gradient_norm_study`
# has you record the total gradient norm, before clipping, at every SGD step of an MLP started from
# Xavier, Kaiming and all-ones weights, and compares them on ReLU and `tanh` networks.
#
# ### Trap: a hook left registered keeps firing
#
# Nothing removes a hook for you. The recorder above is still attached, so every later forward pass —
# here a short training run — keeps appending activations to `captured`, using memory (and time) until
# the hooks are removed.

# %%
deep.load_state_dict(default_state)
captured.clear()
optimizer = torch.optim.SGD(deep.parameters(), lr=1e-3)
y_deep = torch.randn(256, 1).to(device)
deep.train()
for _ in range(50):
    optimizer.zero_grad()
    F.mse_loss(deep(x_deep), y_deep).backward()
    optimizer.step()
kept = sum(t.numel() * t.element_size() for outputs in captured.values() for t in outputs)
print(f"after 50 training steps: {sum(len(v) for v in captured.values())} recorded tensors, {kept / 2**20:.1f} MiB")
print("hooks on the first Tanh:", len(deep[1]._forward_hooks))

for handle in handles:
    handle.remove()
captured.clear()
deep(x_deep)
print("after handle.remove(): hooks on the first Tanh:", len(deep[1]._forward_hooks),
      "| recorded by one more forward:", sum(len(v) for v in captured.values()))

# %% [markdown]
# Keep the handles, and remove them in a `finally:` block (or a context manager) as soon as the
# measurement is done. Note also the `.detach()` in the hook: storing `output` itself would keep every
# step's autograd graph alive.
#
# ### Trap: `model.forward(x)` skips the hooks
#
# Hooks are run by `nn.Module.__call__`, the method behind `model(x)`: it runs the forward pre-hooks,
# then `forward`, then the forward hooks (and sets up full backward hooks). Calling `model.forward(x)`
# yourself runs only `forward`, so that module's hooks are skipped. Below, a counting hook sits on the
# `TwoLayer` model of section 1 and another on its `hidden` layer:

# %%
calls = {"net (the root)": 0, "net.hidden": 0}


def count_call(module, inputs, output):
    calls[module.hook_label] += 1


net.hook_label, net.hidden.hook_label = "net (the root)", "net.hidden"
count_handles = [net.register_forward_hook(count_call), net.hidden.register_forward_hook(count_call)]
try:
    x_small = torch.randn(2, 4)
    for how, run in (("net(x)", lambda: net(x_small)), ("net.forward(x)", lambda: net.forward(x_small))):
        before = dict(calls)
        run()
        print(f"{how:15s} hook calls: " + ", ".join(f"{k} +{calls[k] - before[k]}" for k in calls))
finally:
    for handle in count_handles:
        handle.remove()

# %% [markdown]
# `net.forward(x)` skipped the root's hook, but not `hidden`'s: inside `forward`, `self.hidden(x)` is an
# ordinary call. So a direct `forward` call silently loses exactly the hooks of the module it is called on
# — a recorder like the one above, or the forward pre-hook through which `torch.nn.utils.prune` applies
# its mask — and nothing warns. Always call the module: `model(x)`.
#
# ## 8. Full backward hooks: looking at gradients
#
# `module.register_full_backward_hook(fn)` calls `fn(module, grad_input, grad_output)` during
# `backward()`: the gradients of the loss with respect to the module's inputs and outputs (tuples, one
# entry per tensor). Recording the size of `grad_output` of every `Linear` shows how gradients travel
# back through the three initialisations.
#
# One detail first: the very first layer's input (the data) does not require grad, so there is no
# gradient for it, `grad_input` is `(None,)`, and PyTorch warns. The warning is caught here and
# printed.

# %%
grad_norms = {}


def record_grad(module, grad_input, grad_output):
    grad_norms[module.layer_name] = grad_output[0].norm().item()


handles = []
linear_layers = [module for module in deep.modules() if isinstance(module, nn.Linear)]
for number, module in enumerate(linear_layers, start=1):
    module.layer_name = number                # 1 = next to the input, 6 = the output layer
    handles.append(module.register_full_backward_hook(record_grad))

gradient_curves = {}
try:
    for init_name, init in inits.items():
        deep.load_state_dict(default_state)
        if init is not None:
            seed_everything(0)
            deep.apply(init)
        deep.zero_grad()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            F.mse_loss(deep(x_deep), y_deep).backward()
        layers = sorted(grad_norms)
        gradient_curves[init_name] = (layers, [grad_norms[k] for k in layers])
        print(f"{init_name:18s} |grad of each Linear's output|, layers 1 to 6: "
              + "  ".join(f"{grad_norms[k]:.2e}" for k in layers))
finally:
    for handle in handles:
        handle.remove()
print("warning caught:", str(caught[0].message).split(".")[0])
plot_curves(gradient_curves, xlabel="Linear layer (1 = next to the input, 6 = the output layer)",
            ylabel="gradient norm at its output", logy=True, title="Gradients measured by full backward hooks")

# %% [markdown]
# The same story as the activations, read from the other end (right to left in the plot). With N(0, 1)
# weights the gradient grows about 2.5x per layer on its way back, almost 100x from layer 6 to layer 1 (the
# first layer would get huge updates); with the default init it shrinks about 1.8x per layer, 16x in all
# (the first layers barely learn); with Xavier it stays flat.
#
# ## 9. Clipping the gradient norm
#
# Even a well-initialised model meets a batch now and then whose gradient is far larger than the others —
# a few wrong labels, an outlier input, a loss spike. One plain SGD step with such a gradient can undo
# many steps of progress. `nn.utils.clip_grad_norm_(parameters, max_norm)` guards against it: it computes
# the norm of **all** the gradients taken together (as if they were one long vector), and when that norm
# is above `max_norm` it scales every gradient, in place, by `max_norm / norm`, so the direction stays
# and only the length is cut. It returns the norm it measured **before** clipping, the number worth
# logging. Its place in the loop is between the call that makes the gradients and the one that uses them:
#
# `zero_grad()` → forward → loss → `backward()` → **`clip_grad_norm_`** → `step()`
#
# The data: the 128 points of `sin(3x)` from section 2, with 4 labels replaced by 25, all in the first
# batch of 16 — so every 8th step (once per epoch) sees a batch with a huge loss. A small `tanh` MLP trains
# on it with plain SGD for 160 steps (20 epochs), once without and once with `max_norm=3`, from the same
# initial weights. Each step logs the norm before clipping (the value `clip_grad_norm_` returns), the norm
# after clipping (recomputed from the `.grad`s) and the loss on the **clean** labels.

# %%
y_bad = y_fit.clone()
y_bad[:4] = 25.0                              # four wrong labels, all in the first batch


def small_mlp():
    seed_everything(2)                        # the same initial weights for every run
    return nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)


def grad_norm(model):
    """The norm of all gradients of `model` taken together, as clip_grad_norm_ measures it."""
    return nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None]).item()


def train_sgd(max_norm, steps=160, batch_size=16, lr=0.05):
    model = small_mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    log = {"before": [], "after": [], "clean loss": []}
    for step in range(steps):
        start = step * batch_size % len(x_fit)
        rows = slice(start, start + batch_size)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x_fit[rows]), y_bad[rows])
        loss.backward()
        if max_norm is None:
            total = grad_norm(model)
        else:
            total = nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()   # the norm BEFORE clipping
        log["before"].append(total)
        log["after"].append(grad_norm(model))
        optimizer.step()
        with torch.no_grad():
            log["clean loss"].append(F.mse_loss(model(x_fit), y_fit).item())
    return log


MAX_NORM = 3.0
runs = {"no clipping": train_sgd(None), f"clip_grad_norm_, max_norm={MAX_NORM:g}": train_sgd(MAX_NORM)}
for name, log in runs.items():
    above = [step for step, norm in enumerate(log["before"]) if norm > MAX_NORM]
    on_bad_batch = sum(step % 8 == 0 for step in above)  # the bad batch: steps 0, 8, 16, ...
    print(f"{name}:")
    print(f"    gradient norm from backward(): median {sorted(log['before'])[80]:.2f}, largest {max(log['before']):.1f}, "
          f"above {MAX_NORM:g} in {len(above)} of 160 steps ({on_bad_batch} of them on the bad batch)")
    print(f"    largest norm a step used: {max(log['after']):.2f} | clean loss after the first step (a bad batch): "
          f"{log['clean loss'][0]:.2f}, at the end: {log['clean loss'][-1]:.3f}")

clipped_run = runs[f"clip_grad_norm_, max_norm={MAX_NORM:g}"]
plot_curves({"before clipping (returned by clip_grad_norm_)": clipped_run["before"],
             "after clipping (recomputed)": clipped_run["after"],
             f"max_norm = {MAX_NORM:g}": [MAX_NORM] * len(clipped_run["before"])},
            ylabel="total gradient norm", logy=True, legend_outside=True,
            title=f"One run with clip_grad_norm_(..., max_norm={MAX_NORM:g})")
plot_curves({name: log["clean loss"] for name, log in runs.items()}, ylabel="MSE on the clean labels", logy=True,
            legend_outside=True, title="What clipping changed: the loss on the clean labels after each step")

# %% [markdown]
# In the clipped run the norm before clipping (blue) spikes every 8th step (up to 27.5) — the batch with
# the wrong labels — and those 20 steps are the only ones above 3; after clipping (orange) they are cut to
# exactly 3.00, and every other step is left as it was (the two curves coincide there).
#
# Without clipping, each bad step moves the model with its full gradient (norm up to 26.0): the clean loss
# jumps (to 7.3 at the first step), the following batches then have large gradients too (42 steps above 3,
# not only the 20 bad ones), and the 7 steps before the next bad batch only partly recover: a saw tooth
# that ends at a clean loss of 0.660. With clipping, the bad batch still pulls, but no harder than a
# gradient of norm 3, and the clean loss ends at 0.309.
#
# Clipping is a guard, not a cure: the wrong labels are still in the data. Choose `max_norm` above the
# norms of ordinary steps (here the median is 0.65 and only the bad batch goes above 3) so that it cuts
# only the spikes, and keep logging the returned value: a run that clips nearly every step is telling you
# that `max_norm` or the learning rate is wrong.
#
# ### Trap: clipping in the wrong place
#
# `clip_grad_norm_` changes the `.grad` tensors *as they are when it is called*. Called before
# `backward()`, there is nothing to clip yet; called after `step()`, the step has already used the full
# gradient. Below, one step on the bad batch, from the same weights, with the clip in each place; the size of
# the update is the norm of the change of all parameters together.

# %%
def one_step(clip_at):
    model = small_mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    start = [p.detach().clone() for p in model.parameters()]
    returned = "not called"
    optimizer.zero_grad()
    loss = F.mse_loss(model(x_fit[:16]), y_bad[:16])           # the batch with the wrong labels
    if clip_at == "before backward()":
        returned = f"{nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM).item():.1f}"
    loss.backward()
    if clip_at == "after backward() (right)":
        returned = f"{nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM).item():.1f}"
    optimizer.step()
    if clip_at == "after step()":
        returned = f"{nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM).item():.1f}"
    update = nn.utils.get_total_norm([p.detach() - s for p, s in zip(model.parameters(), start)]).item()
    print(f"clip {clip_at:25s} | clip_grad_norm_ returned {returned:10s} | size of the update {update:.3f}")


for clip_at in ("nowhere", "before backward()", "after step()", "after backward() (right)"):
    one_step(clip_at)

# %% [markdown]
# SGD's update is `lr × gradient`, so an unclipped step here has size `0.05 × 26.0 ≈ 1.30`, and a clipped
# one `0.05 × 3 = 0.15`. Clipping before `backward()` measured a norm of 0 — `zero_grad()` had just set every
# `.grad` to `None` — and then `backward()` wrote the full gradient, which the step used. Clipping after
# `step()` measured the right norm and scaled the gradients, but the parameters had already moved by the
# full amount; the scaled gradients are thrown away by the next `zero_grad()`. Neither mistake raises an
# error, and the second even returns the right norm for your log: only the size of the update shows it.
#
# (With a `GradScaler` for mixed precision, the gradients must be unscaled first — `scaler.unscale_(optimizer)`
# between `backward()` and the clip; chapter 06's exercise `amp_train_step` writes that loop.)
#
# ## Summary
#
# * Assigning an `nn.Parameter` or an `nn.Module` to `self` registers it; so does `register_buffer`.
#   Everything else — plain tensors, Python lists and dicts of layers — is invisible to the module.
#   Call `super().__init__()` first.
# * Layers go in `nn.ModuleList` / `nn.Sequential` / `nn.ModuleDict`. Overfit one batch to catch a
#   model whose layers do not learn.
# * Parameters are learned; buffers are state that follows `.to()` and is saved (unless
#   `persistent=False`); plain tensor attributes follow nothing.
# * `train()`/`eval()` flip `training` on a module and all its submodules (never its parent): Dropout and
#   BatchNorm behave differently, and BatchNorm updates its running buffers only in training.
# * The mode and `no_grad()` are separate switches: the mode changes what Dropout and BatchNorm compute,
#   `no_grad()` stops autograd from recording (and saving tensors). Evaluate with `eval()` + `no_grad()`.
# * `state_dict()` holds views of the live tensors (clone to keep a copy); `load_state_dict` is strict
#   by default — read the missing and unexpected keys instead of switching `strict` off.
# * `apply()` walks every submodule (handy for initialisation); freezing is `requires_grad_(False)` plus
#   `eval()` for layers with running statistics.
# * Initialise for the activation: Xavier for `tanh`, Kaiming for ReLU; never one constant for a whole
#   layer, whose units would stay identical.
# * Forward and full backward hooks observe activations and gradients; keep their handles and remove
#   them. Call `model(x)`, never `model.forward(x)`, or that module's hooks do not run.
# * Clip with `clip_grad_norm_` between `backward()` and `step()`, and log the norm it returns.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check glu my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=glu_task
# ## Exercise 1 · `glu` (8 points)
#
# Write a module `GLU(in_features, out_features, bias=True)`, a *gated linear unit*: a linear layer to
# `2 * out_features` features whose second half decides, through a sigmoid, how much of the first half
# gets through.
#
# * It owns a Parameter `weight` of shape `(2 * out_features, in_features)` and a Parameter `bias` of
#   shape `(2 * out_features,)`, both **its own** (not inside an `nn.Linear`), so that `state_dict()`
#   has exactly the keys `weight` and `bias`. With `bias=False` there is no bias parameter and no
#   `bias` key, but `self.bias` still exists and is `None` — register it with
#   `self.register_parameter("bias", None)`, as `nn.Linear` does.
# * Both start like `nn.Linear`'s: uniform in `[-1/sqrt(in_features), 1/sqrt(in_features)]`.
# * `forward(x)` takes `x` of shape `(..., in_features)` — any number of leading dims, including none —
#   computes `h = x @ weight.T + bias` of shape `(..., 2 * out_features)`, splits `h` along its **last**
#   dim into a first half `a` and a second half `g`, and returns `a * sigmoid(g)`, of shape
#   `(..., out_features)`.
# * It keeps working after `.to(device)` and `.double()`, and `backward()` fills `weight.grad` and
#   `bias.grad`.
#
# ```python
# class GLU(nn.Module):
#     def __init__(self, in_features, out_features, bias=True):
#         super().__init__()
#         ...
#
#     def forward(self, x):
#         ...
# ```
#
# *Hint:* `torch.nn.functional.glu(h, dim=-1)` computes the gating step, so you can compare your output
# with it; `nn.init.uniform_` fills a tensor in place.

# %% nbgrader=solution id=glu_answer
import torch
from torch import nn

### BEGIN SOLUTION
from solutions.ch03_modules import GLU
### END SOLUTION

# %% nbgrader=test id=glu_registration points=2
check("glu", globals(), "parameters_registered", "state_dict_keys")

# %% nbgrader=test id=glu_forward points=1
check("glu", globals(), "forward_matches_glu")

# %% nbgrader=test id=glu_hidden_shapes points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("glu", globals(), "init_like_linear", "any_leading_dims", "no_bias")
### END HIDDEN TESTS

# %% nbgrader=test id=glu_hidden_devices points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("glu", globals(), "to_device_and_double", "gradients_reach_parameters")
### END HIDDEN TESTS

# %% nbgrader=test id=glu_hidden_generated points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("glu", globals(), "generated_forward", "generated_gradients", "generated_init")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=running_norm_task
# ## Exercise 2 · `running_norm` (9 points)
#
# Write a module `RunningNorm(num_features, momentum=0.1, eps=1e-5)` that normalises input of shape
# `(N, num_features)` feature by feature, exactly as `nn.BatchNorm1d(num_features, eps=eps,
# momentum=momentum, affine=False)` does — computing the statistics yourself (no `F.batch_norm`, no
# `BatchNorm` module inside).
#
# * Three **buffers**: `running_mean` (zeros), `running_var` (ones), `num_batches_tracked` (an int64
#   scalar, 0). They are in `state_dict()`, follow `.to()`, and are not parameters.
# * **Training mode**: normalise with the batch's mean and *biased* variance (divided by `N`):
#   `(x - mean) / sqrt(var + eps)`, gradients flowing through both. Then update the buffers: add 1 to
#   `num_batches_tracked`, and blend `running = (1 - f) · running + f · batch_value` with
#   `f = momentum`, using the batch mean for `running_mean` and the *unbiased* variance (divided by
#   `N - 1`) for `running_var`. With `momentum=None`, `f = 1 / num_batches_tracked` (after adding
#   1), which makes the buffers a plain average of all batches so far.
# * **Eval mode**: normalise with `running_mean` and `running_var`, and change nothing.
# * The buffers never hold autograd history: update them in place inside `torch.no_grad()`.
#
# ```python
# class RunningNorm(nn.Module):
#     def __init__(self, num_features, momentum=0.1, eps=1e-5):
#         super().__init__()
#         ...
#
#     def forward(self, x):
#         ...
# ```
#
# *Hint:* section 4 checked BatchNorm's update rule with `assert_close`; do the same with your module
# against `nn.BatchNorm1d(..., affine=False)` on a few batches, in both modes.

# %% nbgrader=solution id=running_norm_answer
import torch
from torch import nn

### BEGIN SOLUTION
from solutions.ch03_modules import RunningNorm
### END SOLUTION

# %% nbgrader=test id=running_norm_buffers points=1
check("running_norm", globals(), "buffers_registered")

# %% nbgrader=test id=running_norm_modes points=2
check("running_norm", globals(), "train_matches_batchnorm", "eval_uses_running_stats")

# %% nbgrader=test id=running_norm_hidden_settings points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("running_norm", globals(), "momentum_and_eps", "momentum_none_cumulative", "buffers_follow_to")
### END HIDDEN TESTS

# %% nbgrader=test id=running_norm_hidden_autograd points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("running_norm", globals(), "buffers_hold_no_history", "input_gradient_matches_batchnorm", "computes_statistics_itself")
### END HIDDEN TESTS

# %% nbgrader=test id=running_norm_hidden_generated points=1
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("running_norm", globals(), "generated_runs")
### END HIDDEN TESTS

# %% [markdown]
# Once both pass, build the circle classifier from your own modules and run the measurements of this
# chapter on it: the state table, and the accuracy in each mode. (The table shows the rule of the
# prediction in section 3 again: `.double()` converts only floating-point tensors, so the int64 counter
# stays int64.) Until your two modules are written, this cell says so instead of stopping.

# %%
with uses_your_answer("GLU", "RunningNorm"):
    seed_everything(0)
    own = nn.Sequential(GLU(2, 64), RunningNorm(64), nn.Dropout(0.5), nn.Linear(64, 2)).to(device)
    train_classifier(own)
    own_kinds = {
        "`GLU.weight` (Parameter)": (lambda m: m[0].weight, "0.weight"),
        "`RunningNorm.running_mean` (buffer)": (lambda m: m[1].running_mean, "1.running_mean"),
        "`RunningNorm.num_batches_tracked` (buffer)": (lambda m: m[1].num_batches_tracked, "1.num_batches_tracked"),
    }
    display(Markdown(state_table(own_kinds, lambda: copy.deepcopy(own))))
    seed_everything(0)
    print(f"eval(): test accuracy {evaluate(own):.3f} | "
          f"train(), batches of 4: {accuracy(copy.deepcopy(own).train(), 4):.3f}")
