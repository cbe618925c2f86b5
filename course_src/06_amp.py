# %% [markdown]
# # 06 · Mixed precision: float16, bfloat16, autocast and the gradient scaler
#
# A float32 number takes 4 bytes; float16 and bfloat16 take 2. Half the bytes means half the memory for
# activations and half the traffic through memory, and on GPUs with matrix units for 16-bit formats the
# matrix products themselves run much faster. The price is paid in **range** and **precision**: a
# 16-bit format cannot hold every number a float32 can, and training is full of numbers at the edges —
# gradients so small that they round to zero, activations so large that they become `inf`, updates so
# small next to their weights that they vanish.
#
# *Mixed* precision keeps both: the weights and the optimizer stay in float32, and only the operations
# that gain from it run in 16 bits. `torch.autocast` chooses those operations, and for float16 a
# `GradScaler` keeps small gradients from vanishing. This chapter takes both apart, and measures what
# they cost and save on the machine that runs it. It ends with a study of the gradient norms that a
# training run produces under three weight initialisations — what your code of the first exercise
# computes.
#
# **In this chapter** you will
# 1. read float32, float16 and bfloat16 from `torch.finfo` — bits, range, precision — and watch overflow,
#    rounding and underflow happen;
# 2. count the gradient entries of a small model that float16 turns into exact zeros, and how many survive
#    when the loss is multiplied by 2<sup>16</sup> first;
# 3. run `torch.autocast` on the CPU in bfloat16 and float16, print the dtype of every intermediate, and
#    compare the CPU's rules with CUDA's; see why a model converted with `.half()` stops learning;
# 4. take `GradScaler` apart — scale, inf/NaN check, skipped step, backoff and growth — and meet its traps:
#    clipping before unscaling, the scheduler warning, gradient accumulation;
# 5. see why bfloat16 needs no scaler, and when to choose which format;
# 6. measure speed and memory on this machine;
# 7. log gradient norms before clipping, in one complete mixed-precision training loop;
# 8. write two graded exercises — the gradient norm study (`total_grad_norm`, `init_weights_`,
#    `grad_norm_study`) and `amp_train_step` — and put them to work.

# %% nbgrader=readonly id=opening
import copy
import math
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from coursekit import seed_everything, start_chapter
from coursekit.claims import between, over, under
from coursekit.plots import plot_curves, plot_log_curves, plot_number_formats, plot_scale_over_steps
from coursekit.practice import uses_your_answer
from graders import check

device = start_chapter("06_amp")

# %% [markdown]
# Many numbers in this chapter are counts of values that round one way or the other, and the last bits of
# a sum depend on the CPU's kernels and on how many threads share it. So that every machine prints the same
# numbers, the chapter runs torch on one CPU thread (as chapter 05 did, for other reasons), computes the
# gradients whose rounding it counts in float64 (section 2 says why), and prints what depends on how a CPU
# rounds its float16 and bfloat16 products only as far as every machine agrees: to fewer digits, or as the
# bound it keeps ("over 50"); where a section measures speed, it says so.

# %%
torch.set_num_threads(1)
print("torch CPU threads for this chapter:", torch.get_num_threads())

# %% [markdown]
# ## 1. Three floating-point formats
#
# A floating-point number is a sign, an **exponent** and a **mantissa** (the significant bits): the
# value is ±1.mantissa × 2<sup>exponent</sup>. The exponent bits decide the *range* — how large and how
# small a number can be; the mantissa bits decide the *precision* — how close two neighbouring numbers
# are. `torch.finfo` tells both for every floating-point dtype:
#
# * `eps` — the gap between 1.0 and the next larger number: the relative precision (`-log2(eps)` is the
#   number of mantissa bits);
# * `smallest_normal` (also called `tiny`) — the smallest number with the full precision;
# * below it, down to `smallest_normal × eps`, the **subnormal** numbers: still not zero, but with fewer
#   and fewer significant bits (gradual underflow); below those, only zero;
# * `max` — the largest finite number; anything larger becomes `inf`.

# %%
FORMATS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def format_facts(dtype):
    info = torch.finfo(dtype)
    mantissa = round(-math.log2(info.eps))
    return {"bits": info.bits, "exponent bits": info.bits - 1 - mantissa, "mantissa bits": mantissa,
            "eps": info.eps, "smallest subnormal": info.smallest_normal * info.eps,
            "smallest normal": info.smallest_normal, "max": info.max}


facts = {name: format_facts(dtype) for name, dtype in FORMATS.items()}
print(f"{'':9s} {'bits':>4s} {'exp':>4s} {'mant':>4s} {'eps':>10s} {'smallest subnormal':>19s} "
      f"{'smallest normal':>16s} {'max':>10s}")
for name, f in facts.items():
    print(f"{name:9s} {f['bits']:4d} {f['exponent bits']:4d} {f['mantissa bits']:4d} {f['eps']:10.3e} "
          f"{f['smallest subnormal']:19.3e} {f['smallest normal']:16.3e} {f['max']:10.3e}")
for name, dtype in FORMATS.items():        # the smallest subnormal exists; half of it is zero
    sub = torch.tensor(facts[name]["smallest subnormal"], dtype=torch.float64)
    print(f"{name:9s}: smallest subnormal -> {sub.to(dtype).item():.3e}, half of it -> {(sub / 2).to(dtype).item()}")

# %%
plot_number_formats(facts, title="the magnitudes each format can hold")

# %% [markdown]
# float16 spends 5 bits on the exponent and 10 on the mantissa: its numbers end at 65504, and its normal
# numbers start at 6.1 × 10<sup>-5</sup>. bfloat16 ("brain float") has float32's 8 exponent bits and keeps
# only 7 mantissa bits: the **range of float32**, with a precision of about two decimal digits. Three
# things happen at the edges — watch each:

# %%
half, bf16 = torch.float16, torch.bfloat16


def show(expression, value):
    print(f"{expression:38s} -> {value}")


print("overflow: too large becomes inf")
show("torch.tensor(70000.0).half()", torch.tensor(70000.0).to(half).item())
show("torch.tensor(70000.0).bfloat16()", torch.tensor(70000.0).to(bf16).item())
activation = torch.tensor(300.0, dtype=half)
show("300² in float16", (activation * activation).item())
show("(300² - 300²) in float16", (activation * activation - activation * activation).item())
print("rounding: only so many significant bits")
show("2049 in float16", torch.tensor(2049.0).to(half).item())
show("257 in bfloat16", torch.tensor(257.0).to(bf16).item())
show("2048 + 1 in float16", (torch.tensor(2048.0, dtype=half) + 1).item())
for name, dtype in FORMATS.items():
    show(f"1 + eps/2 in {name}, minus 1", (torch.tensor(1.0, dtype=dtype) + facts[name]["eps"] / 2 - 1).item())
print("underflow: too small becomes subnormal, then zero")
for value in (1e-5, 1e-7, 1e-8):
    show(f"{value:g} in float16 / in bfloat16",
         f"{torch.tensor(value).to(half).item():.4e} / {torch.tensor(value).to(bf16).item():.4e}")

# %% [markdown]
# An `inf` is contagious: `inf - inf` is NaN, and one NaN in a sum makes the sum NaN — one overflowing
# activation can turn a whole loss into NaN. Rounding decides whether small things still count: in
# float16 `2048 + 1` is `2048`, because the next float16 number after 2048 is 2050. Below float16's smallest
# normal number the subnormals are evenly spaced, 2<sup>-24</sup> ≈ 6 × 10<sup>-8</sup> apart: 10<sup>-5</sup> keeps 8
# significant bits instead of 11 (and happens to land on the same value as in bfloat16), 10<sup>-7</sup> becomes
# 2 × 2<sup>-24</sup>, 19 % too large, and 10<sup>-8</sup> is zero. bfloat16 has 8 significant bits everywhere, and
# is nowhere near its underflow.
#
# ## 2. Small gradients underflow in float16
#
# Are gradients ever that small? Late in training, when the loss is small, they are. Below, a small MLP
# learns to imitate another one of the same shape (a *teacher*, whose outputs are the targets), with Adam,
# for 200 steps; then we look at its gradients as float32 numbers. The training and the gradients are
# computed in float64 and only rounded to float32 at the end: late in training a gradient entry is a small
# difference of much larger sums, so computed in float32 its last digits — and the counts below — change
# with the CPU's kernels, while float64's differences are far too small to survive the rounding to float32.
# Everything in this section runs on the CPU: which numbers a format can hold does not depend on the device.

# %%
def make_tanh_mlp():
    return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


