# %% [markdown]
# # 03 · `nn.Module`: parameters, buffers and modes
#
# *Expected time: about 2 h — 1 h 15 min to read and run the cells, 45 min for the exercises
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
# 4. measure what `train()` and `eval()` change (Dropout, BatchNorm and its running statistics);
# 5. save and load weights with `state_dict`, and read the errors of a strict load;
# 6. initialise with `apply()` and freeze part of a model;
# 7. look inside a network with forward hooks (activation histograms) and full backward hooks
#    (gradient sizes), and remove the hooks again;
# 8. write two graded modules: `GLU` and `RunningNorm`.

# %% nbgrader=readonly id=opening
import copy
import io
import warnings

import torch
import torch.nn.functional as F
from IPython.display import Markdown, display
from torch import nn

from coursekit import start_chapter, seed_everything
from coursekit.plots import plot_bars, plot_curves, plot_histograms
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


curves = {}
for container in (list, nn.ModuleList):
    seed_everything(1)                        # both models start from the same random weights
    model = Stack(container)
    start = model.hidden[0].weight.detach().clone()
    print(f"--- hidden layers in a {container.__name__} ---")
    print(model)
    print("parameters() count:", sum(p.numel() for p in model.parameters()))
    curves[f"hidden layers in a {container.__name__}"] = overfit(model)
    moved = (model.hidden[0].weight - start).abs().max().item()
    print(f"final loss {curves[f'hidden layers in a {container.__name__}'][-1]:.4f} | "
          f"largest change of hidden[0].weight: {moved:.4f} | "
          f"hidden[0].weight.grad norm: {model.hidden[0].weight.grad.norm().item():.2e}")
    print()

plot_curves(curves, ylabel="MSE loss on one batch", logy=True, title="Overfitting one batch")

# %% [markdown]
# The plain-list model prints without its hidden layers, counts 33 parameters instead of 1153, and its
# hidden weights moved by exactly 0. Look at the gradient norm too: autograd *did* compute gradients
# for the hidden layers every step (they are ordinary `requires_grad` tensors), but
# `optimizer.zero_grad()` only clears the parameters the optimizer knows, so those gradients piled up
# over 200 steps and were never used.
#
# The fix is a container that is itself a module: `nn.ModuleList` (indexable, you write the loop),
# `nn.Sequential` (it also runs the layers in order) or `nn.ModuleDict` (by name). A single tensor
# that should be learned goes in an `nn.Parameter`; several in an `nn.ParameterList`.
#
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
torch.testing.assert_close(restored(x), fixed(x))
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
torch.testing.assert_close(bn.running_mean, 0.9 * torch.zeros(3, device=device) + 0.1 * batch.mean(0))
torch.testing.assert_close(bn.running_var, 0.9 * torch.ones(3, device=device) + 0.1 * batch.var(0, unbiased=True))
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


def train_classifier(model, epochs=20, batch_size=64, lr=1e-2):
    optimizer = torch.optim.Adam((p for p in model.parameters() if p.requires_grad), lr=lr)
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
# ## 5. `state_dict` and `load_state_dict`
#
# `state_dict()` is an ordered dict from dotted names to tensors: every parameter and every persistent
# buffer, nothing else (no optimizer, no code). Its tensors are *detached views* of the live ones —
# no copy is made. `load_state_dict` copies values back into the existing tensors, matching by name.

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
torch.testing.assert_close(twin(x_test), classifier(x_test))
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
# Below, a deep `tanh` network is initialised three ways with `apply()`, and a hook on every `Tanh`
# records what it outputs for the same random input.

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
for name, module in deep.named_modules():
    if isinstance(module, nn.Tanh):
        module.layer_name = f"tanh {name}"   # a plain attribute is fine for a label
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
plot_histograms(activations["N(0, 1)"], title="tanh outputs, weights drawn from N(0, 1): saturated")
plot_histograms(activations["PyTorch default"], title="tanh outputs, PyTorch's default init: shrinking (read the x axes)")
plot_histograms(activations["Xavier, tanh gain"], title="tanh outputs, Xavier init with tanh gain: stable")

# %% [markdown]
# With weights of standard deviation 1, each `Linear` multiplies the spread by about `sqrt(128) ≈ 11`,
# so every `tanh` is pushed to ±1 (a U shape: most units are saturated, and their gradient is near
# zero). PyTorch's default init is too small for a deep `tanh` stack: the spread shrinks layer after
# layer. Xavier's scale with the `tanh` gain keeps it steady.
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
for name, module in deep.named_modules():
    if isinstance(module, nn.Linear):
        module.layer_name = int(name)
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
        gradient_curves[init_name] = ([layers.index(k) for k in layers], [grad_norms[k] for k in layers])
        print(f"{init_name:18s} |grad of each Linear's output|, first to last layer: "
              + "  ".join(f"{grad_norms[k]:.2e}" for k in layers))
finally:
    for handle in handles:
        handle.remove()
print("warning caught:", str(caught[0].message).split(".")[0])
plot_curves(gradient_curves, xlabel="Linear layer (0 = first)", ylabel="gradient norm at its output", logy=True,
            title="Gradients measured by full backward hooks")

# %% [markdown]
# The same story as the activations, read from the other end. With N(0, 1) weights the gradient grows
# about 2.5x per layer on its way back, almost 100x over five layers (the first layer would get huge
# updates); with the default init it shrinks about 1.8x per layer, 16x in all (the first layers barely
# learn); with Xavier it stays flat.
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
# * `train()`/`eval()` flip `training` on every submodule: Dropout and BatchNorm behave differently,
#   and BatchNorm updates its running buffers only in training. Evaluate with `eval()` + `no_grad()`.
# * `state_dict()` holds views of the live tensors (clone to keep a copy); `load_state_dict` is strict
#   by default — read the missing and unexpected keys instead of switching `strict` off.
# * `apply()` walks every submodule (handy for initialisation); freezing is `requires_grad_(False)` plus
#   `eval()` for layers with running statistics.
# * Forward and full backward hooks observe activations and gradients; keep their handles and remove
#   them.
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

# %% [markdown]
# Once both pass, build the circle classifier from your own modules and run the measurements of this
# chapter on it: the state table, and the accuracy in each mode. (One new fact shows in the table:
# `.double()` converts only floating-point tensors, so the int64 counter stays int64.)

# %%
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
print(f"eval(): test accuracy {evaluate(own):.3f} | train(), batches of 4: {accuracy(copy.deepcopy(own).train(), 4):.3f}")
