# %% [markdown]
# # 05 · Devices: where tensors live, and when the work happens
#
# Every tensor lives on one **device**: the CPU's memory, or the memory of one GPU. An operation runs
# on the device of its inputs and refuses inputs from two devices. So far that sounds like bookkeeping,
# and most of it is — until one tensor is left behind on the CPU and training stops with an error, or,
# worse, the code runs and is slow. Two more facts make GPU code behave differently from CPU code: a GPU
# runs work that the CPU **queues** for it, later, so a Python line can finish long before its work is
# done; and GPU memory is handed out by a **caching allocator** whose numbers need reading with care.
#
# This notebook runs on whatever machine runs it. Without a GPU, the device rules are shown with two
# stand-ins — the `meta` device and *fake* CUDA tensors — and what only a GPU can show (queued work,
# timings, allocator numbers, running out of memory, pinned-memory copies) comes from a recording made
# on a GPU, labelled with that GPU and the date. On a machine with a GPU, the same cells measure live.
#
# **In this chapter** you will
# 1. name devices, choose one honestly, and see why `"cuda"` is not equal to `"cuda:0"`;
# 2. create tensors where they are needed, read the cross-device error, and find the tensors left behind
#    on the CPU — made inside `forward`, kept as plain attributes — with two stand-in devices, and learn
#    what each stand-in misses;
# 3. move data: `.to()`, `non_blocking`, pinned memory, and batches made of nested containers;
# 4. see that a GPU runs work asynchronously, time it correctly, and count the places where the CPU has
#    to wait for it;
# 5. count the memory of a model and its training step on the `meta` device without allocating it,
#    read the caching allocator's two numbers, and recover from an out-of-memory error;
# 6. evaluate without disturbing the model — each module's own mode restored — and average a metric
#    correctly over a short last batch;
# 7. put the habits together in one device-agnostic training loop;
# 8. write three graded exercises: `move_to`, `PositionalEncoding` and `find_max_batch_size`.

# %% nbgrader=readonly id=opening
import collections
import contextlib
import statistics
import time
import warnings
import weakref

import torch
import torch.nn.functional as F
from IPython.display import Markdown, display
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

from coursekit import gpu_recording, pick_device, seed_everything, start_chapter
from coursekit.claims import under
from coursekit.plots import plot_curves, plot_heatmap, plot_stacked_bars
from coursekit.practice import uses_your_answer
from graders import check

device = start_chapter("05_devices")

# %% [markdown]
# ### Where this notebook's GPU numbers come from
#
# The cell below decides once, for the whole chapter: with a CUDA GPU present it runs the GPU
# measurements now (a few seconds; the code is in `coursekit/gpu_recording.py`); otherwise it reads the
# recording `gpu_recording.json` that ships next to this notebook, made by the same code on a GPU. Every
# number and picture taken from it says which GPU and which day it comes from. If there is neither a GPU
# nor a recording, the GPU cells say what they would show and draw nothing.

# %% tags=nbval-ignore-output
try:
    gpu = gpu_recording.gpu_measurements(device)
except gpu_recording.NotARecording as refused:      # a dry run, or an incomplete file: never shown as GPU numbers
    print("refused:", refused)
    gpu = None
print(gpu.describe() if gpu is not None else gpu_recording.NO_RECORDING)

# %% [markdown]
# ## 1. Naming and choosing a device
#
# A `torch.device` is a **type** — `cpu`, `cuda`, `mps` (Apple GPUs), `meta`, ... — and an optional
# **index**, which GPU of several. Making a `torch.device` object checks only the spelling; it needs no
# GPU:

# %%
for name in ("cpu", "cuda", "cuda:0", "cuda:1", "meta"):
    d = torch.device(name)
    print(f"torch.device({name!r:8}) -> type {d.type!r:6} index {d.index}")
print()
print('torch.device("cuda") == torch.device("cuda:0"):', torch.device("cuda") == torch.device("cuda:0"))
print('torch.device("cuda", 0) == torch.device("cuda:0"):', torch.device("cuda", 0) == torch.device("cuda:0"))

# %% [markdown]
# `"cuda"` without an index means "the current GPU" when you *create* something; as a value it simply
# has no index, and two devices compare equal only when type **and** index agree.
#
# ### Fake CUDA tensors: a GPU's bookkeeping without a GPU
#
# To show what a CUDA tensor reports on a machine without a GPU, this chapter uses **fake tensors**.
# Inside `with FakeTensorMode():` every new tensor is fake: it has a shape, a dtype and a device —
# `cuda:0` included, with no GPU anywhere — but no values. An operation on fake tensors computes only
# its result's shape, dtype and device, applying PyTorch's device rules on the way. `torch.compile` uses
# this machinery to trace models; it lives in `torch._subclasses`, and the underscore means *internal*:
# good for a demonstration, not something to build on.
#
# ### Trap: comparing a tensor's device with `torch.device("cuda")`
#
# A tensor on a GPU always knows which GPU it is on, so its device carries the index:

# %%
with FakeTensorMode():
    x = torch.zeros(3, device="cuda")
print("a tensor made with device='cuda' is on:", x.device)
print("x.device == torch.device('cuda'):     ", x.device == torch.device("cuda"), " <- the trap")
print("x.device.type == 'cuda':              ", x.device.type == "cuda")
print("x.is_cuda:                            ", x.is_cuda)
cpu_tensor = torch.zeros(3)
print("a CPU tensor is on:", cpu_tensor.device, "| == torch.device('cpu'):", cpu_tensor.device == torch.device("cpu"),
      "| == torch.device('cpu:0'):", cpu_tensor.device == torch.device("cpu:0"))

# %% [markdown]
# So `if x.device == torch.device("cuda"):` is never true for a real GPU tensor, and code guarded by it
# silently never runs. Compare `x.device.type`, or compare with another tensor's device
# (`x.device == y.device`), never with a device spelled without its index. (CPU tensors have no index,
# which is why the comparison seems to work — until the code meets a GPU.)
#
# ### Is there a GPU? Ask the right question
#
# PyTorch offers several ways to ask, and they answer different questions:
#
# * `torch.version.cuda` — which CUDA this PyTorch was **built** with (`None` for a CPU-only build);
# * `torch.cuda.is_available()` — is a CUDA GPU usable **now** (build, driver and device all present);
# * `torch.backends.mps.is_available()` — the same for Apple GPUs;
# * `torch.accelerator.current_accelerator()` — which kind of accelerator this build is **for**, and only
#   with `check_available=True` whether one is actually there.

# %% tags=nbval-ignore-output
print("built with CUDA:                    ", torch.version.cuda)
print("torch.cuda.is_available():          ", torch.cuda.is_available())
print("torch.backends.mps.is_available():  ", torch.backends.mps.is_available())
print("current_accelerator():              ", torch.accelerator.current_accelerator())
print("current_accelerator(check_available=True):", torch.accelerator.current_accelerator(check_available=True))

# %% [markdown]
# On the machine that built this notebook — no GPU, but the CUDA build of PyTorch that `pip install
# torch` gives on Linux — `current_accelerator()` answers `cuda` although there is no GPU, because the
# build was made for one. Code that trusts it fails at the first tensor:

# %% tags=nbval-ignore-output
careless = torch.accelerator.current_accelerator() or torch.device("cpu")
print("careless choice:", careless)
try:
    torch.zeros(1, device=careless)
    print("a tensor was made on", careless)
except RuntimeError as error:
    print("RuntimeError:", error)

# %% [markdown]
# The honest choice asks whether the accelerator is *available*:

# %% tags=nbval-ignore-output
def choose_device() -> torch.device:
    """The available accelerator (CUDA, MPS, ...), else the CPU."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)   # None when there is none
    return accelerator if accelerator is not None else torch.device("cpu")


print("choose_device() ->", choose_device())

# %% [markdown]
# ### What `start_chapter` chose, and why
#
# Every chapter's first cell calls `start_chapter`, which picks the device with `coursekit.pick_device`:
# the device you ask for, else the environment variable `COURSE_DEVICE`, else `cuda` when
# `torch.cuda.is_available()`, else the CPU. It considers only CUDA, because the graders check answers
# on the CPU or on a CUDA GPU; on a Mac, `choose_device()` above would find MPS. Setting
# `COURSE_DEVICE=cpu` before starting JupyterLab runs a chapter on the CPU even on a GPU machine:

# %% tags=nbval-ignore-output
print("pick_device()       ->", pick_device(), "(this kernel's choice)")
print("pick_device('meta') ->", pick_device("meta"))

# %% [markdown]
# ### The CPU is a device too: its threads
#
# On the CPU, PyTorch splits large operations over several threads — by default about one per core
# (`torch.get_num_threads()`). For the tiny tensors of this chapter, extra threads gain nothing: handing
# out the work costs about what sharing it saves. And on a machine busy with other programs they can
# cost a lot, because every thread of an operation must get a core before the operation can finish.
# Measured on a tiny training step, on this machine, now:

# %% tags=nbval-ignore-output
def seconds_per_tiny_step(steps=50):
    seed_everything(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(32, 8), torch.randn(32, 1)
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        F.mse_loss(model(inputs), targets).backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


default_threads = torch.get_num_threads()
seconds_per_tiny_step(5)                       # warm-up: a process's first steps pay for initialisation
for threads in sorted({default_threads, 1}, reverse=True):
    torch.set_num_threads(threads)
    print(f"{threads} CPU thread{'s' if threads > 1 else ''}: {1e6 * seconds_per_tiny_step():,.0f} µs per training step")
torch.set_num_threads(1)
print(f"torch's default on this machine: {default_threads} threads; from here on this chapter uses {torch.get_num_threads()}")

# %% [markdown]
# (Run the cell again while another program keeps the cores busy, and compare.) The rest of this chapter
# runs torch on one CPU thread — `torch.set_num_threads(1)`, which holds for this kernel — so that its
# tiny examples run at the same speed on a quiet and on a busy machine. For large matrices on an idle
# machine the default is right; measure before you change it.
#
# ### Choose once, pass it everywhere
#
# Whatever chooses it, choose **once**: one `device` variable at the top, passed to everything —
# `model.to(device)`, `batch.to(device)`, `torch.zeros(n, device=device)` or `device=x.device` deep
# inside a model — and never `.cuda()` or a device name written into a function. Then the same code runs
# on a laptop, a GPU server and in the graders, and switching is one line.
#
# ## 2. Where tensors are created
#
# Every factory function — `torch.zeros`, `ones`, `empty`, `full`, `arange`, `rand`, `randn`, `tensor` —
# creates on the CPU unless it is given `device=`, or unless a default device is set with
# `with torch.device(...):`. The functions that make a tensor *like another* take its device and dtype
# with them: `torch.zeros_like(x)`, `x.new_zeros(shape)`, `x.new_full(shape, value)`,
# `x.new_tensor(data)`. Seen on a fake GPU tensor `x` of dtype float64:

# %%
with FakeTensorMode():
    x = torch.zeros(2, 3, device="cuda", dtype=torch.float64)
    made = {
        "torch.zeros(3)": torch.zeros(3),
        "torch.tensor([1.0, 2.0])": torch.tensor([1.0, 2.0]),
        "torch.arange(3)": torch.arange(3),
        "torch.zeros(3, device=x.device)": torch.zeros(3, device=x.device),
        "torch.arange(3, device=x.device)": torch.arange(3, device=x.device),
        "torch.zeros_like(x)": torch.zeros_like(x),
        "x.new_zeros(3)": x.new_zeros(3),
        "x.new_tensor([1.0, 2.0])": x.new_tensor([1.0, 2.0]),
    }
    with torch.device("cuda"):
        made["torch.zeros(3) inside `with torch.device('cuda'):`"] = torch.zeros(3)
for how, t in made.items():
    print(f"{how:53s} -> {str(t.device):6s} {t.dtype}")

# %% [markdown]
# Creating on the device directly is cheaper than creating on the CPU and then moving: one allocation
# instead of two, and no copy. One exception is deliberate in this course: **random data is drawn on the
# CPU and then moved.** A GPU has its own random generator, which gives other numbers for the same
# seed, so drawing on the CPU makes the CPU and GPU runs of a notebook (and of the graders) see the same
# data.
#
# ### The cross-device error
#
# The most common device bug: the model was moved, the batch was not. Here is the error a GPU raises,
# shown on a fake GPU. `FakeTensorMode(allow_non_fake_inputs=True)` lets real tensors made outside the
# block in (they are turned into fake ones on the way), so an ordinary model can be moved with
# `.to("cuda")` — which replaces its parameters with fake ones, so this model serves only the
# demonstration.

# %%
def fake_gpu():
    """A block in which .to('cuda') and device='cuda' make fake CUDA tensors; real CPU tensors may come in."""
    return FakeTensorMode(allow_non_fake_inputs=True)


seed_everything(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
batch = torch.randn(8, 3)                      # data made on the CPU, as a DataLoader delivers it
with fake_gpu():
    model.to("cuda")
    print("the model is on", next(model.parameters()).device, "| the batch is on", batch.device)
    try:
        model(batch)
    except RuntimeError as error:
        print(f"{type(error).__name__}: {error}")
    print("after batch.to('cuda'): the output is on", model(batch.to("cuda")).device)

# %% [markdown]
# On a real GPU the error is a plain `RuntimeError` with the same sentence (some operations add which of
# their arguments they were checking); `FakeTensorDeviceMismatchError` is a subclass of `RuntimeError`.
# The two devices named in the message are the clue — `cpu` and `cuda:0`, in either order: find the
# tensor that is still on the CPU.
#
# ### Trap: a tensor made on the CPU inside `forward`
#
# Moving the model and the batch is not enough when `forward` itself makes a tensor without a device.
# A classic: position indices made with `torch.arange`. On a CPU-only machine this bug is invisible —
# everything is on the CPU anyway — and it surfaces on the first GPU run.

# %%
class Embedder(nn.Module):
    """Token embeddings plus learned position embeddings, for ids of shape (batch, seq)."""

    def __init__(self, vocab=100, max_len=16, dim=8):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)

    def forward(self, ids):
        where = torch.arange(ids.shape[1])                  # the trap: no device, so the CPU
        return self.tokens(ids) + self.positions(where)


class EmbedderFixed(Embedder):
    def forward(self, ids):
        where = torch.arange(ids.shape[1], device=ids.device)   # made where the input lives
        return self.tokens(ids) + self.positions(where)


ids = torch.randint(0, 100, (2, 5))
print("on the CPU, the buggy version runs:", tuple(Embedder()(ids).shape))
for cls in (Embedder, EmbedderFixed):
    embedder = cls()                          # made outside the block: real weights, then moved
    with fake_gpu():
        embedder.to("cuda")
        try:
            print(f"{cls.__name__:13s} on a GPU: output on {embedder(ids.to('cuda')).device}")
        except RuntimeError as error:
            print(f"{cls.__name__:13s} on a GPU: {type(error).__name__}: {error}")

# %% [markdown]
# The same happens to a mask made with `torch.ones(n, n).tril()`, to noise from `torch.randn(shape)`,
# to a vector of constants from `torch.tensor([...])`: inside `forward`, give every new tensor `device=x.device`
# (and usually `dtype=x.dtype`), or make it with `x.new_*` / `torch.*_like`. A constant that never
# changes belongs in a buffer, made once in `__init__`.
#
# ### Trap: a plain tensor attribute stays behind on `.to()`
#
# Chapter 03 showed it on the `meta` device: a tensor assigned as a plain attribute is not registered,
# so `model.to(device)` never moves it. On a GPU, the result is the same error:

# %%
class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean                       # plain attribute: left behind by .to()
        self.register_buffer("std", std)       # buffer: moves with the module

    def forward(self, x):
        return (x - self.mean) / self.std


with fake_gpu():
    norm = Standardize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 2.0])).to("cuda")
    print("std on", norm.std.device, "| mean on", norm.mean.device)
    try:
        norm(torch.zeros(2, 3, device="cuda"))
    except RuntimeError as error:
        print(f"{type(error).__name__}: {error}")

# %% [markdown]
# The fix is chapter 03's: `self.register_buffer("mean", mean)`.
#
# ### Two stand-in devices, and what each one misses
#
# Both stand-ins run a model without a GPU and without computing anything, so they can check a large
# model in milliseconds. But a stand-in is only as good as the checks it performs. The `meta` device's
# kernels compute shapes; they check devices in some operations and not in others. Fake tensors apply
# PyTorch's device rules. Below, six device bugs, each run on both stand-ins: the batch left on the CPU,
# chapter 03's layers kept in a Python list (which `.to()` does not reach) — with and without biases —,
# the position indices and the plain attribute from above, and a 0-dim tensor made on the CPU inside
# `forward`.

# %%
class ListStack(nn.Module):
    """Chapter 03's trap: hidden layers in a Python list, invisible to .to()."""

    def __init__(self, bias=True):
        super().__init__()
        self.hidden = [nn.Linear(3, 3, bias=bias), nn.Linear(3, 3, bias=bias)]
        self.head = nn.Linear(3, 1, bias=bias)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.head(x)