# In float64, rounded to float32 at the end. Trained and differentiated in float32, these gradients differed
# between CPU kernels in their last digits, and so did the next cell's counts (5 or 4 entries subnormal after
# scaling, a median rounding error of 9.4e-3 or 9.3e-3). Adam grows rounding differences, but from float64's
# they stay far below float32's resolution: between kernels the trained weights differed by at most 7e-16,
# the gradients by at most 3e-9 of themselves (median 2e-13), and rounded to float32 the gradients were the
# same bit for bit under every kernel set tried (AVX-512, AVX2, scalar, 1 and 2 threads).
seed_everything(0)
generator = torch.Generator().manual_seed(0)
x_teach64 = torch.randn(256, 16, generator=generator, dtype=torch.float64)   # drawn on the CPU, seeded
teacher = make_tanh_mlp().double()
with torch.no_grad():
    y_teach64 = teacher(x_teach64)
student64 = make_tanh_mlp().double()
optimizer = torch.optim.Adam(student64.parameters(), lr=3e-3)
for step in range(200):
    optimizer.zero_grad()
    loss = F.mse_loss(student64(x_teach64), y_teach64)
    loss.backward()
    optimizer.step()
optimizer.zero_grad()
loss = F.mse_loss(student64(x_teach64), y_teach64)
loss.backward()
grads = torch.cat([p.grad.flatten() for p in student64.parameters()]).float()   # the gradients we study
student = copy.deepcopy(student64).float()            # the same student in float32, for the cells below
x_teach, y_teach = x_teach64.float(), y_teach64.float()
print(f"loss after 200 steps: {loss.item():.2e}")
print(f"{grads.numel()} gradient entries, {int((grads != 0).sum())} of them non-zero; "
      f"|gradient|: median {grads.abs().median().item():.1e}, largest {grads.abs().max().item():.1e}")

# %% [markdown]
# The median gradient entry is around 10<sup>-6</sup> — below float16's smallest *normal* number. Cast all of
# them to float16, and count what happens; then the same after multiplying them by 2<sup>16</sup> = 65536
# first, which is what multiplying the **loss** by 2<sup>16</sup> does to every gradient (backward is linear
# in the loss).

# %%
def cast_report(values, dtype, label):
    """How many non-zero values become exactly zero, subnormal or inf when cast to dtype."""
    cast = values.to(dtype)
    info = torch.finfo(dtype)
    nonzero = values != 0
    zero = int((nonzero & (cast == 0)).sum())
    subnormal = int(((cast != 0) & (cast.float().abs() < info.smallest_normal)).sum())
    inf = int(torch.isinf(cast).sum())
    kept = cast.float() != 0
    error = ((cast.float()[kept] - values[kept]) / values[kept]).abs().median().item()
    print(f"{label:34s} exactly zero {zero:5d} | subnormal {subnormal:5d} | inf {inf:5d} | "
          f"median relative rounding error {error:.1e}")


print(f"of {int((grads != 0).sum())} non-zero gradient entries, cast to float16:")
cast_report(grads, half, "as they are")
cast_report(grads * 2**16, half, "multiplied by 2**16 first")
cast_report(grads * 2**30, half, "multiplied by 2**30 first")

# %% [markdown]
# As they are, 182 entries become **exactly zero** — their parameters would get no update at all — and
# almost all of the rest are subnormal, rounded with a large relative error. Multiplied by 2<sup>16</sup>
# first, none is lost and all but 11 are normal float16 numbers, with float16's usual rounding error of
# about 10<sup>-4</sup>. Multiplied by 2<sup>30</sup>, the largest ones overflow to `inf`: the scale must be large
# enough for the smallest gradients and small enough for the largest. That is the whole idea of **loss
# scaling**, and since the right scale changes during training, `GradScaler` (section 4) adjusts it as it
# goes.
#
# Casting a float32 gradient is only a model of what happens. In real mixed-precision training the
# backward pass itself runs in float16 — every matrix product of backward has float16 inputs — so the
# small values are lost on the way. The same student (its float32 copy, as mixed-precision training keeps
# it), with its forward and backward under float16 autocast (section 3), without and with the loss
# multiplied by 2<sup>16</sup>:

# %%
def zero_gradients_under_autocast(model, dtype, scale):
    """Entries of the parameters' gradients that come out exactly zero with forward and backward in dtype."""
    model.zero_grad()
    with torch.autocast("cpu", dtype=dtype):
        loss = F.mse_loss(model(x_teach), y_teach)
    (loss * scale).backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    return int((grads == 0).sum()), grads.dtype


# How many come out zero without the scale depends on how the CPU's float16 kernels round (126 here, 132
# with ATen's scalar kernels), so that count is printed as the bound it keeps; with the scale, none is lost.
zeros, dtype = zero_gradients_under_autocast(student, half, 1)
print(f"float16 autocast, loss x     1: {over(zeros, 50)} gradient entries exactly zero (gradients stored in {dtype})")
zeros, dtype = zero_gradients_under_autocast(student, half, 2**16)
print(f"float16 autocast, loss x 65536: {zeros} gradient entries exactly zero (gradients stored in {dtype})")

# %% [markdown]
# The gradients arrive in float32 — the parameters are float32, as section 3 explains — but the values
# were computed by float16 products, and without scaling some of them are already zero (how many exactly
# depends on how the CPU's float16 kernels round).
#
# ## 3. `torch.autocast`
#
# Inside `with torch.autocast(device_type, dtype=...)`, PyTorch looks at every operation before it runs.
# Operations on a list that profit from low precision — matrix products, `linear`, convolutions — cast
# their floating-point inputs to `dtype` and return results in `dtype`. Operations on a second list,
# numerically delicate ones, are cast to float32. Everything else runs in the dtype of its inputs. The
# parameters are never changed: a `Linear`'s float32 weight is cast on the fly (and the cast copy reused
# within the block). Each device type has its own lists and its own default `dtype`:

# %%
print("default autocast dtype on cpu: ", torch.get_autocast_dtype("cpu"))
print("default autocast dtype on cuda:", torch.get_autocast_dtype("cuda"))

# %% [markdown]
# Those are the defaults; both devices accept both dtypes, and this chapter passes `dtype=` explicitly
# every time. Now a small forward pass on the CPU under autocast, once in bfloat16 and once in float16,
# with the dtype of each intermediate result:

# %%
def autocast_dtypes(device_type, dtype):
    """The dtype of each step of a small forward pass under autocast on device_type."""
    seed_everything(0)
    layer, norm = nn.Linear(8, 8).to(device_type), nn.LayerNorm(8).to(device_type)
    x = torch.randn(4, 8).to(device_type)
    targets, labels = torch.randn(4, 8).to(device_type), torch.tensor([0, 1, 2, 3]).to(device_type)
    out = {}
    with torch.autocast(device_type, dtype=dtype):
        out["input x"] = x
        h = out["h = linear(x)"] = layer(x)
        out["x @ x.T"] = x @ x.T
        out["relu(h)"] = torch.relu(h)
        out["h + x (float32 x)"] = h + x
        out["layer_norm(h)"] = norm(h)
        out["softmax(h)"] = torch.softmax(h, dim=-1)
        out["log_softmax(h)"] = F.log_softmax(h, dim=-1)
        out["softmax(x) (float32 x)"] = torch.softmax(x, dim=-1)
        out["exp(h)"] = h.exp()
        out["h.sum()"] = h.sum()
        out["mse_loss(h, targets)"] = F.mse_loss(h, targets)
        out["cross_entropy(h, labels)"] = F.cross_entropy(h, labels)
    out["layer.weight (the parameter)"] = layer.weight
    return {name: str(t.dtype).removeprefix("torch.") for name, t in out.items()}


on_cpu = {name: autocast_dtypes("cpu", dtype) for name, dtype in (("bfloat16", bf16), ("float16", half))}
print(f"{'on the CPU, under autocast':32s} {'dtype=bfloat16':>15s} {'dtype=float16':>15s}")
for step in on_cpu["bfloat16"]:
    print(f"{step:32s} {on_cpu['bfloat16'][step]:>15s} {on_cpu['float16'][step]:>15s}")

# %% [markdown]
# What this CPU run shows (**verified here**):
#
# * `linear` and `@` return the low-precision dtype; the parameter itself stays float32.
# * `relu`, `layer_norm`, `softmax`, `log_softmax`, `exp` and `sum` are on neither CPU list: they run in
#   the dtype of their input, so after a `linear` they run in 16 bits — and `softmax` of a float32 input
#   stays float32.
# * Adding a float16/bfloat16 tensor to a float32 one gives float32: ordinary type promotion, which
#   autocast does not touch.
# * `mse_loss` and `cross_entropy` return float32: they are on the CPU's float32 list.
# * float16 and bfloat16 behave the same; the CPU documentation says that float16 shares bfloat16's lists.
#
# What the **PyTorch documentation says** (the *Autocast Op Reference* of `torch.amp`; not verified on a
# GPU here): on CUDA the float32 list is longer and includes `softmax`, `log_softmax`, `layer_norm`,
# `sum`, `exp`, `log`, `pow` and the losses, so on a GPU the same forward gives float32 for those rows;
# on the CPU, the float32 list holds the losses (`mse_loss`, `nll_loss`, `cross_entropy_loss`,
# `binary_cross_entropy_with_logits`, ...), some 3-d pooling and the padding ops, FFTs and linear algebra, but not
# `softmax`, `log_softmax`, `layer_norm` or `sum`. On CUDA, float16 is the usual autocast dtype (with a
# `GradScaler`); on the CPU the default is bfloat16. When the kernel runs on a GPU, the next cell prints
# the same table there:

# %% tags=nbval-ignore-output
if device.type == "cuda":
    on_gpu = {name: autocast_dtypes("cuda", dtype) for name, dtype in (("bfloat16", bf16), ("float16", half))}
    print(f"{'on this GPU, under autocast':32s} {'dtype=bfloat16':>15s} {'dtype=float16':>15s}")
    for step in on_gpu["float16"]:
        print(f"{step:32s} {on_gpu['bfloat16'][step]:>15s} {on_gpu['float16'][step]:>15s}")
else:
    print(f"this kernel runs on {device.type}: no GPU to compare with (the table above is the CPU's)")

# %% [markdown]
# Three rules of use follow from the lists:
#
# * put **only the forward pass and the loss** inside the `with` block. Backward runs outside it: each
#   operation's backward already runs in the dtype its forward used;
# * the gradients land in `.grad` with the parameters' dtype, float32, and the optimizer updates float32
#   weights — the **master weights**;
# * an operation on the float32 list is protected only when it is reached under autocast; code after the
#   block runs in whatever dtype its inputs have.
#
# ### Trap: `model.half()` for training
#
# Why not convert the whole model to float16 and be done? Then the weights themselves are float16, and an
# update `lr × gradient` is added to a float16 weight. When the update is smaller than half the gap
# between that weight and its neighbouring float16 number — about `|w| × 2^-11` — the sum rounds back to
# `w`: the weight does not change. Section 2's student, one SGD step with `lr=0.1` from the same float16
# gradients, applied once to float16 weights and once to float32 master weights:

# %%
half_model = copy.deepcopy(student).half()
half_model.zero_grad()
F.mse_loss(half_model(x_teach.half()), y_teach.half()).backward()
gradients = [p.grad for p in half_model.parameters()]
nonzero = sum(int((g != 0).sum()) for g in gradients)
master = [p.detach().float() for p in student.parameters()]      # float32 copies of the same weights
lr = 0.1
unchanged_half = unchanged_master = 0
with torch.no_grad():
    for p, g, w in zip(half_model.parameters(), gradients, master):
        moving = g != 0                                   # only weights that have an update to make
        # Exact equality on purpose: the question is whether the update survives rounding at all.
        unchanged_half += int(((p - lr * g) == p)[moving].sum())
        unchanged_master += int(((w - lr * g.float()) == w)[moving].sum())
# The counts depend on how the CPU's float16 kernels round (5175 non-zero gradients, 5151 and 17 weights
# unchanged here; 5169, 5145 and 17 with ATen's scalar kernels), so they are printed as the shares they keep.
total = sum(p.numel() for p in half_model.parameters())
print(f"weights with a non-zero float16 gradient: {over(100 * nonzero / total, 90, ' %')} of {total}")
print(f"of those, left unchanged by the step: with float16 weights {over(100 * unchanged_half / nonzero, 95, ' %')}, "
      f"with float32 master weights {under(100 * unchanged_master / nonzero, 1, ' %')}")

# %% [markdown]
# With float16 weights almost every update is rounded away, step after step, and training stalls
# silently — no error, no NaN, just a loss that stops falling. Mixed precision keeps the weights (and
# the optimizer's state) in float32 and casts only inside the operations; the few updates the float32
# weights also lose are below float32's own gap, about `|w| × 2^-24`.
#
# ## 4. `GradScaler`
#
# A `GradScaler` automates section 2's fix, and finds the scale by itself. Its four calls, in the order of
# a training step:
#
# 1. `scaler.scale(loss)` — returns the loss multiplied by the current scale `S`; call `.backward()` on
#    that, so every gradient comes out `S` times too large (and above float16's underflow);
# 2. `scaler.unscale_(optimizer)` — divides the gradients of the optimizer's parameters by `S`, in place,
#    and notes whether any of them is `inf` or NaN;
# 3. `scaler.step(optimizer)` — calls `optimizer.step()` only if no gradient was inf/NaN, otherwise
#    **skips** the step (it calls `unscale_` itself if you did not);
# 4. `scaler.update()` — after a skipped step multiplies `S` by `backoff_factor`; after `growth_interval`
#    steps in a row without inf/NaN, multiplies it by `growth_factor`.
#
# The defaults, and the scaler's state after construction (`torch.amp.GradScaler(device_type)` — the CPU
# has one too):

# %%
scaler = torch.amp.GradScaler(device.type)
print("scale:", scaler.get_scale(), "| state:", scaler.state_dict())

# %% [markdown]
# A scale that starts at 2<sup>16</sup>, halves after every overflow, and doubles after 2000 good steps: it
# settles just below the largest value that does not overflow, and probes upward again now and then,
# paying one skipped step each time. To see it move within a few dozen steps, the run below starts it at
# 2<sup>20</sup> with `growth_interval=5`, trains a small ReLU MLP in float16 on `device`, and at step 40 makes
# one gradient `inf` on purpose (in a real run, a bad batch or a diverging loss does that). It prints every
# change of the scale up to the training's first overflow of its own, then checks the rule at every step;
# the picture below shows the whole run.

# %%
def make_relu_mlp():
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))


generator = torch.Generator().manual_seed(1)
x_reg = torch.randn(256, 16, generator=generator)
y_reg = torch.sin(x_reg[:, :1]) + x_reg[:, 1:2] ** 2                # a regression target, made on the CPU
x_reg, y_reg = x_reg.to(device), y_reg.to(device)


def batch_at(step, batch_size=32):
    start = (step * batch_size) % len(x_reg)
    return x_reg[start:start + batch_size], y_reg[start:start + batch_size]


def stepped_hook(optimizer):
    """A list that gets an entry each time optimizer.step() really runs, and the handle to remove the hook."""
    ran = []
    return ran, optimizer.register_step_pre_hook(lambda *_: ran.append(True))


seed_everything(0)
model = make_relu_mlp().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler(device.type, init_scale=2.0**20, growth_interval=5)
INJECT_AT = 40
scales, skipped, losses = [], [], []
for step in range(60):
    inputs, targets = batch_at(step)
    optimizer.zero_grad()
    with torch.autocast(device.type, dtype=torch.float16):
        loss = F.mse_loss(model(inputs), targets)
    scaler.scale(loss).backward()
    if step == INJECT_AT:
        model[0].weight.grad[0, 0] = float("inf")                  # the injected overflow
    scales.append(scaler.get_scale())
    ran, hook = stepped_hook(optimizer)
    scaler.step(optimizer)
    hook.remove()
    scaler.update()
    skipped.append(not ran)
    losses.append(loss.item())
after = scales[1:] + [scaler.get_scale()]                          # the scale after each step


def rule_broken_at(scales, after, skipped, growth_interval):
    """The steps at which the scale did not follow the rule: halve after a skipped step, double after
    growth_interval good steps in a row, stay otherwise. (Powers of two: halving and doubling are exact.)"""
    good_in_a_row, broken = 0, []
    for step, (before, now, was_skipped) in enumerate(zip(scales, after, skipped)):
        if was_skipped:
            expected, good_in_a_row = before / 2, 0
        else:
            good_in_a_row += 1
            expected = before * 2 if good_in_a_row == growth_interval else before
            good_in_a_row %= growth_interval
        if now != expected:
            broken.append(step)
    return broken


# Up to the training's first overflow of its own, every step's fate is the same on any CPU: the largest scale
# at which each of those steps' float16 backward stays finite (measured by bisection) was at least 12 %
# away from the scale the step ran at, and ATen's different kernels moved it by at most 0.07 %. Later
# steps came within 0.2 % of it: on another CPU they overflow elsewhere, so they are left to the picture.
first_good = skipped.index(False)
first_own = next(step for step in range(first_good, len(skipped)) if skipped[step])
for step in range(first_own + 1):
    if after[step] != scales[step]:
        change = "skipped, scale halved" if skipped[step] else "5 good steps in a row, scale doubled"
        print(f"step {step:2d}: scale 2**{math.log2(scales[step]):.0f} -> 2**{math.log2(after[step]):.0f} ({change})")
print(f"after step {first_own}, which steps overflow depends on how this machine's kernels round float16 "
      f"products (the picture shows this run's)")
injected = "skipped, scale halved" if skipped[INJECT_AT] and after[INJECT_AT] == scales[INJECT_AT] / 2 else "NOT skipped"
print(f"step {INJECT_AT} (the injected inf): {injected}")
broken = rule_broken_at(scales, after, skipped, growth_interval=5)
print(f"at all {len(skipped)} steps, a skipped step halved the scale, the 5th good step in a row doubled it and no "
      f"other step changed it: {'true' if not broken else f'false, at steps {broken}'}")

# %%
plot_scale_over_steps(scales, skipped, losses=losses, notes={INJECT_AT: "inf injected"},
                      title=f"GradScaler(init_scale=2**20, growth_interval=5), float16 on {device.type}")

# %% [markdown]
# Read the picture from the left: the first steps overflow at 2<sup>20</sup> and the following scales, each
# step skipped and the scale halved, until the scaled gradients fit in float16. Then the
# sawtooth: five good steps, the scale doubles; when a doubling goes one step too far, the next step
# overflows and the scale halves again. The injected `inf` at step 40 costs one skipped step and one
# halving, like any natural overflow. Where the later teeth fall is a matter of small margins — some steps
# stayed finite with less than 0.2 % of the scale to spare — so on another CPU, whose float16 products round
# a little differently, they fall elsewhere; the first steps, the injected overflow and the rule are the
# same everywhere. A skipped step changes nothing: no parameter moves and the optimizer's state stays as it
# was (Adam's step count included); only the scale changes. The loss below
# is the unscaled loss (the scaled one is only handed to backward).
#
# ### Trap: clipping before `unscale_`
#
# Between backward and `scaler.step`, the gradients in `.grad` are still multiplied by the scale. Any
# code that reads or changes them there — clipping, logging a norm — sees numbers `S` times too large.
# Clipping them to `max_norm` then leaves, after `scaler.step` unscales them, a gradient of norm
# `max_norm / S`. One step from the same weights, with `max_norm=0.1` and a scale of 2<sup>12</sup>, clipped
# before and after `unscale_`:

# %%
SCALE = 2.0**12                                                   # small enough that this step does not overflow


def one_clipped_step(unscale_first, max_norm=0.1, lr=0.1):
    seed_everything(0)
    model = make_relu_mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scaler = torch.amp.GradScaler(device.type, init_scale=SCALE)
    before = [p.detach().clone() for p in model.parameters()]
    inputs, targets = batch_at(0)
    optimizer.zero_grad()
    with torch.autocast(device.type, dtype=torch.float16):
        loss = F.mse_loss(model(inputs), targets)
    scaler.scale(loss).backward()
    if unscale_first:
        scaler.unscale_(optimizer)
    seen = nn.utils.clip_grad_norm_(model.parameters(), max_norm)    # returns the norm before clipping
    scaler.step(optimizer)
    scaler.update()
    update = torch.linalg.vector_norm(torch.cat([(p - b).flatten() for p, b in zip(model.parameters(), before)]))
    return seen.item(), update.item()


wrong_seen, wrong_update = one_clipped_step(unscale_first=False)
right_seen, right_update = one_clipped_step(unscale_first=True)
# The norms to 3 significant digits, the updates and their ratio to 2. Float16 kernels that add up a product
# in another order round some of its results the other way, each by up to 2^-11 of itself: between ATen's
# kernels here that moved the first norm in its 8th digit (11522.34375 against 11522.34473), and a CPU
# whose oneDNN float16 kernels differ more moves it further. The ratio is 4,090 rather than 4,096 because
# every entry of the small update is rounded against its weight; its last digits belong to those roundings.
ratio = right_update / wrong_update
print(f"clip before unscale_: clipping saw a norm of {wrong_seen:8.3g}; the update's norm {wrong_update:.1e}")
print(f"unscale_, then clip:  clipping saw a norm of {right_seen:8.3g}; the update's norm {right_update:.1e}")
print(f"the update was about {float(f'{ratio:.2g}'):,.0f} times too small (the scale: {SCALE:,.0f})")

# %% [markdown]
# Nothing fails: training simply moves `S` times slower — here 4096 times, with the default scale 65536
# times — and since the scale changes during training, so does the slowdown. The fix is the order:
# `scaler.unscale_(optimizer)`, then clip, then `scaler.step` (which sees that `unscale_` was called and
# does not unscale twice). The same goes for logging a gradient norm: read it after `unscale_`.
#
# ### Trap: the scheduler warning after a skipped first step
#
# A learning-rate scheduler checks, at its first `step()`, that `optimizer.step()` has run before it.
# When the scaler skips the very first optimizer step — likely, since the first scale is a guess — the
# scheduler warns. The warning is captured here and printed:

# %%
seed_everything(0)
model = make_relu_mlp().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
scaler = torch.amp.GradScaler(device.type, init_scale=2.0**24)       # far too large: the first step overflows
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for step in range(2):
        inputs, targets = batch_at(step)
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.float16):
            loss = F.mse_loss(model(inputs), targets)
        scaler.scale(loss).backward()
        ran, hook = stepped_hook(optimizer)
        scaler.step(optimizer)
        hook.remove()
        scaler.update()
        scheduler.step()
        print(f"step {step}: optimizer.step() ran: {bool(ran)}; learning rate now {scheduler.get_last_lr()[0]}")
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")

# %% [markdown]
# The warning's advice — call `optimizer.step()` before `lr_scheduler.step()` — is already followed; the
# real cause is the skipped step. What happens is what it says: the scheduler advanced although the
# weights did not, so the schedule runs ahead of the training (here both steps were skipped, and the
# learning rates 0.05 and 0.025 were never used). The warning comes only at the scheduler's first step. For
# a schedule of thousands of steps, one or a few skipped steps at the start do not matter, and the warning
# can be ignored knowingly. If they do matter (a short warm-up, say), step the scheduler only when
# `optimizer.step()` ran — the pre-hook above tells.
#
# ### Gradient accumulation with a scaler
#
# Accumulating `k` micro-batches into one optimizer step (chapter 02) works with a scaler, under one rule:
# **one scale per optimizer step**. Every micro-batch's loss (divided by `k`) goes through
# `scaler.scale(...).backward()`, and the gradients add up, all multiplied by the same `S`; then, once, at
# the boundary: `unscale_`, clip, `step`, `update`. The trap is to treat each micro-batch as a step —
# unscaling each time, say:

# %%
seed_everything(0)
model = make_relu_mlp().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler(device.type)
optimizer.zero_grad()
try:
    for micro in range(2):
        inputs, targets = batch_at(micro, batch_size=16)
        with torch.autocast(device.type, dtype=torch.float16):
            loss = F.mse_loss(model(inputs), targets) / 2
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)                 # the trap: unscaling at every micro-batch
except RuntimeError as error:
    print("RuntimeError:", error)

# %% [markdown]
# It raises, which is the good case: unscaling half-accumulated gradients would mix scaled and unscaled
# values. (Calling `update()` at every micro-batch does not raise, and is as wrong: the scale could change
# between two micro-batches of one sum.) The right loop, compared with one big batch of the same data —
# 4 micro-batches of 16 against batches of 64, five optimizer steps each:

# %%
def train_accumulating(micro_batches, micro_size, steps=5, max_norm=1.0):
    seed_everything(0)
    model = make_relu_mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0**12, growth_interval=2)
    for step in range(steps):
        inputs, targets = batch_at(step, batch_size=micro_batches * micro_size)
        optimizer.zero_grad()
        for k in range(micro_batches):
            part = slice(k * micro_size, (k + 1) * micro_size)
            with torch.autocast(device.type, dtype=torch.float16):
                loss = F.mse_loss(model(inputs[part]), targets[part]) / micro_batches
            scaler.scale(loss).backward()                     # every micro-batch: the same scale
        scaler.unscale_(optimizer)                            # the boundary: once per optimizer step
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    return model, scaler.get_scale()


accumulated, scale_a = train_accumulating(micro_batches=4, micro_size=16)
one_batch, scale_b = train_accumulating(micro_batches=1, micro_size=64)
seed_everything(0)
start = make_relu_mlp().to(device)                            # the same seed: the starting weights
moved = max((p - q).abs().max().item() for p, q in zip(one_batch.parameters(), start.parameters()))
differ = max((p - q).abs().max().item() for p, q in zip(accumulated.parameters(), one_batch.parameters()))
print(f"scales at the end: {scale_a} and {scale_b}")
# The difference is rounding noise (1.0e-5 here), so it is printed as the bound it keeps. The tolerance: float16
# rounds each product's results to 11 significant bits, and 16-row micro-batches round where one 64-row batch
# does not, so a step's gradients can differ by about 2^-10 of themselves; 5 steps of lr 0.05 with gradients
# clipped to norm 1 move a weight by at most 0.25, so on any CPU the runs differ by at most about 2.5e-4.
# atol=1e-3 holds with room to spare and is still 160 times smaller than the 0.16 the weights moved.
print(f"largest change of a weight over the 5 steps: {moved:.2f}; largest difference between the two runs: "
      f"{under(differ, 1e-4)}")