class HalfScale(nn.Module):
    """Multiplies by a 0-dim tensor made, on the CPU, inside forward."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 3)

    def forward(self, x):
        return self.layer(x) * torch.tensor(0.5)


cases = {  # name -> (make the model, make the input, is the input moved?)
    "the batch left on the CPU": (lambda: nn.Linear(3, 2), lambda: torch.randn(4, 3), False),
    "layers in a Python list": (ListStack, lambda: torch.randn(4, 3), True),
    "layers in a Python list, `bias=False`": (lambda: ListStack(bias=False), lambda: torch.randn(4, 3), True),
    "`torch.arange` in `forward`": (Embedder, lambda: torch.randint(0, 100, (2, 5)), True),
    "a plain tensor attribute": (lambda: Standardize(torch.ones(3), torch.ones(3)), lambda: torch.randn(4, 3), True),
    "a 0-dim CPU tensor in `forward`": (HalfScale, lambda: torch.randn(4, 3), True),
}


def run_on(target, make_model, make_input, move_input):
    """Move a fresh model (and, if asked, the input) to `target`, run it, and say what happened."""
    model, x = make_model(), make_input()     # real CPU tensors, made outside any fake block
    with fake_gpu() if target == "cuda" else contextlib.nullcontext():
        model.to(target)
        try:
            return f"runs, output on {model(x.to(target) if move_input else x).device}"
        except RuntimeError as error:
            return f"**raises** `{type(error).__name__}`"


rows = ["| bug | on `meta` | on a fake GPU (`cuda`) |", "|---|---|---|"]
for name, (make_model, make_input, move_input) in cases.items():
    rows.append(f"| {name} | {run_on('meta', make_model, make_input, move_input)} "
                f"| {run_on('cuda', make_model, make_input, move_input)} |")
display(Markdown("\n".join(rows)))

# %% [markdown]
# The messages are the ones printed above: on `meta`, "Tensor on device cpu is not on the expected device
# meta!" (or the reverse). Read the table by columns. The fake GPU raised on the first five bugs, as a real
# GPU would. Of those five, `meta` raised on three and ran two silently: a bias-free `Linear` whose weight stayed on the
# CPU (with a bias, the same bug raises), and an embedding looked up with CPU indices. `meta` kernels
# compute shapes, and check devices in some operations but not in others — use `meta` to count memory and
# check shapes (section 5), not to prove that everything is on the right device.
#
# The last row runs everywhere, and on a real GPU too: an element-wise operation accepts a **0-dim** CPU
# tensor next to GPU tensors, reading it as a number, exactly like `x * 0.5`. So nothing breaks — but no
# device check can tell you that `forward` makes CPU tensors, and the same habit with shape `(1,)` instead
# of `()` does break. To see what `forward` creates, watch it. A `TorchFunctionMode` (from
# `torch.overrides`) is told about every torch function and tensor method called inside its `with` block,
# with its arguments, and decides what to return — here it just runs the call and notes the device of
# every tensor that a factory function made:

# %%
FACTORIES = {"tensor", "as_tensor", "scalar_tensor", "zeros", "ones", "empty", "full", "arange", "linspace",
             "rand", "randn", "randint", "eye"}


class WatchCreation(TorchFunctionMode):
    """Inside the block, records (function name, device) of every tensor a factory function creates."""

    def __init__(self):
        super().__init__()
        self.created = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in FACTORIES and isinstance(result, torch.Tensor):
            self.created.append((name, str(result.device)))
        return result


for module in (HalfScale(), Embedder(), EmbedderFixed()):
    module.to("meta")
    inputs = (torch.randint(0, 8, (2, 5)) if isinstance(module, Embedder) else torch.randn(4, 3)).to("meta")
    with WatchCreation() as watch:
        module(inputs)
    print(f"{type(module).__name__:13s} forward on meta created: {watch.created}")

# %% [markdown]
# A mode watches only while its block runs, costs a Python call per operation, and changes no result:
# a tool for a test, not for training. Exercise 2 asks for a module whose `forward` makes nothing on
# another device; its grader watches in this way.
#
# ## 3. Moving data
#
# ### `Tensor.to` returns, `Module.to` changes
#
# `tensor.to(device)` **returns** a tensor on `device` and leaves the original as it was; when the tensor
# is already there (and has the asked-for dtype), it returns the tensor itself, without a copy.
# `module.to(device)` moves the module's parameters and buffers **in place** and returns the module. The
# asymmetry makes a classic bug: a bare `x.to(device)` line, whose result nobody keeps.

# %%
x = torch.ones(3)
x.to("meta")                               # the result is thrown away
print("after x.to('meta'):     x is on", x.device)
x = x.to("meta")
print("after x = x.to('meta'): x is on", x.device)
y = torch.ones(3)
print("y.to('cpu') is y:", y.to("cpu") is y, "(already there: the same tensor, no copy)")
layer = nn.Linear(3, 1)
layer.to("meta")
print("after layer.to('meta'): its weight is on", layer.weight.device, "(a module moves in place)")

# %% [markdown]
# ### Trap: moving a tensor that requires grad makes a copy that is not a leaf
#
# `.to()` is an operation like any other, recorded by autograd. A tensor made with `requires_grad=True`
# and then moved is the *output* of a copy: not a leaf, so its `.grad` is never filled (backward sends the
# gradient through the copy to the original, which was thrown away), and an optimizer refuses it:

# %%
w = torch.randn(3, requires_grad=True).to("meta")
print("w.is_leaf:", w.is_leaf, "| made by:", type(w.grad_fn).__name__)
try:
    torch.optim.SGD([w], lr=0.1)
except ValueError as error:
    print("ValueError:", error)
w = torch.randn(3).to("meta").requires_grad_()          # the fix: move first, then ask for gradients
print("moved first, then requires_grad_():  w.is_leaf:", w.is_leaf)

# %% [markdown]
# (With a model this never comes up: `model.to(device)` moves parameters in place, and they stay leaves.
# It bites hand-made tensors. `torch.randn(3, device=device, requires_grad=True)` is a leaf too — but,
# as said above, this course draws random numbers on the CPU.)
#
# ### `non_blocking` and pinned memory
#
# A copy from the CPU to a GPU is done by the GPU's copy engine, which reads host memory directly — but
# only memory that the operating system has promised not to move or swap out: **page-locked**, or
# **pinned**, memory. Ordinary (*pageable*) memory is copied in two hops: the CPU first copies a chunk
# into a pinned staging buffer, then the engine takes it from there, and the CPU is busy until the last
# chunk is handed over. From pinned memory:
#
# * the copy is faster (one hop), and
# * `tensor.to(device, non_blocking=True)` only *queues* the copy and returns at once, so the CPU can go
#   on — preparing the next batch — while the copy runs. From pageable memory `non_blocking=True` gains
#   little: the CPU still does the staging.
#
# Pinning is itself a copy into new pinned memory, and pinned memory is taken away from the rest of the
# system, so pin batches once, on their way to the GPU: `DataLoader(..., pin_memory=True)` does it in a
# background thread for every batch, and then `batch.to(device, non_blocking=True)`. On this machine,
# what the two do:

# %% tags=nbval-ignore-output
probe = torch.arange(6.0)
try:
    pinned = probe.pin_memory()
    print("probe.pin_memory(): is_pinned() =", pinned.is_pinned())
except RuntimeError as error:
    print("probe.pin_memory() -> RuntimeError:", error)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (first,) = next(iter(DataLoader(TensorDataset(probe), batch_size=3, pin_memory=True)))
print("DataLoader(pin_memory=True): first batch is_pinned() =", first.is_pinned())
for warning in caught:
    print(f"   it warned ({warning.category.__name__}): {warning.message}")

# %% [markdown]
# Without a GPU, on a CUDA build: `pin_memory()` raises — pinning is done by the CUDA driver, and there
# is none — while `DataLoader(pin_memory=True)` warns and hands out ordinary, unpinned batches. So make
# the option depend on where the batches go: `pin_memory=(device.type == "cuda")`.
#
# What the pinning buys on a GPU, measured: the copy speed from pageable and pinned memory, how long the
# `non_blocking=True` call takes to *return*, and one more trap — a `non_blocking` copy **back** to the
# CPU returns before the data has arrived, so reading the result without synchronising reads whatever
# the memory held before.

# %% tags=nbval-ignore-output
if gpu is None:
    print("not measured: this needs a GPU, and no recording was found. A recording prints here the GB/s of a\n"
          "256 MiB copy to the GPU from pageable and from pinned memory, blocking and non_blocking, how long each\n"
          "call took to return, and the share of a non_blocking copy back to the CPU that was right when read\n"
          "before synchronizing; and it draws the copy speeds as bars. Nothing is drawn without it.")
else:
    transfer = gpu["pinned_transfer"]
    print(f"{gpu.label}: copying {transfer['bytes'] // 2**20} MiB to the GPU")
    for kind in ("pageable", "pageable_non_blocking", "pinned", "pinned_non_blocking"):
        stats = transfer[kind]
        print(f"   {kind:22s} {stats['gb_per_s']:6.1f} GB/s | the call returned after "
              f"{stats['ms_until_call_returned']:7.3f} ms of {stats['ms_total']:7.3f} ms")
    back = transfer["d2h_read_before_sync"]
    print(f"a non_blocking copy back to the CPU, read at once: {back['fraction_correct_before_sync']:.0%} of it right; "
          f"after synchronize: {back['fraction_correct_after_sync']:.0%}")
    gpu_recording.plot_transfer(gpu)

# %% [markdown]
# ### Batches are containers
#
# A batch is rarely one tensor. A text batch may be a dict of token ids, masks and lengths, plus
# metadata that is not a tensor at all; `DataLoader` keeps whatever structure the dataset's items had
# (chapter 04). Such a batch has no `.to()`, and the usual one-liner breaks on the first value that is not
# a tensor:

# %%
seed_everything(0)
text_batch = {
    "ids": torch.randint(0, 100, (4, 6)),
    "mask": torch.ones(4, 6, dtype=torch.bool),
    "extra": {"lengths": torch.tensor([6, 5, 3, 6]), "files": ["a.txt", "b.txt", "c.txt", "d.txt"]},
    "target": (torch.zeros(4), 7),
}
try:
    text_batch.to("meta")
except AttributeError as error:
    print("text_batch.to('meta') -> AttributeError:", error)
try:
    {key: value.to("meta") for key, value in text_batch.items()}
except AttributeError as error:
    print("{key: value.to('meta') for ...} -> AttributeError:", error)

# %% [markdown]
# What is needed is a function that walks the structure — dicts, lists, tuples, named tuples, dataclasses
# — moves every tensor it finds, rebuilds each container around the moved tensors, and leaves everything
# else (strings, numbers, `None`) alone: Exercise 1, `move_to`. With pinned batches it passes
# `non_blocking=True` on to every copy.

# %% [markdown]
# ## 4. Asynchronous execution
#
# On a GPU, `y = torch.mm(a, b)` has not multiplied anything when it returns. PyTorch checks the
# arguments, allocates `y` (its shape is known in advance) and puts a **kernel launch** into a queue — a
# CUDA *stream* — and the Python line is done, typically within microseconds. The GPU takes the kernels
# from the queue in order and runs them, while the CPU runs ahead queueing more. The CPU waits only when
# it needs a result. Three consequences:
#
# 1. A clock around GPU code measures the *queueing*, unless the CPU first waits for the GPU to finish:
#    `torch.cuda.synchronize()` — or, for code that must run on any device,
#    `torch.get_device_module(device).synchronize()` — or CUDA **events**, time stamps that the GPU
#    itself writes when it reaches them in the queue.
# 2. The first calls are slow: they create the CUDA context, load libraries such as cuBLAS and let them
#    pick algorithms, and make the memory allocator request its first blocks. Time a step only after a few
#    **warm-up** steps.
# 3. An error inside a kernel (an index out of range, say) is reported by a *later* call — the next one
#    that waits — not by the line that caused it. The environment variable `CUDA_LAUNCH_BLOCKING=1` makes
#    every launch wait, so that errors point at their line: for debugging, since it is slow.
#
# Measured on a GPU: the same step — a few large matrix products — timed with a synchronize after each
# step (first, so that step 0 pays the warm-up), without one, and with CUDA events.

# %% tags=nbval-ignore-output
if gpu is None:
    print("not measured: this needs a GPU, and no recording was found. A recording prints here the time of\n"
          "each of 20 steps (4 chained 4096x4096 matmuls) with synchronize, without it and with CUDA events,\n"
          "the arithmetic rate each timing implies, and how long a synchronize after the unsynchronized loop\n"
          "waits; and it draws the time per step with and without synchronisation. Nothing is drawn without it.")
else:
    timing = gpu["async_timing"]
    synced, launched = timing["ms_synchronized"], timing["ms_launch_only"]
    steady, launch = statistics.median(synced[1:]), statistics.median(launched)
    tera = timing["flop_per_step"] / 1e12
    print(f"{gpu.label}; one step = {timing['step']}")
    print(f"with synchronize:    step 0 took {synced[0]:.1f} ms (warm-up), the others {steady:.2f} ms (median)"
          f" -> {tera / (steady / 1000):.1f} TFLOP/s")
    print(f"without synchronize: {launch:.3f} ms per step (median) -> {tera / (launch / 1000):,.0f} TFLOP/s")
    if timing["ms_events"]:
        print(f"CUDA events:         {statistics.median(timing['ms_events']):.2f} ms per step (median)")
    print(f"the {len(launched)} unsynchronized steps returned after {timing['loop_ms_without_sync']:.1f} ms in all; "
          f"the synchronize after them waited {timing['wait_ms_at_final_sync']:.1f} ms more")
    gpu_recording.plot_step_times(gpu)

# %% [markdown]
# Timed without synchronisation, a step seems to take as long as it takes to *queue* it, and the work
# piles up until something waits — here the final synchronize, which pays for the whole loop at once.
# (How deep the queue may get is limited: a loop of thousands of small kernels eventually blocks on a
# full queue, and then even unsynchronized times look plausible — and are still wrong.)
#
# A timing helper that is right on every device waits for the device after each call, and warms up
# first. The CPU has no queue — an operation is done when it returns, and the CPU's `synchronize` does
# nothing — so on a CPU the two timings differ only by the noise of measuring; on a GPU they differ as
# above. The version with events is for CUDA only.

# %%
def benchmark(step, device, warmup=3, repeats=10, synchronize=True):
    """Median seconds per call of step() after `warmup` calls, waiting for the device after each call."""
    wait = torch.get_device_module(device).synchronize if synchronize else (lambda: None)
    for _ in range(warmup):
        step()
    wait()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        wait()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def benchmark_events(step, warmup=3, repeats=10):
    """The same with CUDA events: the GPU stamps the start and the end of each call itself."""
    for _ in range(warmup):
        step()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in pairs:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in pairs) / 1000   # elapsed_time: ms

# %% tags=nbval-ignore-output
seed_everything(0)
a = torch.randn(512, 512).to(device)
first = time.perf_counter()
(a @ a).sum().item()
first = time.perf_counter() - first
timings = collections.defaultdict(list)
for _ in range(5):                             # alternate, so that a busy moment of the machine hits both alike
    timings["with synchronize"].append(benchmark(lambda: a @ a, device))
    timings["without synchronize"].append(benchmark(lambda: a @ a, device, synchronize=False))
    if device.type == "cuda":
        timings["with CUDA events"].append(benchmark_events(lambda: a @ a))
print(f"on {device}: the first 512x512 matmul took {1000 * first:.3f} ms (no warm-up)")
for how, seconds in timings.items():
    print(f"on {device}: timed {how:19s} {1000 * statistics.median(seconds):.3f} ms per matmul (median of 5 medians of 10)")

# %% [markdown]
# ### Host synchronisations: where the CPU waits
#
# The CPU waits for the GPU whenever Python needs a value computed there — a **host synchronisation**:
#
# * `t.item()`, `t.tolist()`, `float(t)`, `int(t)`, `t.cpu()`, `t.numpy()`;
# * `print(t)`, and an f-string that formats a tensor — both read its values;
# * `if t:`, `while t:`, `if loss < best:` — Python asks for `bool(t)`;
# * operations whose output *size* depends on the values: `t.nonzero()`, indexing with a boolean mask,
#   `torch.unique`.
#
# While the CPU waits it queues nothing, so once the queue is empty the GPU idles too. One wait per
# epoch costs nothing; several per step can cost a lot when steps are short. You cannot see them in
# the code at a glance — but they can be counted, on any device, by a `TorchFunctionMode` that notes the
# calls that read values:

# %%
SYNCS = {"item", "tolist", "__float__", "__int__", "__bool__", "__format__", "__repr__", "cpu", "numpy", "nonzero"}


class CountSyncs(TorchFunctionMode):
    """Counts, inside the block, the calls that make the CPU wait for a GPU tensor's values."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in SYNCS:
            self.counts[name] += 1
        elif name == "__getitem__" and _has_boolean_mask(args[1]):
            self.counts["boolean mask"] += 1
        return func(*args, **(kwargs or {}))


def _has_boolean_mask(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(part, torch.Tensor) and part.dtype == torch.bool for part in parts)


t = torch.arange(4.0).to(device)
for label, read in [("t.sum().item()", lambda: t.sum().item()), ("t.tolist()", lambda: t.tolist()),
                    ("f'{t.max():.1f}'", lambda: f"{t.max():.1f}"), ("str(t), as print(t) does", lambda: str(t)),
                    ("if t.min() < 1: ...", lambda: 1 if t.min() < 1 else 0),
                    ("t[t > 1] (a boolean mask)", lambda: t[t > 1]), ("t * 2 + 1", lambda: t * 2 + 1)]:
    with CountSyncs() as syncs:
        read()
    print(f"{label:28s} -> {dict(syncs.counts) or 'no wait'}")

# %% [markdown]
# Arithmetic never waits; everything that reads a value does. Now a training loop written the usual way,
# with its logging, and the same loop with the losses kept on the device and read once per epoch:

# %%
def regression_data(n=512, seed=0):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, 8, generator=generator)
    targets = inputs @ torch.randn(8, 1, generator=generator) + 0.1 * torch.randn(n, 1, generator=generator)
    return inputs.to(device), targets.to(device)       # drawn on the CPU, then moved


x_all, y_all = regression_data(n=612)
x_reg, y_reg = x_all[:512], y_all[:512]        # for training
x_val, y_val = x_all[512:], y_all[512:]        # 100 more from the same source, for section 6


def batches(batch_size=32):
    for start in range(0, len(x_reg), batch_size):
        yield x_reg[start:start + batch_size], y_reg[start:start + batch_size]


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    loss = F.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


def epoch_logging_every_step(model, optimizer):
    losses, best = [], float("inf")
    for step, (inputs, targets) in enumerate(batches()):
        loss = train_step(model, optimizer, inputs, targets)
        losses.append(loss.item())                       # waits
        if loss < best:                                  # waits: bool of a tensor
            best = loss.detach()
        if step % 8 == 0:
            print(f"   step {step:2d}: loss {loss:.3g}")  # waits: formats a tensor
    return sum(losses) / len(losses), float(best)        # waits once more


def epoch_reading_once(model, optimizer):
    total = torch.zeros((), device=device)
    best = torch.full((), float("inf"), device=device)
    steps = 0
    for inputs, targets in batches():
        loss = train_step(model, optimizer, inputs, targets).detach()
        total += loss                                    # stays on the device
        best = torch.minimum(best, loss)
        steps += 1
    return (total / steps).item(), best.item()           # two waits per epoch