torch.testing.assert_close(list(accumulated.parameters()), list(one_batch.parameters()), rtol=0, atol=1e-3)
print("assert_close(rtol=0, atol=1e-3) passed: the accumulated steps are the big-batch steps")

# %% [markdown]
# The two runs differ by less than 10<sup>-4</sup>, on weights that moved by up to 0.16: not bit for bit, because
# float16 products of 16 rows and of 64 rows round differently, but well within the tolerance.
#
# ## 5. bfloat16 needs no scaler
#
# bfloat16 has float32's exponent, so its smallest normal number is float32's, about 10<sup>-38</sup>: section
# 2's gradients are nowhere near it. The same counts as in section 2, for bfloat16:

# %%
print(f"of {int((grads != 0).sum())} non-zero gradient entries, cast to bfloat16:")
cast_report(grads, bf16, "as they are")
for scale in (1, 2**16):
    zeros, dtype = zero_gradients_under_autocast(student, bf16, scale)
    print(f"bfloat16 autocast, loss x {scale:5d}: {zeros:4d} gradient entries exactly zero")

# %% [markdown]
# Nothing underflows, with or without a scale. What bfloat16 gives up is precision: its rounding error
# (about 10<sup>-3</sup>, from 8 significant bits) is larger than float16's (10<sup>-4</sup>) — a scale cannot
# change that, since multiplying by a power of two changes only the exponent. In practice this is the
# precision of the *operations*; the weights and the updates stay in float32.
#
# So bfloat16 training is plain autocast: no scaler. Code that should run in both formats keeps one
# shape with a **disabled** scaler, whose calls do nothing: `scale` returns the loss unchanged, `unscale_`
# and `update` do nothing, and `step` calls `optimizer.step()` — always, even with inf/NaN gradients.

# %%
disabled = torch.amp.GradScaler(device.type, enabled=False)
loss = torch.tensor(0.5)
print("enabled:", disabled.is_enabled(), "| scale:", disabled.get_scale(), "| state_dict:", disabled.state_dict(),
      "| scale(loss) is loss:", disabled.scale(loss) is loss)

# %% [markdown]
# Which to choose:
#
# | | float16 + `GradScaler` | bfloat16, no scaler |
# |---|---|---|
# | range | up to 65504, normal numbers from 6.1 × 10<sup>-5</sup>: needs loss scaling | float32's |
# | precision | 11 significant bits | 8 significant bits |
# | extra machinery | scaler, skipped steps, unscale before touching gradients | none |
# | where it is fast | GPUs with float16 matrix units | GPUs with bfloat16 matrix units (ask `torch.cuda.is_bf16_supported(including_emulation=False)`), CPUs with bfloat16 instructions |
#
# Where the hardware has fast bfloat16, bfloat16 is the simpler choice: nothing to tune, no skipped steps,
# no overflow in the forward pass (section 1's `300²` is no problem). float16 remains the choice where
# only float16 is fast, and its extra precision can matter where small differences must survive. Both
# keep float32 master weights.
#
# ## 6. Speed and memory, measured here
#
# ### Memory: what autocast saves for backward
#
# Activations saved for backward are most of a training step's memory at large batch sizes (chapter 05,
# section 5). Under autocast, the saved copies are 16-bit — but autocast also saves the 16-bit **copies
# of the weights** that the products used. Counted as in chapter 05, with autograd's
# `saved_tensors_hooks`, on fake tensors (nothing allocated, nothing computed), for an MLP 256-1024-1024-10
# at two batch sizes; the parameters and the batch, which exist anyway, are not counted:

# %%
def saved_for_backward(batch_size, dtype):
    """Bytes that the forward of an MLP saves for backward (distinct storages), and what they are."""
    with FakeTensorMode():
        model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        x = torch.randn(batch_size, 256)
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            with torch.autocast("cpu", dtype=dtype or bf16, enabled=dtype is not None):
                model(x)
        existing = {id(t.untyped_storage()) for t in [*model.parameters(), x]}
        distinct = {}
        for t in saved:
            storage = t.untyped_storage()
            if id(storage) not in existing:
                distinct[id(storage)] = (storage.nbytes(), tuple(t.shape))
    return sum(n for n, _ in distinct.values()), sorted(shape for _, shape in distinct.values())


for batch_size in (64, 4096):
    for label, dtype in (("float32", None), ("bfloat16 autocast", bf16), ("float16 autocast", half)):
        n_bytes, shapes = saved_for_backward(batch_size, dtype)
        print(f"batch {batch_size:4d}, {label:17s}: {n_bytes / 2**20:6.2f} MiB saved; shapes {shapes}")

# %% [markdown]
# At batch 4096 the activations dominate and autocast saves 37 % (20 MiB instead of 32). At batch 64 it
# costs memory: the 2 MiB bfloat16 copy of the 1024 × 1024 weight outweighs the small activations. (The
# first layer's weight copy is not saved: no gradient flows to the batch.) And the float32 parameters,
# gradients and optimizer state are all still there. Mixed precision saves memory where activations are
# large — long sequences, big batches, big images.
#
# ### Speed: time per training step
#
# Measured now, on this kernel's device. On the CPU, on one thread, for an MLP of three layers at three
# widths (batch 128, median of 5 steps after 2 warm-up steps): float32, bfloat16 autocast, float16
# autocast. On a GPU, the same cell times a larger MLP with `torch.cuda.synchronize()` around each step
# (chapter 05) and reads the peak memory with `torch.cuda.max_memory_allocated()`.

# %% tags=nbval-ignore-output
def seconds_per_step(width, batch, dtype, on, repeats=5, warmup=2):
    """Median seconds of one training step (zero_grad, forward, loss, backward, step) of an MLP."""
    seed_everything(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10)).to(on)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width).to(on), torch.randint(0, 10, (batch,)).to(on)
    wait = torch.cuda.synchronize if on.type == "cuda" else (lambda: None)

    def step():
        optimizer.zero_grad()
        with torch.autocast(on.type, dtype=dtype or bf16, enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

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


MODES = {"float32": None, "bfloat16 autocast": bf16, "float16 autocast": half}
if device.type == "cuda":
    width, batch = 4096, 4096
    print(f"on the GPU: an MLP of width {width}, batch {batch}")
    for label, dtype in MODES.items():
        if dtype is bf16 and not torch.cuda.is_bf16_supported(including_emulation=False):
            print(f"   {label:18s} not timed: this GPU has no native bfloat16")
            continue
        torch.cuda.reset_peak_memory_stats()
        seconds = seconds_per_step(width, batch, dtype, device, repeats=10, warmup=3)
        print(f"   {label:18s} {1000 * seconds:8.3f} ms per step, peak memory "
              f"{torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB")
else:
    flags = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else {}
    print("this CPU's 16-bit instructions:", {k: flags.get(k) for k in ("avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16")})
    fast_float16 = bool(flags.get("avx512_fp16") or flags.get("amx_fp16"))
    for width in (64, 256, 1024):
        row = []
        for label, dtype in MODES.items():
            if dtype is half and width > 256 and not fast_float16:
                row.append(f"{label} not timed (no float16 instructions: too slow)")
                continue
            row.append(f"{label} {1000 * seconds_per_step(width, 128, dtype, torch.device('cpu')):.2f} ms")
        print(f"width {width:4d}: " + " | ".join(row))

# %% [markdown]
# On the CPU, autocast costs before it saves: every autocast operation first casts its inputs (the
# weights included) and produces 16-bit results that later float32 operations cast back, and whether the
# 16-bit products are fast depends on the CPU. On the machine that built this notebook — a CPU with
# AVX-512 bfloat16 instructions but no float16 ones, as printed above — bfloat16 autocast was slower than
# float32 at width 64, where the casts dominate, and faster from width 256 on, where the products do;
# float16 autocast was slower at every width, several times at width 256, because the CPU has no fast
# path for float16 products. On a CPU without bfloat16 instructions, expect bfloat16 autocast to be slower
# too. So on a CPU, autocast is first of all a way to save activation memory or to test mixed-precision
# code, and a speed-up only on some CPUs at some sizes — measure before you rely on it.
#
# On GPUs the balance is different — **as the documentation says**, not measured here: the `torch.amp`
# documentation states that ops like linear layers and convolutions are much faster in float16 or
# bfloat16, and PyTorch's AMP recipe and NVIDIA attribute this to the tensor cores of recent NVIDIA GPUs;
# 16-bit activations also halve the bytes that memory-bound operations move. No GPU figure appears in this
# chapter: none was measured (on a GPU, the cell above prints yours).
#
# ## 7. Monitoring gradients: norms before clipping
#
# `nn.utils.clip_grad_norm_(parameters, max_norm)` computes the total norm of all the gradients together
# (the 2-norm of the vector made of every gradient entry), and if it is larger than `max_norm` scales every
# gradient by `max_norm / norm`. It **returns the norm from before clipping**. That is the number to log:
# after clipping the norm is at most `max_norm` by construction, so it tells you nothing about the
# gradients.
#
# Here is one complete mixed-precision training loop on `device` with every habit in place —
# `zero_grad → forward and loss under autocast → scale(loss).backward() → unscale_ → clip (and log the
# norm) → step → update` — on section 4's data, with one bad batch at step 30 (targets 50 times too large,
# as a corrupted file might give). The same function trains in float16 with a scaler and in bfloat16 with a
# disabled one (`enabled=dtype == torch.float16`), without a line changed:

# %%
def train_amp_logged(steps=60, bad_step=30, max_norm=1.0, dtype=torch.float16):
    seed_everything(0)
    model = make_relu_mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    log = {"before": [], "after": [], "loss": []}
    for step in range(steps):
        inputs, targets = batch_at(step)
        if step == bad_step:
            targets = targets * 50
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=dtype):
            loss = F.mse_loss(model(inputs), targets)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        before = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        after = nn.utils.get_total_norm([p.grad for p in model.parameters()])
        scaler.step(optimizer)
        scaler.update()
        log["before"].append(before.item())
        log["after"].append(after.item())
        log["loss"].append(loss.item())
    return log