# Losses to 3 significant digits: other CPUs draw the data's last bits and round the sums differently, which
# moves these losses by about 1e-6 of their size; to 4 decimals, step 8's loss (3.9452718, printed 3.9453) lay
# 2e-5 from where it rounds down.
results = {}
for epoch in (epoch_logging_every_step, epoch_reading_once):
    seed_everything(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    print(f"{epoch.__name__}:")
    with CountSyncs() as syncs:
        results[epoch.__name__] = epoch(model, optimizer)
    print(f"   mean loss {results[epoch.__name__][0]:.3g}, best {results[epoch.__name__][1]:.3g} | waits for the device: "
          f"{sum(syncs.counts.values())} {dict(syncs.counts)}")
(mean_logged, best_logged), (mean_once, best_once) = results.values()
# The same 16 float32 losses, added two ways: as Python floats (float64) and in a float32 running sum. Each of
# the 16 float32 additions may round by half a float32 step (6e-8 of the total), so the means agree to
# 16 x 6e-8 = 1e-6 of their size on any CPU or GPU; float64's default tolerance (1e-7) is tighter than that.
# The best loss is one of the same float32 numbers either way, so it is equal exactly.
torch.testing.assert_close(mean_once, mean_logged, rtol=2e-6, atol=0)
assert best_once == best_logged
print("both loops computed the same numbers (the means to float32's rounding, the best loss exactly)")

# %% [markdown]
# Both loops trained the same model to the same numbers (16 equal batches of 32, so the mean of the batch
# losses is the epoch's mean loss — section 6 shows what a short last batch does to it). The first made
# the CPU wait 35 times in one epoch, the second twice. What one wait per step costs on a GPU, for a small
# model whose steps are short:

# %% tags=nbval-ignore-output
if gpu is None:
    print("not measured: this needs a GPU, and no recording was found. A recording prints here the time per\n"
          "training step of a small model with loss.item() at every step, and with the losses summed on the GPU\n"
          "and read once.")
else:
    cost = gpu["host_sync_cost"]
    print(f"{gpu.label}: {cost['model']}, {cost['steps']} steps")
    print(f"   loss.item() every step: {cost['ms_per_step_item_every_step']:.3f} ms per step")
    print(f"   read once at the end:   {cost['ms_per_step_item_once']:.3f} ms per step")

# %% [markdown]
# ## 5. Memory
#
# ### Counting without allocating: the `meta` device
#
# How much memory a model needs can be counted before anything is allocated: build it on `meta`. Every
# tensor made inside `with torch.device("meta"):` has its shape and dtype and no memory behind it, so
# even a model far larger than this machine's memory is built in milliseconds. Its bytes are
# `numel() × element_size()`, summed.

# %%
def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


start = time.perf_counter()
with torch.device("meta"):                 # every tensor made in here is on meta: shape and dtype, no memory
    big = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=2048, nhead=16, dim_feedforward=8192, batch_first=True),
                                num_layers=24)
took = time.perf_counter() - start
count = sum(p.numel() for p in big.parameters())
print(f"{count:,} parameters ({count / 1e9:.2f} billion), built in {1000 * took:.0f} ms")
print(f"their memory: {tensor_bytes(big.parameters()) / 2**30:.2f} GiB in float32, {count * 2 / 2**30:.2f} GiB in bfloat16")
try:
    big.layers[0].linear1.weight.sum().item()
except RuntimeError as error:
    print("reading a value:", error)

# %% [markdown]
# ### What a training step holds
#
# The parameters are only the start. Training with Adam holds, at its busiest moment:
#
# * the **parameters**;
# * their **gradients**, as large again, from `backward()` until `zero_grad()` sets them to `None`;
# * the **optimizer state**: Adam keeps two running averages per parameter (`exp_avg`, `exp_avg_sq`),
#   twice the parameters, for the whole run (SGD with momentum keeps one, plain SGD none);
# * the **batch**;
# * the **activations** that `forward` saves for `backward` — inputs and outputs of layers that the
#   gradient formulas need. They grow with the batch size, and are freed as `backward` uses them.
#
# All of these can be counted on `meta` too: the optimizer's `step()` runs there (making its state on
# meta), and autograd's `saved_tensors_hooks` shows every tensor that `forward` saves. A view and its
# base share memory, so bytes are counted once per *storage*. The model is the one the GPU recording
# trains (`gpu_recording.make_mlp`: four square `Linear` layers of width 2048 with ReLU between them).

# %%
def storage_bytes(tensors, already_counted=()):
    """Bytes of the distinct storages behind `tensors` (a view and its base count once), skipping those
    behind `already_counted`."""
    seen = {id(s): s for s in (t.untyped_storage() for t in already_counted)}
    total = 0
    for t in tensors:
        storage = t.untyped_storage()
        if id(storage) not in seen:
            seen[id(storage)] = storage
            total += storage.nbytes()
    return total


def step_memory_on_meta(make_model, batch_size, width, optimizer_class=torch.optim.Adam):
    """Bytes that one training step of make_model() holds, by kind, counted on meta: nothing is allocated."""
    with torch.device("meta"):
        model = make_model()
        inputs, targets = torch.empty(batch_size, width), torch.empty(batch_size, width)
    saved = []

    def keep(t):                               # called for every tensor that forward saves for backward
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        loss = F.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer = optimizer_class(model.parameters())
    optimizer.step()                           # runs on meta, and makes the state there
    parameters = list(model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor) and v.is_meta]
    return {"parameters": storage_bytes(parameters),
            "gradients": storage_bytes(p.grad for p in parameters),
            "Adam state": storage_bytes(state),
            "batch (inputs, targets)": storage_bytes([inputs, targets]),
            "activations saved for backward": storage_bytes(saved, already_counted=parameters + [inputs, targets])}


MLP = gpu_recording.FULL_SIZES                 # the recording's model: width, depth and batch size


def make_recorded_mlp():
    return gpu_recording.make_mlp(MLP["mlp_width"], MLP["mlp_depth"])


MiB = 2**20
predicted = step_memory_on_meta(make_recorded_mlp, MLP["mlp_batch"], MLP["mlp_width"])
print(f"MLP of width {MLP['mlp_width']}, depth {MLP['mlp_depth']}, batch {MLP['mlp_batch']}, Adam, float32 (counted on meta):")
for kind, n_bytes in predicted.items():
    print(f"   {kind:32s} {n_bytes / MiB:7.1f} MiB")
print(f"   {'all of them at once':32s} {sum(predicted.values()) / MiB:7.1f} MiB")

# %%
batch_sizes = [1024, 2048, 4096, 8192, 16384]
by_batch = {b: step_memory_on_meta(make_recorded_mlp, b, MLP["mlp_width"]) for b in batch_sizes}
plot_stacked_bars(batch_sizes, {kind: [by_batch[b][kind] / MiB for b in batch_sizes] for kind in predicted},
                  xlabel="batch size", ylabel="MiB", title="what one Adam training step holds, counted on meta")

# %% [markdown]
# The bottom three parts do not depend on the batch: parameters, gradients and Adam's state are four
# times the parameters. The batch and the activations grow in proportion to the batch size, and soon
# dominate. Memory that only grows with the batch size is why "find the largest batch that fits" has a
# clean answer, and the meta count is a good first estimate of it. It is not the whole story: on a GPU, operations also need
# temporary buffers, libraries reserve workspaces, and the allocator rounds sizes and can fragment.
#
# ### Two numbers: allocated and reserved
#
# Asking the GPU driver for memory (`cudaMalloc`) is slow and makes the GPU wait, so PyTorch asks for it
# rarely: its **caching allocator** takes large blocks from the driver and keeps them. A tensor that is
# freed returns its block to PyTorch's cache, not to the driver, ready for the next tensor. Hence two
# numbers:
#
# * `torch.cuda.memory_allocated()` — bytes in tensors that are alive now;
# * `torch.cuda.memory_reserved()` — bytes PyTorch holds from the driver: the allocated ones plus the
#   cache. It never shrinks on its own.
#
# `nvidia-smi` shows the reserved memory plus the CUDA context of the process (a few hundred MiB), so it
# says little about what your tensors use. `torch.cuda.max_memory_allocated()` gives the peak since the
# last `torch.cuda.reset_peak_memory_stats()`, and `torch.cuda.memory_summary()` a full report. On a
# machine without a GPU these functions do not complain — they report zero:

# %% tags=nbval-ignore-output
print("torch.cuda.memory_allocated():", torch.cuda.memory_allocated(), "| torch.cuda.memory_reserved():", torch.cuda.memory_reserved())

# %% [markdown]
# On a GPU, over two training steps of the model counted above — with the meta count's prediction for
# the phases where it makes one (the activations are alive after `forward`, the gradients after
# `backward`, Adam's state from the first `optimizer.step`):

# %%
def meta_prediction(phase, parts):
    """What the meta count says is alive at a phase of the recorded training steps (None where it has no claim)."""
    fixed = parts["parameters"] + parts["batch (inputs, targets)"]
    adam = parts["Adam state"]
    step = phase.split(":")[0]
    adam_now = adam if step == "step 2" or phase.endswith(("optimizer.step", "zero_grad")) else 0
    return {"model on device": parts["parameters"], "batch on device": fixed,
            f"{step}: forward": fixed + adam_now + parts["activations saved for backward"],
            f"{step}: backward": fixed + adam_now + parts["gradients"],
            f"{step}: optimizer.step": fixed + adam + parts["gradients"],
            f"{step}: zero_grad": fixed + adam}.get(phase)

# %% tags=nbval-ignore-output
if gpu is None:
    print("not measured: this needs a GPU, and no recording was found. A recording prints here, for each phase of\n"
          "two Adam steps of this model, memory_allocated, memory_reserved, the peak in between and the meta count's\n"
          "prediction, and draws allocated against reserved over the phases. Nothing is drawn without it.")
else:
    memory = gpu["training_memory"]
    recorded_parts = step_memory_on_meta(lambda: gpu_recording.make_mlp(memory["model"]["width"], memory["model"]["depth"]),
                                         memory["model"]["batch"], memory["model"]["width"])
    start = memory["phases"][0]["allocated"]           # what was allocated before the model existed
    print(f"{gpu.label}; MiB; allocated and peak counted from the {start / MiB:.1f} MiB allocated at the start")
    print(f"{'phase':24s} {'allocated':>9s} {'reserved':>9s} {'peak':>9s} {'meta says':>9s} {'difference':>10s}")
    for row in memory["phases"]:
        guess = meta_prediction(row["phase"], recorded_parts)
        above = row["allocated"] - start
        said = f"{guess / MiB:9.1f} {(above - guess) / MiB:10.1f}" if guess is not None else ""
        print(f"{row['phase']:24s} {above / MiB:9.1f} {row['reserved'] / MiB:9.1f} {(row['peak'] - start) / MiB:9.1f} {said}")
    levels = {"meta: parameters + batch + Adam state": (recorded_parts["parameters"] + recorded_parts["batch (inputs, targets)"]
                                                        + recorded_parts["Adam state"]) / MiB}
    gpu_recording.plot_training_memory(gpu, predicted=levels)

# %% [markdown]
# How to read it (the recording above, or your own GPU's numbers): *allocated* rises and falls with each
# phase, as tensors are made and freed; *reserved* only steps up, when the cache has no free block that
# fits, and stays up after the tensors are gone — it is the cache. The *peak* column catches what lived
# only inside a phase, such as the temporaries of `backward`. After every reference is dropped,
# allocated returns to where it started while reserved stays put, until `torch.cuda.empty_cache()`
# returns the unused cached blocks to the driver. `empty_cache` frees no tensor, and gives PyTorch no
# memory it could not use already — the cache *is* usable, and the allocator empties it by itself before
# it gives up on an allocation. What it does: it hands the memory back to the driver, for other processes
# on the same GPU, and makes `memory_reserved` (and `nvidia-smi`) show what is really held.
#
# ### Running out of memory, and coming back
#
# When the allocator cannot find the memory — even after it has given its cached blocks back to the
# driver and tried again — it raises `torch.OutOfMemoryError`, a subclass of `RuntimeError` (also known
# as `torch.cuda.OutOfMemoryError`). Its message says how much was asked for and how much was free,
# allocated and reserved. Recovering — to retry with a smaller batch, say — takes two steps:
#
# 1. **drop the references** to the failed step's tensors. Here is the catch: *the exception itself holds
#    them*. Its traceback keeps every frame between your `try` and the line that failed, and each frame
#    keeps its local variables — the activations of the half-finished step. Inside the `except` block they
#    are all still alive, and so they are as long as you keep the exception (`last_error = error`).
#    Python deletes the `as error` name when the `except` block ends;
# 2. **then** `torch.cuda.empty_cache()`, outside the `except` block, so that the memory just freed goes
#    back to the driver as well, and the numbers you read next (or log) show the memory really in use —
#    called inside the `except` block, it cannot release what the traceback still holds.
#
# The first step can be watched without a GPU: a stand-in step raises `torch.OutOfMemoryError` by hand,
# and a weak reference — one that does not keep its object alive — tells whether the step's tensor still
# exists.

# %%
step_tensors = []                              # weak references to the tensor each attempt made


def training_step_that_runs_out(batch_size):
    activations = torch.empty(batch_size, 1024)          # what the step had allocated before it failed
    step_tensors.append(weakref.ref(activations))
    raise torch.OutOfMemoryError("CUDA out of memory. (raised by hand: a stand-in for a real one)")


def still_alive():
    return step_tensors[-1]() is not None


try:
    training_step_that_runs_out(4096)
except torch.OutOfMemoryError as error:
    failed_frame = error.__traceback__.tb_next.tb_frame
    print("inside except: the step's activations alive?", still_alive(),
          "| the failed frame's local variables:", sorted(failed_frame.f_locals))
    del failed_frame
print("after the except block:", still_alive())

try:
    training_step_that_runs_out(4096)
except torch.OutOfMemoryError as error:
    last_error = error                         # the trap: keep the exception "for the log"
print("after the except block, the exception kept in last_error:", still_alive())
del last_error
print("after del last_error:", still_alive())
print("torch.OutOfMemoryError is a RuntimeError:", issubclass(torch.OutOfMemoryError, RuntimeError),
      "| is torch.cuda.OutOfMemoryError:", torch.OutOfMemoryError is torch.cuda.OutOfMemoryError)

# %% [markdown]
# The same on a GPU, for real: a step whose first allocation fits and whose second does not, with the
# allocator's numbers inside the `except` block, after `empty_cache` called there, with the exception
# kept, after dropping it, after `empty_cache`, and with the failed allocation retried.

# %% tags=nbval-ignore-output
if gpu is None:
    print("not measured: this needs a GPU, and no recording was found. A recording prints here the real\n"
          "torch.OutOfMemoryError message and memory_allocated / memory_reserved at each step of the recovery,\n"
          "and draws them. Nothing is drawn without it.")
else:
    oom = gpu["out_of_memory"]
    print(f"{gpu.label}: {oom['free_bytes_at_start'] / 2**30:.1f} GiB free of {oom['total_bytes'] / 2**30:.1f} GiB; "
          f"the step holds {oom['hold_bytes'] / 2**30:.1f} GiB, then asks for {oom['ask_bytes'] / 2**30:.1f} GiB more")
    print(f"{oom['exception_type']}: {oom['message']}")
    print(f"{'phase':32s} {'allocated':>10s} {'reserved':>10s}  (GiB)")
    for row in oom["phases"]:
        print(f"{row['phase']:32s} {row['allocated'] / 2**30:10.2f} {row['reserved'] / 2**30:10.2f}")
    gpu_recording.plot_out_of_memory(gpu)

# %% [markdown]
# ### Finding the largest batch that fits
#
# The meta count gives a first estimate of the largest batch, but the real answer is found by trying:
# run one training step at a batch size, and see whether it raises `torch.OutOfMemoryError`. Since
# memory grows with the batch size, "fits" is monotone — if 512 fits, so does 300 — and a search needs
# few tries: double the size until a step fails, then bisect between the last size that fitted and the
# first that did not. With the recovery above done after every failure, no failed attempt leaves memory
# behind for the next. Exercise 3 is that search, `find_max_batch_size`. (Leave a margin in real training:
# the largest size that survived one step can still fail later, when other shapes or fragmentation come
# along.)

# %% [markdown]
# ## 6. Evaluating without disturbing the model
#
# ### Trap: an evaluation helper that turns everything back to training
#
# Chapter 03 evaluated with `model.eval()` and `torch.no_grad()`, and put the model back with
# `model.train()` afterwards. That last call is a blunt tool: it sets **every** submodule to training
# mode. When part of the model was deliberately in eval mode — a frozen, pretrained body whose BatchNorm
# must keep its running statistics (chapter 03, section 6) — the helper silently unfreezes those
# statistics, and from the next training step on they drift.

# %%
class FineTuned(nn.Module):
    """A pretrained body (frozen, BatchNorm in eval mode) and a new head that trains."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.head(self.body(x))


def prepare_fine_tuning(model):
    model.train()
    model.body.requires_grad_(False)
    model.body.eval()                          # frozen: its BatchNorm statistics must not move
    return torch.optim.Adam(model.head.parameters(), lr=1e-3)


def modes(model):
    return ", ".join(f"{name}={'train' if m.training else 'eval'}" for name, m in model.named_modules()
                     if name in ("body", "body.1", "head", "head.2"))


def evaluate_blunt(model, inputs, targets):
    model.eval()
    with torch.no_grad():
        loss = F.mse_loss(model(inputs), targets).item()
    model.train()                              # the blunt restore
    return loss


@contextlib.contextmanager
def evaluating(model):
    """Inside the block: eval() and no_grad(). Afterwards every module's own mode is back as it was."""
    was_training = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in was_training:
            m.training = mode                  # exactly the flag it had, module by module


def evaluate(model, inputs, targets):
    with evaluating(model):
        return F.mse_loss(model(inputs), targets).item()


seed_everything(0)
pretrained = FineTuned()
x_new, y_new = regression_data(n=256, seed=2)
x_new = 3 * x_new + 1                          # the new task's inputs: another scale and offset
for helper in (evaluate_blunt, evaluate):
    model = FineTuned()
    model.load_state_dict(pretrained.state_dict())
    model.to(device)
    optimizer = prepare_fine_tuning(model)
    before = model.body[1].running_mean.clone()
    print(f"{helper.__name__}: before: {modes(model)}")
    helper(model, x_new, y_new)
    print(f"{' ' * len(helper.__name__)}  after:  {modes(model)}")
    for inputs, targets in zip(x_new.split(32), y_new.split(32)):      # a few fine-tuning steps
        train_step(model, optimizer, inputs, targets)
    drift = (model.body[1].running_mean - before).abs().max().item()
    print(f"{' ' * len(helper.__name__)}  largest change of the frozen BatchNorm's running_mean after 8 steps: {drift:.4f}")

# %% [markdown]
# The helper saves each module's `training` flag before switching to eval mode and puts back exactly that
# flag afterwards, one module at a time (`m.training = mode` touches only `m`), in a `finally:` so that
# an exception inside the evaluation restores the modes too; the `no_grad()` block restores gradient
# recording on its own. (`torch.inference_mode()` may replace `no_grad()` where the outputs are never
# used in training: it skips a little more bookkeeping.)
#
# ### Trap: the mean of batch means
#
# Evaluating in batches, it is tempting to average the per-batch mean losses. That is right only when all
# batches have the same size. With 100 validation items in batches of 32, the last batch holds 4 items,
# and the mean of the four batch means gives those 4 items the weight of 32. The right number is the
# sum of per-item losses divided by the number of items — accumulated on the device and read once.