logs = {"float16": train_amp_logged(dtype=half), "bfloat16": train_amp_logged(dtype=bf16)}
# The medians as a range and the spike as its ratio to the median: 60 steps of 16-bit products, rounded
# differently on another CPU, move the third digit (the float16 median ranged from 1.606 to 1.624 when the
# initial scale was moved by up to 3 %, which changes which early step overflows), and bfloat16's 1.54 lies
# too close to where 2 digits would round it up. The count of inf/NaN
# norms is the same everywhere: two of the first three steps overflow at the default scale (which two
# depends on a 2.4 % margin), and after them no step but the bad one comes within 37 % of overflowing.
for name, log in logs.items():
    finite = [n for n in log["before"] if math.isfinite(n)]
    median, spike = statistics.median(finite), log["before"][30]
    at_bad = over(spike / median, 100, " times the median") if math.isfinite(spike) else spike
    print(f"{name:8s}: norm before clipping: median {between(median, 1, 2.5)}, at the bad step {at_bad}; "
          f"{len(log['before']) - len(finite)} steps with an inf/NaN norm | norm after "
          f"clipping: largest finite value {max(n for n in log['after'] if math.isfinite(n)):.4f}")
log = logs["bfloat16"]
plot_curves({"norm before clipping": log["before"], "norm after clipping": log["after"]},
            xlabel="step", ylabel="total gradient norm", logy=True, legend_outside=True,
            title="what to log: the norm before clipping (the bfloat16 run; the bad batch at step 30)")

# %% [markdown]
# The norm after clipping is a flat line at `max_norm` whenever clipping acts (it dips below only in the
# rare step whose gradient was small enough already); the norm before it shows the bad batch as a spike of
# more than 100 times the median — and in a real run it would show a slow drift toward explosion long before
# the loss turns NaN. In float16 the same bad batch looks different: its scaled gradients overflowed, the
# norm at step 30 is NaN, and the scaler skipped the step — a protection, but only against spikes large
# enough to overflow. Two details for logging: a skipped step's norm is inf or NaN — log it, but keep it out
# of running averages (`math.isfinite`); and read it after `unscale_`, or it is the scale times too large.
#
# The exercises come next; after them, a study of gradient norms made with your code, and the chapter's
# summary.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check gradient_norm_study my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=gradient_norm_study_task
# ## Exercise 1 · `gradient_norm_study` (14 points)
#
# Three functions that together record how large the gradients of a training run are. Write all three in
# the answer cell below (the checks need all three names defined; a function you have not written yet
# keeps its `raise NotImplementedError()`). After the exercises, you will run them on three
# initialisations.
#
# **(a)** `total_grad_norm(parameters, norm_type=2.0)` returns a Python float: the norm of all the
# gradients of `parameters` taken together, as `torch.nn.utils.get_total_norm` computes it over those
# gradients (within a relative 1e-5 for float32 gradients), without changing any gradient.
#
# * `parameters` is a tensor or any iterable of tensors — a generator included.
# * Tensors whose `.grad` is `None` are skipped; no gradients at all gives `0.0`.
# * `norm_type` is a float `>= 1` or `float("inf")`.
# * A NaN or inf gradient gives a NaN or inf result (not an error).
# * It must not call `clip_grad_norm_` or `get_total_norm`.
#
# **(b)** `init_weights_(model, scheme, generator=None)` initialises `model` in place and returns `model`:
#
# * for every module `m` of `model` with `isinstance(m, nn.Linear)` — each distinct module once, in
#   `model.modules()` order — it sets `m.weight` by `scheme`:
#   * `"xavier_uniform"`: `nn.init.xavier_uniform_`, gain 1;
#   * `"kaiming_normal"`: `nn.init.kaiming_normal_` with `mode="fan_in"`, `nonlinearity="relu"`;
#   * `"ones"`: every entry 1;
#
#   drawing from `generator` when one is given, so that the result equals those `nn.init` calls made on the
#   same generator in that order; and it sets `m.bias` (when present) to zeros.
# * Other modules are untouched.
# * An unknown scheme raises `ValueError`.
#
# **(c)** `grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal",
# "ones"), *, epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0)` returns a dict
# `{scheme: [norm per step]}`. For each scheme, in `schemes` order:
#
# * `model = make_model()` (on the CPU), then `init_weights_(model, scheme, torch.Generator().manual_seed(seed))`,
#   then `model.to(inputs.device, inputs.dtype)`, then `torch.optim.SGD(model.parameters(), lr=lr)`;
# * then for each epoch, for each consecutive batch `inputs[j:j + batch_size]`, `targets[j:j + batch_size]`
#   (no shuffling; the last batch may be smaller): zero the gradients, forward, `mse_loss`, backward,
#   record `total_grad_norm` of the model's parameters **before** clipping, `clip_grad_norm_(…, max_norm)`,
#   step.
#
# The dict has the schemes in `schemes` order, with `epochs * ceil(len(inputs) / batch_size)` floats for
# each.
#
# *Hint:* the p-norm of all entries together equals the p-norm of the vector of the per-tensor p-norms
# (for `inf` too), and `torch.linalg.vector_norm` computes both; a generator can be read only once.
# `nn.init`'s functions take `generator=`, and a `Linear` held by two parents appears once in
# `model.modules()`. In (c), use (a) and (b); section 7 shows why the norm is recorded before clipping.

# %% nbgrader=solution id=gradient_norm_study_answer
import torch
import torch.nn.functional as F
from torch import nn


def total_grad_norm(parameters, norm_type=2.0):
    """The norm_type-norm of all gradients of `parameters` together, as a Python float."""
    ### BEGIN SOLUTION
    from solutions.ch06_amp import total_grad_norm as reference

    return reference(parameters, norm_type)
    ### END SOLUTION


def init_weights_(model, scheme, generator=None):
    """Every nn.Linear of `model`: weight by `scheme`, bias zero; in place; returns `model`."""
    ### BEGIN SOLUTION
    from solutions.ch06_amp import init_weights_ as reference

    return reference(model, scheme, generator)
    ### END SOLUTION


def grad_norm_study(make_model, inputs, targets, schemes=("xavier_uniform", "kaiming_normal", "ones"), *,
                    epochs=50, batch_size=32, lr=0.01, max_norm=1.0, seed=0):
    """{scheme: total gradient norm before clipping at every step} of an SGD run from each initialisation."""
    ### BEGIN SOLUTION
    from solutions.ch06_amp import grad_norm_study as reference

    return reference(make_model, inputs, targets, schemes, epochs=epochs, batch_size=batch_size, lr=lr,
                     max_norm=max_norm, seed=seed)
    ### END SOLUTION

# %% nbgrader=test id=total_grad_norm_checks points=3
check("gradient_norm_study", globals(), "total_grad_norm_values", "total_grad_norm_parameters_forms")

# %% nbgrader=test id=init_weights_checks points=3
check("gradient_norm_study", globals(), "init_weights_matches_nn_init", "init_weights_rejects_unknown_scheme")

# %% nbgrader=test id=gradient_norm_study_hidden_functions points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("gradient_norm_study", globals(), "total_grad_norm_nonfinite", "total_grad_norm_leaves_gradients", "init_weights_only_linear")
### END HIDDEN TESTS

# %% nbgrader=test id=grad_norm_study_checks points=2
check("gradient_norm_study", globals(), "grad_norm_study_norms")

# %% nbgrader=test id=grad_norm_study_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("gradient_norm_study", globals(), "grad_norm_study_before_clipping", "grad_norm_study_trains_as_specified", "grad_norm_study_returns_floats")
### END HIDDEN TESTS

# %% nbgrader=test id=gradient_norm_study_hidden_generated points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("gradient_norm_study", globals(), "total_grad_norm_generated", "init_weights_generated", "grad_norm_study_generated")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=amp_train_step_task
# ## Exercise 2 · `amp_train_step` (9 points)
#
# Write `amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16,
# max_norm=None)`: one mixed-precision training step on `inputs.device`, with a `scaler` made for
# `inputs.device.type`, returning `(loss, grad_norm, skipped)`. In exactly this order:
#
# 1. zero the gradients;
# 2. the forward and `loss_fn(outputs, targets)` under `torch.autocast(inputs.device.type, dtype)`;
# 3. `scaler.scale(loss).backward()` (outside autocast);
# 4. `scaler.unscale_(optimizer)`;
# 5. the total gradient norm of the model's parameters (after unscaling, **before** clipping);
# 6. `clip_grad_norm_(…, max_norm)` when `max_norm` is given;
# 7. `scaler.step(optimizer)`;
# 8. `scaler.update()`.
#
# It returns:
#
# * `loss`: the unscaled loss, as a float;
# * `grad_norm`: that norm, as a float (within a relative 1e-5; inf or NaN when a gradient overflowed;
#   0.0 when no parameter has a gradient);
# * `skipped`: True exactly when `scaler.step` did not call `optimizer.step()` — always False for a
#   disabled scaler (`enabled=False`, the usual bfloat16 set-up), which steps even with NaN gradients.
#
# The parameters, the optimizer's state and the scale after the call equal those of that sequence exactly.
#
# *Hint:* `scaler.step` returns None either way. `optimizer.register_step_pre_hook` sees whether
# `optimizer.step()` ran (remove the hook afterwards), or you can compare the scale before and after
# `update()` — but think about what a disabled scaler does. Your `total_grad_norm` computes the norm.

# %% nbgrader=solution id=amp_train_step_answer
import torch
from torch import nn


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, *, dtype=torch.float16, max_norm=None):
    """One mixed-precision training step; returns (loss, grad_norm, skipped)."""
    ### BEGIN SOLUTION
    from solutions.ch06_amp import amp_train_step as reference

    return reference(model, optimizer, scaler, loss_fn, inputs, targets, dtype=dtype, max_norm=max_norm)
    ### END SOLUTION

# %% nbgrader=test id=amp_train_step_step points=3
check("amp_train_step", globals(), "matches_reference_step", "returns_unscaled_loss_and_norm")

# %% nbgrader=test id=amp_train_step_skips points=3
check("amp_train_step", globals(), "skips_overflowing_step", "disabled_scaler_never_skips")

# %% nbgrader=test id=amp_train_step_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("amp_train_step", globals(), "clips_after_unscaling", "autocast_forward_only", "zeroes_stale_gradients")
### END HIDDEN TESTS

# %% nbgrader=test id=amp_train_step_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("amp_train_step", globals(), "generated_setups")
### END HIDDEN TESTS

# %% [markdown]
# ## Your code at work
#
# ### The gradient norm study
#
# Once your three functions pass, run the study: an MLP 16-64-64-64-1 with ReLU, and the same with tanh,
# trained on a regression made here (256 samples, seeded, drawn on the CPU and moved to `device`), from
# each of the three initialisations: 50 epochs of 8 batches, 400 steps per run, SGD with `lr=0.01`,
# clipping at `max_norm=1`. `make_model` below also keeps every model it builds (training changes them
# in place, so afterwards they are the trained models) and watches, with a hook on each hidden `Linear`'s
# weight, the largest gradient entry it ever receives. Like the whole chapter, the study runs on one thread,
# from float32 weights made on the CPU, so that its numbers are reproducible.

# %%
with uses_your_answer("grad_norm_study"):
    generator = torch.Generator().manual_seed(0)
    x_study = torch.randn(256, 16, generator=generator)
    w_study = torch.randn(16, 1, generator=generator)
    y_study = torch.sin(x_study @ w_study / 2) + 0.1 * torch.randn(256, 1, generator=generator)
    x_study, y_study = x_study.to(device), y_study.to(device)


    class WatchedMLP:
        """make_model for the study: an MLP 16-64-64-64-1; keeps every model it builds and, per model, the largest
        |gradient| each hidden Linear's weight receives over the whole run."""

        def __init__(self, activation):
            self.activation = activation
            self.built, self.largest = [], []

        def __call__(self):
            layers = []
            for fan_in in (16, 64, 64):
                layers += [nn.Linear(fan_in, 64), self.activation()]
            model = nn.Sequential(*layers, nn.Linear(64, 1))
            largest = {}
            for index in (0, 2, 4):                                   # the hidden Linears
                def note(grad, index=index):
                    so_far = largest.get(index, torch.zeros((), device=grad.device))
                    largest[index] = torch.maximum(so_far, grad.abs().max())
                model[index].weight.register_hook(note)
            self.built.append(model)
            self.largest.append(largest)
            return model


    SCHEMES = ("xavier_uniform", "kaiming_normal", "ones")
    runs = {}
    for name, activation in (("ReLU", nn.ReLU), ("tanh", nn.Tanh)):
        maker = WatchedMLP(activation)
        runs[name] = maker, grad_norm_study(maker, x_study, y_study, SCHEMES)
    makers = {name: maker for name, (maker, _) in runs.items()}    # set only once both studies have run,
    study = {name: curves for name, (_, curves) in runs.items()}   # so the cells below never read half a study
    plot_log_curves({f"MLP with {name}": curves for name, curves in study.items()}, threshold=1.0,
                    threshold_label="max_norm = 1 (clipping threshold)", xlabel="step (8 per epoch)",
                    ylabel="total gradient norm before clipping", title="the gradient norm study: 400 SGD steps per run")
    without_ones = {name: {scheme: curves[scheme] for scheme in SCHEMES[:2]} for name, curves in study.items()}
    plot_log_curves({f"MLP with {name}": curves for name, curves in without_ones.items()}, threshold=1.0,
                    threshold_label="max_norm = 1 (clipping threshold)", xlabel="step (8 per epoch)",
                    ylabel="total gradient norm before clipping", title="the same, without all ones")

# %% [markdown]
# Both pictures show a comb: every epoch visits the same 8 batches in the same order, and some batches give
# larger gradients than others. To read the curves, two more numbers per run: how large each layer's
# outputs are at the start (the root mean square of each `Linear`'s output over the 256 samples, right after
# `init_weights_`), and the share of steps in which clipping acted.

# %%
with uses_your_answer("init_weights_"):
    def layer_rms(activation, scheme):
        model = WatchedMLP(activation)()
        init_weights_(model, scheme, torch.Generator().manual_seed(0))
        model.to(device)
        h, sizes = x_study, []
        with torch.no_grad():
            for layer in model:
                h = layer(h)
                if isinstance(layer, nn.Linear):
                    sizes.append(h.pow(2).mean().sqrt().item())
        return sizes


    print(f"{'':24s} {'RMS of each Linear output at the start':>40s} {'norm: first step':>17s} {'last step':>10s} "
          f"{'clipped':>8s}")
    for name, activation in (("ReLU", nn.ReLU), ("tanh", nn.Tanh)):
        for scheme in SCHEMES:
            norms = study[name][scheme]
            rms = " ".join(f"{s:9.3g}" for s in layer_rms(activation, scheme))
            clipped = sum(n > 1.0 for n in norms) / len(norms)
            # The last step's norm to 2 digits: 400 steps of ReLU carry the CPU's float32 rounding into its
            # 4th digit (Kaiming normal: 1.40770 here, 1.40793 with ATen's scalar kernels).
            print(f"{name:4s} {scheme:19s} {rms:>40s} {norms[0]:17.3g} {norms[-1]:10.2g} {clipped:8.0%}")

# %% [markdown]
# What each curve shows:
#
# * **Kaiming normal with ReLU keeps the size of the signal**: every layer's output has about the same
#   RMS. Its weights have variance `2 / fan_in`: a layer multiplies the mean square of its input by about
#   2 and ReLU, zeroing half of the values, divides it by about 2. This is *variance preservation*, for
#   ReLU. Its first gradients are larger than Xavier's — a weight's gradient is the product of the error
#   behind its layer and the activation in front of it, and Kaiming's activations are 2 to 5 times larger —
#   and they fall as the model learns.
# * **Xavier uniform** has variance `2 / (fan_in + fan_out)` — `1 / 64` in the square hidden layers, half
#   of Kaiming's — which preserves the variance through a linear layer, and nearly through tanh (nearly
#   linear near 0: the RMS falls slowly, 0.48 → 0.40). With ReLU, the signal shrinks by about √2 per layer,
#   as the first RMS row shows; with three hidden layers that is harmless here, and its gradients are the
#   smallest of the study.
# * **All ones explodes with ReLU**: every hidden unit computes the same sum, so each layer multiplies its
#   input by its fan-in (64): the output's RMS is 6.8 × 10<sup>5</sup>, the first gradient norm 2 × 10<sup>11</sup> —
#   far above the threshold for all 400 steps. Clipping keeps each step at length `lr × 1`, so the run does
#   not blow up, but at that step length it would need many thousands of steps to undo the initialisation:
#   the norms fall only slowly. Clipping is a seat belt, not a cure.
# * With **tanh**, all ones does not explode — tanh stays in [-1, 1] — but its gradient norm (about
#   10<sup>3</sup>) comes from the last layer alone, as the next cells show.
#
# All ones is also **symmetric**: every hidden unit of a layer starts with the same weights, computes the
# same value and receives the same gradient — so training keeps them identical forever, and a layer of 64
# units is worth one. The trained models, as `make_model` kept them:

# %%
with uses_your_answer("grad_norm_study"):
    def number(value):
        """3 significant digits, and an exact zero as 0.0."""
        return f"{value:.3g}" if value else "0.0"


    for name in study:
        model = makers[name].built[SCHEMES.index("ones")]
        for index in (0, 2, 4):
            weight = model[index].weight
            row_difference = (weight - weight[:1]).abs().max().item()
            change = number((weight - 1).abs().max().item())
            print(f"{name:4s}, all ones, after 400 steps: Linear {index}: largest difference between two rows = "
                  f"{row_difference}; largest change of a weight since the start: {change}")

# %% [markdown]
# With ReLU the weights have moved — a little, since every clipped step is short — and yet every row
# still equals the first, exactly: the symmetry was never broken, because identical rows get identical
# gradients and so identical updates; only a random initialisation breaks it. With tanh the hidden weights
# have not moved at all. Is that because their gradients are exactly zero? The hooks saw every gradient of
# the 400 steps:

# %%
with uses_your_answer("grad_norm_study"):
    for name in study:
        for scheme, largest in zip(SCHEMES, makers[name].largest):
            seen = ", ".join(f"Linear {index}: {number(value.item())}" for index, value in sorted(largest.items()))
            print(f"{name:4s} {scheme:15s} largest |gradient| a hidden weight received in 400 steps: {seen}")

# %% [markdown]
# Yes: with tanh and all ones, every hidden weight's gradient was **exactly 0.0** at every step, while
# with ReLU (and from the random initialisations) they were not. Symmetry explains equal rows, not zeros:
# the zeros come from **saturation in float32**. The second hidden layer's pre-activation is the sum of 64
# equal values `tanh(s)`, where `s` is the sum of a sample's 16 inputs, and the third layer's is 64 times
# the second's tanh: large in every sample. float32's `tanh(z)` is *exactly* ±1.0 once `|z|` is above about
# 9, and tanh's derivative `1 − tanh(z)²` is then exactly 0 — so the last hidden layer passes no gradient
# back at all, and only the output layer learns (its input is ±1). Checked directly:

# %%
with uses_your_answer("init_weights_"):
    def saturates_from(dtype, low, high):
        """The first z of a fine grid on [low, high) at which tanh(z) is exactly 1.0 in dtype."""
        z = torch.arange(low, high, 1e-3, dtype=dtype)
        return z[torch.tanh(z) == 1][0].item()


    print(f"tanh(z) == 1.0 exactly from z = {saturates_from(torch.float32, 8.0, 10.0):.3f} on in float32, "
          f"from z = {saturates_from(torch.float64, 18.0, 20.0):.3f} on in float64")
    model = init_weights_(WatchedMLP(nn.Tanh)(), "ones").to(device)
    with torch.no_grad():
        last_hidden = model[:6](x_study)                          # after the third tanh
        pre_activation = model[:5](x_study)
    print(f"all ones, at the start: the third hidden layer's |pre-activation| is at least "
          f"{pre_activation.abs().min().item():.1f}; of its {last_hidden.numel()} outputs, "
          f"{int((last_hidden.abs() == 1).sum())} are exactly ±1.0")

    shallow = init_weights_(nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)), "ones").to(device)
    F.mse_loss(shallow(x_study), y_study).backward()
    print(f"one hidden tanh layer, all ones: largest |gradient| of the hidden weight "
          f"{shallow[0].weight.grad.abs().max().item():.3g}; samples whose pre-activation (the sum of their 16 inputs) "
          f"is below 9 in size: {int((x_study.sum(dim=1).abs() < 9).sum())} of {len(x_study)}")

# %% [markdown]
# So the claim "with tanh and all-ones initialisation the hidden gradients are exactly zero" holds here,
# but only under a condition: some hidden layer's tanh must be saturated to exactly ±1.0 in float32 for
# every sample — which the all-ones weights with fan-in 64 guarantee from the second hidden layer on.
# With one hidden layer, whose pre-activations are just the sums of the inputs — most of them below 9 —
# the hidden gradient is not zero at all. In float64, tanh reaches exactly 1.0 only above about 19, so the
# same model in float64 needs larger sums before its gradients vanish.
#
# ### Your `amp_train_step` at work
#
# And once `amp_train_step` passes: section 4's model and data, trained for 120 steps in float16 on
# `device` with your step, clipping at 1, and a scaler that starts at 2<sup>20</sup> with `growth_interval=10`.

# %%
with uses_your_answer("amp_train_step"):
    seed_everything(0)
    model = make_relu_mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0**20, growth_interval=10)
    scales, skipped, losses, norms = [], [], [], []
    for step in range(120):
        inputs, targets = batch_at(step)
        scales.append(scaler.get_scale())
        loss, norm, was_skipped = amp_train_step(model, optimizer, scaler, F.mse_loss, inputs, targets,
                                                 dtype=torch.float16, max_norm=1.0)
        losses.append(loss)
        norms.append(norm)
        skipped.append(was_skipped)
    # As in section 4, the first skips are the same on every CPU and the later ones are not: moving the initial
    # scale by 3 % moved two of them. So this prints the first ones and checks the rule at every step. The
    # later losses and norms depend on where the skips fall: with the initial scale moved by up to 3 %, the mean
    # of the last 8 losses ranged from 0.9683 to 0.9689 (2 digits), the median norm from 1.632 to 1.638 (a bound).
    after = scales[1:] + [scaler.get_scale()]
    first_good = skipped.index(False)
    broken = rule_broken_at(scales, after, skipped, growth_interval=10)
    print(f"steps 0 to {first_good - 1} skipped, the scale falling from 2**{math.log2(scales[0]):.0f} to "
          f"2**{math.log2(scales[first_good]):.0f}; at all {len(skipped)} steps the scale halved after a skip, doubled "
          f"after 10 good steps in a row and stayed otherwise: {'true' if not broken else f'false, at steps {broken}'}")
    print(f"mean loss over the first 8 steps {statistics.mean(losses[:8]):.1f}, over the last 8 "
          f"{statistics.mean(losses[-8:]):.2f}; median gradient norm before clipping "
          f"{over(statistics.median(n for n in norms if math.isfinite(n)), 1)} (the clipping threshold)")
    plot_scale_over_steps(scales, skipped, losses=losses, title=f"your amp_train_step: 120 float16 steps on {device.type}")

# %% [markdown]
# ## Summary
#
# * float32, float16, bfloat16: 8/5/8 exponent bits and 23/10/7 mantissa bits. float16 ends at 65504 and
#   its normal numbers start at 6.1 × 10<sup>-5</sup>; bfloat16 has float32's range with about 2 decimal
#   digits. `torch.finfo` gives `eps`, `smallest_normal` and `max`.
# * Small gradients underflow in float16 — to subnormals, then to exact zeros; multiplying the loss by a
#   scale (2<sup>16</sup>) lifts them, and too large a scale overflows to inf. bfloat16 does not underflow there.
# * `torch.autocast(device_type, dtype=...)` runs listed ops (linear, matmul, conv) in 16 bits, keeps
#   others in float32, and leaves the rest in their input's dtype; the lists differ by device (on the CPU
#   here, softmax, layer_norm and sum follow their input; on CUDA, per the docs, they run in float32).
#   Forward and loss inside the block, backward outside. Never `model.half()` for training: updates round
#   away against float16 weights — keep float32 master weights.
# * `GradScaler`: `scale(loss).backward() → unscale_ → clip → step → update`. Overflow skips the step
#   and halves the scale; `growth_interval` good steps double it. Unscale before touching gradients; a
#   skipped first step makes the scheduler warn; with accumulation, unscale/clip/step/update once per
#   optimizer step. bfloat16: no scaler (or a disabled one).
# * Speed and memory: measure. On a CPU autocast casts at every operation; it pays only where the CPU
#   has fast 16-bit products (here: bfloat16 from width 256 on; float16 was slower everywhere). Autocast
#   saves activation memory at large batches, but adds 16-bit copies of the weights.
# * Log the total gradient norm **before** clipping (`clip_grad_norm_` returns it); after clipping it is
#   at most `max_norm` by construction. Initialisation decides the norms: Kaiming for ReLU keeps the signal's
#   size, all ones explodes (ReLU) or saturates (tanh), and a symmetric start is never broken by training.