# %%
seed_everything(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for inputs, targets in batches():                                       # one epoch of training first
    train_step(model, optimizer, inputs, targets)

batch_means, total, count = [], torch.zeros((), device=device), 0
with evaluating(model):
    for inputs, targets in zip(x_val.split(32), y_val.split(32)):
        outputs = model(inputs)
        batch_means.append(F.mse_loss(outputs, targets))                    # mean over this batch
        total += F.mse_loss(outputs, targets, reduction="sum")              # sum over this batch
        count += len(targets)
    everything_at_once = F.mse_loss(model(x_val), y_val).item()
# 3 decimals: after one epoch of SGD these losses agree between CPUs to about 1e-6 of their size, and the
# right one, 0.2895469, lies 3e-6 from where 4 decimals would round it up.
print("batch sizes:", [len(t) for t in y_val.split(32)])
print(f"mean of the batch means:             {torch.stack(batch_means).mean().item():.3f}  <- wrong")
print(f"sum of the item losses / item count: {(total / count).item():.3f}")
print(f"all 100 items in one batch:          {everything_at_once:.3f}")

# %% [markdown]
# The same applies to accuracy, and to a training loss averaged over an epoch whose last batch is short.
# For metrics that are not averages of items — precision, recall, F1 — accumulate the counts they are
# made of (true positives, false positives, ...) and compute the metric once at the end.
#
# ## 7. Everything in its place: one training loop
#
# The habits of this chapter and the ones before it, in one loop that runs unchanged on any device:
# the device chosen once; data drawn on the CPU, seeded, and moved batch by batch (pinned and
# `non_blocking` when going to a GPU); one batch overfitted before the real run; `train()` at the top
# of every epoch and evaluation through `evaluating`; `zero_grad → forward → loss → backward → clip →
# step`; losses summed on the device, weighted by batch size, and read once per epoch.

# %%
def fit(model, train_set, valid_set, *, epochs, device, batch_size=32, lr=3e-3, max_norm=1.0, seed=0):
    """Train with Adam; return the (training, validation) loss of every epoch."""
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    pin = device.type == "cuda"
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, pin_memory=pin,
                        generator=torch.Generator().manual_seed(seed))
    history = []
    for _ in range(epochs):
        model.train()
        total, count = torch.zeros((), device=device), 0
        for inputs, targets in loader:
            inputs, targets = inputs.to(device, non_blocking=pin), targets.to(device, non_blocking=pin)
            optimizer.zero_grad()
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            total += loss.detach() * len(targets)
            count += len(targets)
        history.append(((total / count).item(), validation_loss(model, valid_set, device)))
    return history


def validation_loss(model, dataset, device, batch_size=64):
    total, count = torch.zeros((), device=device), 0
    with evaluating(model):
        for inputs, targets in DataLoader(dataset, batch_size=batch_size):
            inputs, targets = inputs.to(device), targets.to(device)
            total += F.mse_loss(model(inputs), targets, reduction="sum")
            count += len(targets)
    return (total / count).item()


generator = torch.Generator().manual_seed(0)
features = torch.randn(600, 8, generator=generator)                     # drawn on the CPU
labels = torch.sin(features[:, :1] * 2) + features[:, 1:2] ** 2 + 0.05 * torch.randn(600, 1, generator=generator)
train_set, valid_set = TensorDataset(features[:500], labels[:500]), TensorDataset(features[500:], labels[500:])


def make_regressor():
    return nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))


seed_everything(0)
probe_model = make_regressor()
one_batch = TensorDataset(*train_set[:32])
overfit = fit(probe_model, one_batch, one_batch, epochs=200, device=device, lr=1e-2)
# The first losses are printed as measured: they agree between CPUs to about 1e-6 of their size. The last ones
# follow hundreds of Adam steps, which grow a difference in the last bit into another path. In 20 runs of this
# cell with the results of the sums, matrix products and Adam updates moved by one last bit, as another CPU's
# kernels round them, the 30 epochs ended at a training loss of 0.0314 or 0.0333 and a validation loss of 0.117
# or 0.115, and their last 10 epochs reached 0.085 and 0.19. So the end of a run is printed as the claim all of
# them met. (The overfitted batch: 3.4e-10 here, under 6e-8 in each of the last 50 steps of every run.)
print(f"overfitting one batch of 32 first: loss {overfit[0][0]:.3f} -> {under(overfit[-1][0], 1e-4)} after 200 steps")

seed_everything(0)
history = fit(make_regressor(), train_set, valid_set, epochs=30, device=device)
print(f"30 epochs: training loss {history[0][0]:.3f} -> {under(history[-1][0], 0.1)}, "
      f"validation loss {history[0][1]:.3f} -> {under(history[-1][1], 0.25)}")
plot_curves({"training": [h[0] for h in history], "validation": [h[1] for h in history]},
            xlabel="epoch", ylabel="MSE loss", logy=True, title=f"the loop above, on {device.type}")

# %% [markdown]
# ## Summary
#
# * A device is a type and an index: `torch.device("cuda") != torch.device("cuda:0")`, and a GPU tensor
#   is always on an indexed device — compare `.type`, or devices of tensors. Choose the device once,
#   honestly (`torch.cuda.is_available()`, or `current_accelerator(check_available=True)`), and pass it.
# * Factory functions make CPU tensors unless given `device=`; `*_like` and `x.new_*` follow `x`. Inside
#   `forward`, make tensors on `x.device`; keep constants in buffers. Random data: drawn on the CPU, then
#   moved, so that every device sees the same numbers.
# * Without a GPU, fake CUDA tensors (`FakeTensorMode`) reproduce the cross-device error; `meta` counts
#   and checks shapes but lets some device bugs through; neither sees a 0-dim CPU tensor, which a GPU
#   accepts in element-wise operations — watch what `forward` creates instead.
# * `Tensor.to` returns (the same tensor when nothing changes); `Module.to` moves in place. Move before
#   asking for gradients. Pinned memory makes copies to the GPU faster and lets `non_blocking=True` overlap
#   them with work; pin only on the way to a GPU. Batches are nested containers: move them recursively.
# * GPU work is queued: time with `synchronize` or CUDA events, after warm-up. `.item()`, `.tolist()`,
#   printing, `if tensor:` and value-dependent shapes make the CPU wait; keep running totals on the device
#   and read them once per epoch.
# * Memory: parameters, gradients, optimizer state, batch and activations — countable on `meta`.
#   `memory_allocated` is live tensors, `memory_reserved` adds the allocator's cache. After an
#   out-of-memory error, leave the `except` block without keeping the exception, then `empty_cache()`.
# * Evaluate with `eval()` + `no_grad()` and restore each module's own mode; average metrics over items,
#   not over batches.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check move_to my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=move_to_task
# ## Exercise 1 · `move_to` (8 points)
#
# Write `move_to(obj, device, *, non_blocking=False)`: it returns `obj` with every tensor inside it (or
# `obj` itself, when it is a tensor) moved to `device` — a `torch.device` or a string such as `"cpu"`,
# `"cuda"` or `"meta"` — by calling `t.to(device, non_blocking=non_blocking)` on each tensor `t`, so that
# `non_blocking` reaches every copy.
#
# * It looks inside these containers, nested to any depth, and rebuilds them around the moved contents:
#   * `dict` and its subclasses (`OrderedDict`, `defaultdict`, your own): the result has the same type
#     and the same keys in the same order, and a `defaultdict` keeps its `default_factory`;
#   * `list` and `tuple` — exactly these two types;
#   * named tuples, rebuilt by their own class with the fields in order;
#   * instances of dataclasses whose fields are all `init` fields, rebuilt as a new instance with
#     `dataclasses.replace` (frozen dataclasses included).
# * Everything else is returned as **the very same object**: ints, floats, strings, `None`, NumPy arrays,
#   sets, classes, and objects of any other type even when they hold tensors — among them subclasses of
#   `list` or `tuple` that are not named tuples, and dataclasses with a field declared `init=False`.
# * A tensor for which `t.to(device)` would return `t` itself — it is already there — comes back as that
#   same tensor object, not a copy.
# * Nothing it is given is modified: neither the input nor any container inside it.
#
# *Hint:* `dataclasses.is_dataclass` is true for a dataclass *class* as well as for its instances; a named
# tuple is a tuple whose type has a `_fields` attribute. Try your function on section 3's `text_batch`.

# %% nbgrader=solution id=move_to_answer
import dataclasses

import torch


def move_to(obj, device, *, non_blocking=False):
    """obj with every tensor inside dicts, lists, tuples, named tuples and dataclasses moved to device."""
    ### BEGIN SOLUTION
    from solutions.ch05_devices import move_to as reference

    return reference(obj, device, non_blocking=non_blocking)
    ### END SOLUTION

# %% nbgrader=test id=move_to_moves points=3
check("move_to", globals(), "moves_every_tensor", "returns_other_objects_as_is")

# %% nbgrader=test id=move_to_containers points=2
check("move_to", globals(), "keeps_container_types")

# %% nbgrader=test id=move_to_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("move_to", globals(), "same_tensor_when_already_there", "passes_non_blocking", "input_not_modified")
### END HIDDEN TESTS

# %% nbgrader=test id=move_to_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("move_to", globals(), "generated_structures")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=positional_encoding_task
# ## Exercise 2 · `positional_encoding` (9 points)
#
# Write a module `PositionalEncoding(dim, max_len=512)` that adds the sinusoidal position encoding of the
# original Transformer to its input, and that behaves on any device.
#
# * It holds a tensor `pe` of shape `(max_len, dim)`: for every position `p` and every `i`,
#   `pe[p, 2i] = sin(p / 10000 ** (2i / dim))` and `pe[p, 2i + 1] = cos(p / 10000 ** (2i / dim))`,
#   each within `1.5e-7 * max_len` of the exact value (computing in float32 is accurate enough).
# * `pe` is a **non-persistent buffer**: it follows `.to(device)` and `.double()`, and `state_dict()` is
#   empty. The module has no parameters.
# * `forward(x)` takes `x` of shape `(batch, seq, dim)` and returns `x + pe[:seq].to(x.dtype)`, on `x`'s
#   device and with `x`'s dtype.
# * `forward` creates no tensor on any device other than `x`'s — 0-dim CPU tensors included — and never
#   makes the CPU wait for the device: no `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, no printing or
#   formatting of a tensor, no Python `bool`, `int` or `float` of a tensor.
# * `ValueError` from the constructor when `dim` is odd or smaller than 2, or when `max_len < 1`; and from
#   `forward` when `x` does not have 3 dims, when its last dim is not `dim`, or when `seq > max_len`.
#
# ```python
# class PositionalEncoding(nn.Module):
#     def __init__(self, dim, max_len=512):
#         super().__init__()
#         ...
#
#     def forward(self, x):
#         ...
# ```
#
# *Hint:* `x.shape[1]` is a Python int, so checking shapes never waits for the device. Section 2's
# `WatchCreation` and section 4's `CountSyncs` show what your `forward` creates and where it waits.

# %% nbgrader=solution id=positional_encoding_answer
import math

import torch
from torch import nn

### BEGIN SOLUTION
from solutions.ch05_devices import PositionalEncoding
### END SOLUTION

# %% nbgrader=test id=positional_encoding_values points=4
check("positional_encoding", globals(), "encoding_values", "forward_adds_encoding")

# %% nbgrader=test id=positional_encoding_module points=2
check("positional_encoding", globals(), "buffer_not_parameter", "rejects_bad_arguments")

# %% nbgrader=test id=positional_encoding_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("positional_encoding", globals(), "stays_on_device", "no_host_sync", "rejects_bad_input")
### END HIDDEN TESTS

# %% nbgrader=test id=positional_encoding_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("positional_encoding", globals(), "generated_modules_and_inputs")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=find_max_batch_size_task
# ## Exercise 3 · `find_max_batch_size` (7 points)
#
# Write `find_max_batch_size(try_batch, *, start=1, limit=4096)`, returning an int. `try_batch(b)` runs
# one training step with batch size `b` and raises `torch.OutOfMemoryError` when it does not fit; assume
# that when `b` fits, every smaller size fits too. Return the largest `b` with `start <= b <= limit` that
# fits, searching exactly like this:
#
# * try `start`, `2·start`, `4·start`, ... as long as they fit, trying `limit` in place of the first
#   doubled size that would be larger than `limit`; if `limit` fits, return `limit`;
# * otherwise bisect between the last size that fit (`lo`) and the first that did not (`hi`): try
#   `mid = (lo + hi) // 2`, which becomes the new `lo` if it fits and the new `hi` if not, until
#   `hi - lo == 1`; then return `lo`;
# * call `try_batch` at most `ceil(log2(limit / start)) + ceil(log2(limit - start + 1)) + 1` times, and
#   never twice with the same size;
# * after each out-of-memory error, leave the `except` block keeping no reference to the exception or to
#   its traceback, and only after that call `torch.cuda.empty_cache()` — if `torch.cuda.is_available()`;
# * let every other exception from `try_batch` propagate unchanged. Raise `ValueError` when `start < 1` or
#   `limit < start`, and `RuntimeError` when even `start` does not fit — raised outside the `except`
#   block, so that it carries no chained exception.
#
# *Hint:* section 5's weak-reference cell shows what "keeping a reference" means. Work one case on paper:
# with `start=1`, `limit=10` and sizes up to 6 fitting, the sizes tried are 1, 2, 4, 8, 6, 7.

# %% nbgrader=solution id=find_max_batch_size_answer
import torch


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    """The largest batch size in [start, limit] for which try_batch(b) does not run out of memory."""
    ### BEGIN SOLUTION
    from solutions.ch05_devices import find_max_batch_size as reference

    return reference(try_batch, start=start, limit=limit)
    ### END SOLUTION

# %% nbgrader=test id=find_max_batch_size_search points=3
check("find_max_batch_size", globals(), "finds_the_largest", "probes_in_order")

# %% nbgrader=test id=find_max_batch_size_hidden_budget points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("find_max_batch_size", globals(), "call_budget", "propagates_other_errors")
### END HIDDEN TESTS

# %% nbgrader=test id=find_max_batch_size_hidden_errors points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("find_max_batch_size", globals(), "releases_the_error", "rejects_bad_arguments")
### END HIDDEN TESTS

# %% [markdown]
# ## Your code at work
#
# Once `move_to` passes, move section 3's nested batch — to `meta`, to a fake GPU, and to the CPU where it
# already is:

# %%
with uses_your_answer("move_to"):
    def show_devices(obj, path="batch"):
        """One line per leaf of a nested batch: its path, and its device (tensors) or its type (anything else)."""
        if isinstance(obj, dict):
            for key, value in obj.items():
                show_devices(value, f"{path}[{key!r}]")
        elif isinstance(obj, (list, tuple)) and not all(isinstance(v, str) for v in obj):
            for k, value in enumerate(obj):
                show_devices(value, f"{path}[{k}]")
        else:
            print(f"   {path:28s} {obj.device if isinstance(obj, torch.Tensor) else type(obj).__name__}")


    print("move_to(text_batch, 'meta'):")
    show_devices(move_to(text_batch, "meta"))
    with fake_gpu():
        on_gpu = move_to(text_batch, "cuda")
    print("move_to(text_batch, 'cuda') on a fake GPU: ids on", on_gpu["ids"].device, "| lengths on", on_gpu["extra"]["lengths"].device)
    on_cpu = move_to(text_batch, "cpu")
    print("move_to(text_batch, 'cpu')['ids'] is text_batch['ids']:", on_cpu["ids"] is text_batch["ids"],
          "| the dict itself is new:", on_cpu is not text_batch)

# %% [markdown]
# Once `PositionalEncoding` passes, look at its table — each column a sine or cosine whose wavelength
# grows with the column, so that every position gets its own pattern — and watch its `forward` on meta and
# on a fake GPU with section 2's and section 4's modes:

# %%
with uses_your_answer("PositionalEncoding"):
    encoding = PositionalEncoding(64, max_len=128)
    plot_heatmap(encoding.pe.T, xlabel="position p", ylabel="column of pe (2i: sine, 2i + 1: cosine)",
                 title="PositionalEncoding(64, max_len=128).pe, transposed", colorbar="value")
    print("parameters:", sum(p.numel() for p in encoding.parameters()), "| state_dict keys:", list(encoding.state_dict()),
          "| buffers:", [name for name, _ in encoding.named_buffers()])
    for target in ("meta", "cuda"):
        module, x = PositionalEncoding(64, max_len=128), torch.randn(2, 10, 64)
        with fake_gpu() if target == "cuda" else contextlib.nullcontext():
            module.to(target)
            x = x.to(target)
            with WatchCreation() as watch, CountSyncs() as syncs:
                out = module(x)
        print(f"on {target:4s}: output {tuple(out.shape)} on {out.device} | tensors created: {watch.created or 'none'}"
              f" | waits: {sum(syncs.counts.values())}")

# %% [markdown]
# Once `find_max_batch_size` passes, give it a stand-in for a training step that raises
# `torch.OutOfMemoryError` above a size you choose, and watch which sizes it tries:

# %%
with uses_your_answer("find_max_batch_size"):
    def stand_in_step(fits_up_to):
        """A try_batch that records each size it is given and 'runs out of memory' above fits_up_to."""
        tried = []

        def try_batch(b):
            tried.append(b)
            if b > fits_up_to:
                raise torch.OutOfMemoryError(f"CUDA out of memory (a stand-in: only {fits_up_to} fit)")

        return try_batch, tried


    for start, limit, fits_up_to in [(1, 10, 6), (1, 4096, 300), (8, 100, 1000), (16, 4096, 1500)]:
        try_batch, tried = stand_in_step(fits_up_to)
        found = find_max_batch_size(try_batch, start=start, limit=limit)
        bound = math.ceil(math.log2(limit / start)) + math.ceil(math.log2(limit - start + 1)) + 1
        print(f"start={start:2d} limit={limit:4d}, fits up to {fits_up_to:4d}: found {found:4d} in {len(tried):2d} tries "
              f"(at most {bound}): {tried}")

# %% [markdown]
# And with section 5's meta count as the judge: the largest batch of the recorded MLP whose Adam step would
# fit in an imagined 1 GiB GPU (only the five parts counted on meta — a real GPU needs more; this
# stand-in only shows the search).

# %%
with uses_your_answer("find_max_batch_size"):
    def fits_in_budget(budget_bytes):
        def try_batch(b):
            if sum(step_memory_on_meta(make_recorded_mlp, b, MLP["mlp_width"]).values()) > budget_bytes:
                raise torch.OutOfMemoryError(f"batch {b} needs more than the imagined {budget_bytes / 2**30:.0f} GiB")
        return try_batch


    largest = find_max_batch_size(fits_in_budget(2**30), start=256, limit=65536)
    print(f"largest batch within 1 GiB by the meta count: {largest}")
    for b in (largest, largest + 1):
        print(f"   batch {b}: {sum(step_memory_on_meta(make_recorded_mlp, b, MLP['mlp_width']).values()):,} bytes "
              f"(the budget: {2**30:,})")
