# %% [markdown]
# # 07 · Checkpointing and resume: stopping a training run and going on exactly
#
# Training runs stop before they are done. A cluster's time limit ends the job, a cloud machine is taken
# back, a process runs out of memory in epoch 40, somebody presses Ctrl-C. A **checkpoint** is what lets
# the run go on — and saving the weights is the easy part of it. A run that resumes from its weights
# alone continues with a fresh optimizer, a scheduler that starts counting again, other random numbers and
# another order of the data: it is a *different* run, and nothing tells you so.
#
# This chapter holds checkpoints to a strict test: the resumed run must be **the same run**, loss for loss
# and weight for weight, bit for bit, as if it had never stopped. That test is cheap, and it is the only one
# that shows nothing was forgotten. Then it turns to the file itself: what `torch.load` agrees to open and
# why loading a stranger's checkpoint can run their code, how to write a file so that a crash never leaves
# you without a checkpoint, how to keep only the newest few, and what to do with a checkpoint from a GPU,
# from a compiled model or from a DDP run.
#
# **In this chapter** you will
# 1. list the state of a training run — model, optimizer, scheduler, the position, four random number
#    generators — and see that a `state_dict()` is not a copy;
# 2. prove a resume exact: 48 steps straight against 18 steps, a checkpoint, every object rebuilt from
#    another seed, and 30 more steps — every loss and every weight identical;
# 3. leave out one piece at a time and watch when the resumed run departs: at once, or only at the
#    scheduler's milestone;
# 4. resume in the middle of an epoch;
# 5. measure how much of a checkpoint is optimizer state;
# 6. load with `weights_only=True`: what it refuses, how to store NumPy state as plain values, and why a
#    pickle can run code;
# 7. destroy a checkpoint with a failing `torch.save`, then write atomically; keep the last k checkpoints
#    and find the latest;
# 8. save weights with safetensors, and see what it refuses;
# 9. load a GPU checkpoint on a CPU (`map_location`) and strip the prefixes of compiled and DDP models;
# 10. write two graded exercises — `checkpoint` and `checkpoint_files` — and run them together: a training
#     loop that crashes and resumes.

# %% nbgrader=readonly id=opening
import argparse
import copy
import datetime
import inspect
import io
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset

from coursekit import seed_everything, start_chapter
from coursekit.plots import plot_resumed_runs, plot_stacked_bars
from coursekit.practice import uses_your_answer
from graders import check

device = start_chapter("07_checkpointing")

# %% [markdown]
# The losses this chapter prints are compared with the ones in the committed notebook, and the last bits
# of a sum can depend on how many threads share it and on the CPU's vector instructions. So the chapter runs
# torch on one CPU thread, as chapters 05 and 06 did, and prints a loss only to the digits every CPU agrees
# on. Its comparisons of one run with another are exact: both runs are in this process, on this CPU.

# %%
torch.set_num_threads(1)
print("torch CPU threads for this chapter:", torch.get_num_threads())

# %% [markdown]
# ## 1. The state of a training run
#
# First, a run to interrupt. It is small, so that the chapter runs in seconds, but it has the kinds of
# state and randomness a typical run has:
#
# * a regression on 96 samples, in batches of 16 (6 steps per epoch), 8 epochs (48 steps);
# * an MLP with **dropout**, whose masks come from torch's global random number generator (RNG);
# * a `DataLoader` that shuffles with a **generator of its own**;
# * **Adam**, and a **`MultiStepLR`** scheduler that divides the learning rate by 10 after 5 epochs;
# * and in every step, two draws that stand for data augmentation: a random gain for the inputs from
#   Python's `random`, and input noise from **NumPy** — many augmentation libraries draw from those two
#   global RNGs.
#
# Every dataset item carries its number as a third tensor, so that we can see the order the data comes in.
# Epochs and steps are counted from 0, as the code counts them: epoch 5 is the sixth, and starts at step 30.
# All of it runs on the CPU: this chapter is about state, not speed. (On a GPU, the CUDA RNGs join the list
# — the first exercise saves them — and a bit-exact resume also needs deterministic kernels.)

# %%
generator = torch.Generator().manual_seed(0)
features = torch.randn(96, 8, generator=generator)
true_weights = torch.randn(8, 1, generator=generator)
targets = torch.tanh(features @ true_weights / 2) + 0.1 * torch.randn(96, 1, generator=generator)
dataset = TensorDataset(features, targets, torch.arange(96))      # (inputs, target, sample number)

EPOCHS, MILESTONE, BATCH_SIZE = 8, 5, 16


def make_run(seed):
    """Every object of a training run, made afresh: weights, RNGs and data order all follow `seed`."""
    seed_everything(seed)                                  # Python's random, NumPy, torch
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[MILESTONE], gamma=0.1)
    order = torch.Generator().manual_seed(seed)            # shuffles the data, and nothing else
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, generator=order)
    return SimpleNamespace(model=model, optimizer=optimizer, scheduler=scheduler, order=order, loader=loader,
                           lr_used={})                     # epoch -> learning rate, filled in by train()


def train_step(run, inputs, targets):
    gain = random.uniform(0.9, 1.1)                                            # Python's random
    noise = np.random.normal(0.0, 0.05, size=tuple(inputs.shape)).astype(np.float32)  # NumPy
    run.optimizer.zero_grad()
    loss = F.mse_loss(run.model(inputs * gain + torch.from_numpy(noise)), targets)   # dropout: torch's RNG
    loss.backward()
    run.optimizer.step()
    return loss.item()


def train(run, first_epoch, end_epoch):
    """Train `run` for the epochs first_epoch, ..., end_epoch - 1; return the loss of every step."""
    run.model.train()
    losses = []
    for epoch in range(first_epoch, end_epoch):
        run.lr_used[epoch] = run.optimizer.param_groups[0]["lr"]
        for inputs, targets, _ in run.loader:
            losses.append(train_step(run, inputs, targets))
        run.scheduler.step()                               # the scheduler counts epochs
    return losses


run = make_run(seed=0)
# 2 decimals: these losses agree between CPUs to about 1e-6 of their size, and at 4 decimals the first one,
# 0.6509518, lies 2e-6 from where it rounds down (at 3, the third one, 0.6534967, 3e-6 from where it rounds up).
print(f"{len(run.loader)} steps per epoch; first losses: {[round(loss, 2) for loss in train(run, 0, 1)]}")

# %% [markdown]
# What must a checkpoint hold? Everything that a later step reads and that changes while training:
#
# * `model.state_dict()` — the parameters and buffers;
# * `optimizer.state_dict()` — Adam's state for each parameter (two running averages and a step count),
#   and the hyperparameters of its parameter groups, among them the learning rate the scheduler changes;
# * `scheduler.state_dict()` — how many epochs it has counted;
# * where we are: the epoch (or step);
# * the state of every RNG the step draws from: `random.getstate()`, NumPy's, `torch.get_rng_state()`
#   (and, on GPUs, `torch.cuda.get_rng_state_all()`);
# * the data order: the state of the loader's generator, `generator.get_state()`;
# * with mixed precision (chapter 06), the `GradScaler`'s `state_dict()` too.
#
# NumPy's state comes back from `np.random.get_state()` as a tuple holding a NumPy array; the checkpoint
# stores it as plain Python values instead — section 6 shows why.

# %%
def numpy_rng_state():
    """NumPy's global RNG state as plain Python values: a name, a list of 624 ints and three numbers."""
    name, keys, position, has_gauss, cached_gauss = np.random.get_state()
    return [name, keys.tolist(), int(position), int(has_gauss), float(cached_gauss)]


def set_numpy_rng_state(state):
    name, keys, position, has_gauss, cached_gauss = state
    np.random.set_state((name, np.array(keys, dtype=np.uint32), position, has_gauss, cached_gauss))


def make_checkpoint(run, epoch):
    """The whole state of `run` after `epoch` epochs, as tensors, numbers, strings and plain containers."""
    return {"epoch": epoch,
            "model": run.model.state_dict(),
            "optimizer": run.optimizer.state_dict(),
            "scheduler": run.scheduler.state_dict(),
            "python_rng": random.getstate(),
            "numpy_rng": numpy_rng_state(),
            "torch_rng": torch.get_rng_state(),
            "data_order": run.order.get_state()}


checkpoint = make_checkpoint(run, epoch=1)
adam = checkpoint["optimizer"]
print("epoch:", checkpoint["epoch"])
print("model:", {name: tuple(t.shape) for name, t in checkpoint["model"].items()})
print(f"optimizer: state of {len(adam['state'])} parameters, each {sorted(adam['state'][0])}; "
      f"lr {adam['param_groups'][0]['lr']}")
print("scheduler:", {k: checkpoint["scheduler"][k] for k in ("last_epoch", "milestones", "gamma")})
version, internal, _ = checkpoint["python_rng"]
print(f"python_rng: a tuple (version {version}, {len(internal)} ints, None)")
print(f"numpy_rng: [{checkpoint['numpy_rng'][0]!r}, {len(checkpoint['numpy_rng'][1])} ints, 3 numbers]")
for key in ("torch_rng", "data_order"):
    print(f"{key}: a {checkpoint[key].dtype} tensor of {checkpoint[key].numel()} bytes")
print("a GradScaler's state:", torch.amp.GradScaler("cpu").state_dict())

# %% [markdown]
# ### Trap: a `state_dict()` is not a copy
#
# `model.state_dict()` returns the live parameter tensors themselves (detached, but sharing their memory),
# and `optimizer.state_dict()` the optimizer's live state tensors. Keep one in memory as a "checkpoint",
# train on, and the checkpoint trains along:

# %%
run = make_run(seed=0)
in_memory = run.model.state_dict()                          # meant as a checkpoint
deep_copy = copy.deepcopy(run.model.state_dict())
weight_at_save = in_memory["0.weight"].clone()
train(run, 0, 1)
print("state_dict()['0.weight'] shares the parameter's memory:",
      in_memory["0.weight"].data_ptr() == run.model[0].weight.data_ptr())
print("optimizer.state_dict()'s exp_avg shares the optimizer's memory:",
      run.optimizer.state_dict()["state"][0]["exp_avg"].data_ptr()
      == run.optimizer.state[run.model[0].weight]["exp_avg"].data_ptr())
print("after one more epoch, the kept state_dict still holds the saved weights:",
      torch.equal(in_memory["0.weight"], weight_at_save))
print("after one more epoch, the deep copy still holds the saved weights:     ",
      torch.equal(deep_copy["0.weight"], weight_at_save))

# %% [markdown]
# A checkpoint in memory needs `copy.deepcopy`; one written with `torch.save` is a copy by nature — the
# bytes are written at that moment. This chapter writes its checkpoints to files in temporary folders.
#
# ## 2. Proving a resume exact
#
# The test: train 48 steps straight; then, separately, train 18 steps (3 epochs), save, throw every
# object away, build them all again **from another seed** — other weights, another data order, other RNG
# states — load the checkpoint into them, and train the remaining 30 steps. If the checkpoint holds
# everything and loading restores everything, the two runs are the same computation, and their losses and
# weights are **equal**, not just close. "Close" is the wrong test: a forgotten piece of state can change
# the numbers only a little at first.

# %%
def restore(run, checkpoint, leave_out=()):
    """Load `checkpoint` into `run` and every global RNG, except the parts named in `leave_out`;
    return the epoch to continue with."""
    run.model.load_state_dict(checkpoint["model"])
    if "optimizer" not in leave_out:
        run.optimizer.load_state_dict(checkpoint["optimizer"])
    if "scheduler" not in leave_out:
        run.scheduler.load_state_dict(checkpoint["scheduler"])
    if "python_rng" not in leave_out:
        version, internal, gauss_next = checkpoint["python_rng"]
        random.setstate((version, tuple(internal), gauss_next))
    if "numpy_rng" not in leave_out:
        set_numpy_rng_state(checkpoint["numpy_rng"])
    if "torch_rng" not in leave_out:
        torch.set_rng_state(checkpoint["torch_rng"])
    if "data_order" not in leave_out:
        run.order.set_state(checkpoint["data_order"])
    return checkpoint["epoch"]


RESUME_EPOCH = 3
RESUME_STEP = RESUME_EPOCH * len(run.loader)                 # 18

straight_run = make_run(seed=0)
straight = train(straight_run, 0, EPOCHS)                     # 48 steps, never interrupted

scratch = tempfile.TemporaryDirectory(prefix="course-07-")   # removed at the end of the chapter
checkpoint_path = Path(scratch.name) / "epoch_3.pt"
first = make_run(seed=0)
before = train(first, 0, RESUME_EPOCH)                        # 18 steps
torch.save(make_checkpoint(first, RESUME_EPOCH), checkpoint_path)
del first                                                     # the process "ends"

second = make_run(seed=1)                                     # everything rebuilt, from another seed
print("rebuilt weights equal the saved ones before loading:",
      torch.equal(second.model[0].weight, torch.load(checkpoint_path, weights_only=True)["model"]["0.weight"]))
epoch = restore(second, torch.load(checkpoint_path, weights_only=True))
after = train(second, epoch, EPOCHS)                          # 30 steps

resumed = before + after
print(f"{len(straight)} losses straight, {len(before)} + {len(after)} resumed; all equal: {resumed == straight}")
pairs = list(zip(second.model.parameters(), straight_run.model.parameters()))
print(f"parameters equal (torch.equal): {sum(torch.equal(a, b) for a, b in pairs)} of {len(pairs)}; "
      f"largest difference {max((a - b).abs().max().item() for a, b in pairs)}")

# %% [markdown]
# Identical: the 48 losses compare equal as Python floats, and every parameter is `torch.equal` to the
# uninterrupted run's. Floating-point arithmetic is deterministic for the same operations on the same
# inputs in the same order on the same CPU — so when *everything* the computation reads is the same,
# the results are the same to the last bit, and any difference means some state was not carried over.
#
# ## 3. Leave one piece out
#
# Now the same resume seven times: once with everything, and six times with one piece of the checkpoint
# not restored — that piece keeps the state the rebuilt run was made with (seed 1). When does each run
# depart from the uninterrupted one?

# %%
VARIANTS = {"everything restored": (),
            "without the optimizer state": ("optimizer",),
            "without the scheduler state": ("scheduler",),
            "without Python's random state": ("python_rng",),
            "without NumPy's RNG state": ("numpy_rng",),
            "without torch's CPU RNG state": ("torch_rng",),
            "without the data order": ("data_order",)}


def first_difference(losses, reference):
    return next((step for step, (a, b) in enumerate(zip(losses, reference)) if a != b), None)


runs, curves = {}, {}
for name, leave_out in VARIANTS.items():
    runs[name] = make_run(seed=1)
    epoch = restore(runs[name], torch.load(checkpoint_path, weights_only=True), leave_out)
    curves[name] = before + train(runs[name], epoch, EPOCHS)

print(f"resumed at step {RESUME_STEP}; the scheduler's milestone: after {MILESTONE} epochs, from step "
      f"{MILESTONE * len(run.loader)} on")
print(f"{'':34s} {'first loss that differs':>24s}   {'weights at the end'}")
for name, losses in curves.items():
    step = first_difference(losses, straight)
    where = "none" if step is None else f"step {step} = resume + {step - RESUME_STEP}"
    same = all(torch.equal(a, b) for a, b in zip(runs[name].model.parameters(), straight_run.model.parameters()))
    print(f"{name:34s} {where:>24s}   {'identical' if same else 'different'}")

# %%
plot_resumed_runs(straight, curves, resume_at=RESUME_STEP,
                  marks={f"milestone: lr ÷ 10 from step {MILESTONE * len(run.loader)} on": MILESTONE * len(run.loader)},
                  title="uninterrupted run (grey) against runs resumed at step 18 (orange)")

# %% [markdown]
# Every piece matters, but not in the same way:
#
# * **The RNGs and the data order** change the very first resumed step: another gain, other noise,
#   another dropout mask, another batch. Easy to notice — if you compare.
# * **The optimizer state** changes the first resumed *update*: the loss of step 18 is still equal (same
#   weights, same batch, same random draws), but the step after it is not. A fresh Adam has no running
#   averages, and its first update moves every weight by about the learning rate — a kick that a run in
#   progress never gets.
# * **The scheduler state** changes nothing at first: the losses stay equal up to step 30. Step 30 is the
#   first step of epoch 5, which the uninterrupted run trains with the learning rate divided by 10; the
#   resumed run's fresh scheduler started counting at 0 when the run resumed, and keeps the old rate. So the
#   update of step 30 differs, and the loss of step 31 is the first to show it. The learning rate each run
#   used in each epoch:

# %%
print("epoch:                        ", "  ".join(f"{epoch:5d}" for epoch in range(EPOCHS)))
for name, lr_used in (("uninterrupted", straight_run.lr_used),
                      ("everything restored", runs["everything restored"].lr_used),
                      ("without the scheduler state", runs["without the scheduler state"].lr_used)):
    print(f"{name:29s}", "  ".join(f"{lr_used[epoch]:5g}" if epoch in lr_used else "    -"
                                   for epoch in range(EPOCHS)))
print(f"the fresh scheduler's count at the end: {runs['without the scheduler state'].scheduler.last_epoch} "
      f"(the uninterrupted one's: {straight_run.scheduler.last_epoch})")

# %% [markdown]
# The fresh scheduler reaches its own milestone only after 5 epochs of its own count — after the last step
# of this run. A resume test that trains one more epoch after loading would have passed without the
# scheduler state. Test resumes across the milestones, or better, compare the whole run.
#
# ### Why the loader has a generator of its own
#
# Without `generator=`, a shuffling `DataLoader` draws each epoch's order from torch's *global* RNG — the
# one dropout draws from too. Saving `torch.get_rng_state()` then covers the order as well, but the order
# now depends on everything else that drew from the global RNG before: one more dropout mask, one more
# random initialisation, and the data comes in another order.

# %%
shared_loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)           # no generator
own_loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, generator=torch.Generator())
for extra_draws in (0, 1):
    torch.manual_seed(0)
    own_loader.generator.manual_seed(0)
    torch.rand(extra_draws)                        # e.g. one more dropout mask earlier in the step
    print(f"{extra_draws} extra draw(s) from torch's RNG: first batch without a generator "
          f"{next(iter(shared_loader))[2][:6].tolist()} ..., with its own "
          f"{next(iter(own_loader))[2][:6].tolist()} ...")

# %% [markdown]
# ## 4. Resuming in the middle of an epoch
#
# Long epochs need checkpoints inside them. The model, optimizer, scheduler and global RNGs are saved as
# before; the data order needs more thought. When an epoch starts — at its first batch — the loader draws
# the **whole epoch's order at once** from the generator. After that the generator does not move until the
# next epoch:

# %%
order = torch.Generator().manual_seed(0)
loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, generator=order)
at_start = order.get_state()
batches = iter(loader)
next(batches)
after_one = order.get_state()
next(batches)
print("the generator moved when the epoch started:", not torch.equal(after_one, at_start))
print("the generator moved between the 1st and 2nd batch:", not torch.equal(order.get_state(), after_one))

# %% [markdown]
# So a generator state saved in the middle of an epoch is the state *after* this epoch's order was drawn.
# Restore it, start a new iterator, and the loader draws a **new** order for the rest of the epoch: some
# samples come twice, others not at all. What to save instead: the generator's state **at the start of the
# epoch**, and **how many batches** of the epoch are done. To resume, set the generator to that state —
# the new iterator draws the same order again — and skip the batches already done. (Skipping still reads
# and collates them, which is cheap here; with an expensive dataset, give the loader a sampler that starts
# at the right offset instead.)
#
# Below, the run stops in epoch 4 after 2 of its 6 batches (step 26), resumes correctly, and resumes
# naively, with the generator's state at the moment of saving.

# %%
def train_resumable(run, first_epoch, end_epoch, *, skip=0, stop_at=None, seen=None):
    """train(), able to start `skip` batches into first_epoch and to stop at stop_at = (epoch, batches done),
    returning (losses, checkpoint of that moment); `seen` collects the sample numbers each epoch trains on."""
    run.model.train()
    losses = []
    for epoch in range(first_epoch, end_epoch):
        order_at_epoch_start = run.order.get_state()          # before the loader draws this epoch's order
        for batch, (inputs, targets, numbers) in enumerate(run.loader):
            if batch < skip:
                continue                                      # trained on before the interruption
            if (epoch, batch) == stop_at:
                checkpoint = make_checkpoint(run, epoch)
                checkpoint.update(batches_done=batch, order_at_epoch_start=order_at_epoch_start)
                return losses, checkpoint
            if seen is not None:
                seen.setdefault(epoch, []).extend(numbers.tolist())
            losses.append(train_step(run, inputs, targets))
        skip = 0
        run.scheduler.step()
    return losses, None


seen_before = {}
first = make_run(seed=0)
before_mid, mid_checkpoint = train_resumable(first, 0, EPOCHS, stop_at=(4, 2), seen=seen_before)
torch.save(mid_checkpoint, Path(scratch.name) / "mid_epoch.pt")
print(f"stopped after {len(before_mid)} steps: epoch {mid_checkpoint['epoch']}, "
      f"{mid_checkpoint['batches_done']} batches of it done")

for how in ("epoch-start state + skip", "naive: state at the save"):
    saved = torch.load(Path(scratch.name) / "mid_epoch.pt", weights_only=True)
    resumed_run, seen_after = make_run(seed=1), {}
    epoch = restore(resumed_run, saved)                       # data_order: the state at the moment of saving
    if how.startswith("epoch-start"):
        resumed_run.order.set_state(saved["order_at_epoch_start"])
    after_mid, _ = train_resumable(resumed_run, epoch, EPOCHS, skip=saved["batches_done"], seen=seen_after)
    epoch_4 = seen_before[4] + seen_after[4]
    counts = np.bincount(epoch_4, minlength=len(dataset))
    same = all(torch.equal(a, b) for a, b in zip(resumed_run.model.parameters(), straight_run.model.parameters()))
    print(f"{how:26s}: losses equal {before_mid + after_mid == straight}, weights equal {same} | epoch 4 trained "
          f"on {len(epoch_4)} samples: {int((counts == 1).sum())} once, {int((counts == 2).sum())} twice, "
          f"{int((counts == 0).sum())} never")

# %% [markdown]
# With the epoch's starting state and the count of batches done, the mid-epoch resume is exact too. The
# naive resume trains epoch 4 on 96 samples, but not on the 96: some twice, some never — no error, just a
# silently different epoch.
#
# ## 5. What a checkpoint weighs: optimizer state against the weights
#
# Adam keeps two tensors for every parameter, each of the parameter's size (`exp_avg` and `exp_avg_sq`,
# the running averages of the gradient and of its square), plus a one-number step count. So a training
# checkpoint with Adam is about **three times** the size of the weights. Measured on an MLP 256-512-512-10,
# after one step with each of four optimizers — the bytes of the tensors in each `state_dict()`, and the
# sizes of the files `torch.save` writes. (Before the first step the optimizer holds no state at all:
# it creates it at the first `step()`.)

# %%
def tensor_bytes(state):
    """Bytes of every tensor in a nested state (dicts, lists, tuples)."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(tensor_bytes(value) for value in state.values())
    if isinstance(state, (list, tuple)):
        return sum(tensor_bytes(value) for value in state)
    return 0


OPTIMIZERS = {"SGD": lambda p: torch.optim.SGD(p, lr=0.01),
              "SGD, momentum": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
              "Adam": lambda p: torch.optim.Adam(p, lr=1e-3),
              "Adam, amsgrad": lambda p: torch.optim.Adam(p, lr=1e-3, amsgrad=True)}
MiB = 2**20
sizes = {"weights": [], "optimizer state": []}
print(f"{'':14s} {'weights':>9s} {'optimizer state':>16s} {'state / weights':>16s} {'file: weights':>14s} "
      f"{'file: both':>11s} {'file - tensors':>15s} {'state before step 1':>20s}")
for name, make_optimizer in OPTIMIZERS.items():
    seed_everything(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = make_optimizer(model.parameters())
    empty = tensor_bytes(optimizer.state_dict())
    F.cross_entropy(model(torch.randn(32, 256)), torch.randint(0, 10, (32,))).backward()
    optimizer.step()
    weights, state = tensor_bytes(model.state_dict()), tensor_bytes(optimizer.state_dict())
    torch.save(model.state_dict(), Path(scratch.name) / "weights.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, Path(scratch.name) / "both.pt")
    file_weights = os.path.getsize(Path(scratch.name) / "weights.pt")
    file_both = os.path.getsize(Path(scratch.name) / "both.pt")
    print(f"{name:14s} {weights / MiB:5.2f} MiB {state / MiB:12.2f} MiB {state / weights:16.3f} "
          f"{file_weights / MiB:10.2f} MiB {file_both / MiB:7.2f} MiB {(file_both - weights - state) / 2**10:11.1f} KiB "
          f"{empty:14d} bytes")
    sizes["weights"].append(weights / MiB)
    sizes["optimizer state"].append(state / MiB)
adam_state = optimizer.state_dict()["state"][0]
print("one parameter's state with amsgrad:", {k: tuple(v.shape) for k, v in adam_state.items()},
      "| the weight:", tuple(model[0].weight.shape))

# %%
parameters = sum(p.numel() for p in model.parameters())
plot_stacked_bars(list(OPTIMIZERS), sizes, ylabel="MiB", fmt="{:.2f} MiB",
                  title=f"the tensors of a checkpoint of an MLP with {parameters:,} parameters, after one step")

# %% [markdown]
# Plain SGD keeps nothing; momentum keeps one tensor per parameter (1×); Adam keeps two (2×, plus 4 bytes
# per parameter tensor for its step count), and `amsgrad=True` a third. The files are the tensor bytes plus
# a few kilobytes of structure. For a model with a billion float32 parameters, that is 4 GB of weights and
# 8 GB of Adam state in every checkpoint — and in memory during training. The gradients are not in either
# `state_dict()`: they are recomputed at every step.
#
# ## 6. `torch.load` and `weights_only`
#
# `torch.save` writes a zip file: the tensors' bytes, and a **pickle** — Python's own serialisation — of
# the structure around them. Unpickling can create any Python object and call any function, so since
# PyTorch 2.6, `torch.load` defaults to `weights_only=True`: an unpickler that accepts only an allowlist of
# types — tensors, numbers, strings, plain containers, a few torch types — and refuses everything else.
# Which values get through, loaded here with no `weights_only` argument, the default:

# %%
def load_default(value):
    """Save `value` to bytes and load it back with torch.load's defaults; 'loads' or what was refused."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    try:
        torch.load(buffer)
        return "loads"
    except Exception as error:
        refused = re.search(r"GLOBAL (\S+) was not an allowed global", str(error))
        return f"refused ({type(error).__name__}): {refused.group(1) if refused else str(error)[:80]}"


CANDIDATES = {"a tensor": torch.ones(3),
              "int, float, str, bool, None": [1, 0.5, "adam", True, None],
              "dict, list, tuple, set": {"a": [1, (2, 3)], "b": {4}},
              "torch.Size, torch.dtype": (torch.Size([2, 3]), torch.float16),
              "random.getstate()": random.getstate(),
              "np.float64(0.25) (a NumPy scalar)": np.float64(0.25),
              "np.zeros(3) (a NumPy array)": np.zeros(3),
              "np.random.get_state()": np.random.get_state(),
              "pathlib.Path('runs/7')": Path("runs/7"),
              "argparse.Namespace(lr=0.01)": argparse.Namespace(lr=0.01),
              "datetime.datetime(2025, 1, 1)": datetime.datetime(2025, 1, 1)}
for name, value in CANDIDATES.items():
    print(f"{name:35s} {load_default(value)}")

# %% [markdown]
# NumPy values are the common surprise: `np.mean(losses)` is a `np.float64`, not a float, and NumPy's RNG
# state holds an array. The whole message for one of them, shortened to its lines that say what happened:

# %%
buffer = io.BytesIO()
torch.save({"best_loss": np.float64(0.25)}, buffer)
buffer.seek(0)
try:
    torch.load(buffer)
except Exception as error:
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(error))                   # without the bold-face codes
    for line in message.splitlines():
        if line.startswith(("Weights only load failed", "\t(1)", "\tWeightsUnpickler")):
            print(textwrap.fill(line.strip(), 110, subsequent_indent="    "))

# %% [markdown]
# The message offers two ways out: `weights_only=False` — only for files you trust, see below — or
# allowlisting the type with `torch.serialization.add_safe_globals`. The simplest is a third: **store plain
# values**. `float(x)` for a NumPy scalar, `array.tolist()` or `torch.from_numpy(array)` for an array, a
# `dict` instead of a `Namespace`, `str(path)` for a path. `numpy_rng_state()` of section 1 does that for
# NumPy's RNG, and restores it exactly:

# %%
state = numpy_rng_state()
draws = np.random.rand(3)
buffer = io.BytesIO()
torch.save({"numpy_rng": state, "best_loss": float(np.float64(0.25)), "config": vars(argparse.Namespace(lr=0.01))},
           buffer)
buffer.seek(0)
loaded = torch.load(buffer, weights_only=True)
set_numpy_rng_state(loaded["numpy_rng"])
print("loads with weights_only=True:", sorted(loaded), "| NumPy draws again the same numbers:",
      np.array_equal(np.random.rand(3), draws))

# %% [markdown]
# ### Why a pickle can run code
#
# A pickled object says how to rebuild itself: "call this function with these arguments". An object's
# `__reduce__` method chooses the function, and the unpickler calls it. Here is a harmless payload: when it
# is loaded it runs `exec`, which runs any Python code — this code only writes a note into the temporary
# folder. It travels in a file that looks like an ordinary checkpoint.

# %%
note = Path(scratch.name) / "note.txt"


class Payload:
    def __reduce__(self):               # "to rebuild me, call exec(<this code>)"
        return (exec, (f"open({str(note)!r}, 'w').write('this ran while the checkpoint was loaded')",))


torch.save({"model": {"weight": torch.ones(2)}, "step": 7, "extra": Payload()}, Path(scratch.name) / "gift.pt")
print("before loading, the note exists:", note.exists())
loaded = torch.load(Path(scratch.name) / "gift.pt", weights_only=False)
print(f"loaded with weights_only=False: keys {sorted(loaded)}; the note exists: {note.exists()}: "
      f"{note.read_text()!r}")
note.unlink()
try:
    torch.load(Path(scratch.name) / "gift.pt", weights_only=True)
except Exception as error:
    refused = re.search(r"GLOBAL (\S+) was not an allowed global", str(error)).group(1)
    print(f"loaded with weights_only=True: {type(error).__name__}, refused global {refused}; "
          f"the note exists: {note.exists()}")

# %% [markdown]
# `exec` could as well have been `os.system`. So: `weights_only=False` only for files you made yourself or
# trust like your own code — never for a file downloaded from somewhere. And write your own checkpoints so
# that they load with `weights_only=True`; then nobody needs to switch the protection off.
#
# ## 7. Writing checkpoints safely
#
# ### A failing `torch.save` destroys the previous checkpoint
#
# `torch.save(state, path)` opens `path` for writing — which empties the file — and then writes. Until the
# last byte is written, `path` holds no checkpoint at all. If anything goes wrong in between, the old
# checkpoint is gone and the new one is not there. Here the failure is a mistake in the state: an open log
# file kept in it, which cannot be pickled. (A process killed in the middle of the write is shown below.)

# %%
folder = Path(scratch.name) / "naive"
folder.mkdir()
path = folder / "checkpoint.pt"
torch.save({"step": 100, "weights": torch.randn(1000)}, path)              # a good checkpoint
print(f"before: {path.name} is {path.stat().st_size} bytes, step {torch.load(path, weights_only=True)['step']}")
with open(folder / "train.log", "w") as log:
    try:
        torch.save({"step": 200, "weights": torch.randn(1000), "log": log}, path)   # the log handle: a mistake
    except Exception as error:
        print(f"torch.save failed: {type(error).__name__}: {error}")
print(f"after:  {path.name} is {path.stat().st_size} bytes")
try:
    torch.load(path, weights_only=True)
except Exception as error:
    print(f"torch.load: {type(error).__name__}: {str(error).split('. ')[0]}.")

# %% [markdown]
# ### The atomic write
#
# The cure is to never write into the file that holds the good checkpoint:
#
# 1. write the new checkpoint to a **temporary file in the same directory**;
# 2. `flush()` it (Python's buffer → the operating system) and `os.fsync()` it (the operating system's cache
#    → the disk), so that its bytes are really on the disk;
# 3. `os.replace(temporary, path)`: a rename. Within one file system a rename is atomic — `path` names
#    either the old file or the new one, never a mix. That is why the temporary file must be in the same
#    directory: across file systems, `os.replace` may fail, or copy instead of renaming.
#
# If anything fails before the rename, the temporary file is removed and the error goes on to the caller;
# the old checkpoint was never touched. (Why `fsync`: without it, a power cut soon after the rename can leave
# the new name pointing at data that never reached the disk. That cannot be shown without cutting the
# power; here `fsync` is a precaution, not a demonstration.)

# %%
def save_atomically(state, path):
    """torch.save(state, path), but `path` holds either the previous file or the new one, never a part."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")        # same directory: os.replace is a rename
    try:
        with open(temporary, "wb") as file:
            torch.save(state, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:                                 # Ctrl-C (KeyboardInterrupt) too
        temporary.unlink(missing_ok=True)
        raise


folder = Path(scratch.name) / "atomic"
folder.mkdir()
path = folder / "checkpoint.pt"
save_atomically({"step": 100, "weights": torch.randn(1000)}, path)
with open(folder / "train.log", "w") as log:
    try:
        save_atomically({"step": 200, "weights": torch.randn(1000), "log": log}, path)
    except Exception as error:
        print(f"save_atomically failed: {type(error).__name__}: {error}")
print(f"after: the folder holds {sorted(p.name for p in folder.iterdir())}; {path.name} loads, step "
      f"{torch.load(path, weights_only=True)['step']}")

# %% [markdown]
# One fixed temporary name is enough for a single writer; when several processes might save into one folder
# at once, `tempfile.mkstemp(dir=path.parent)` gives each its own.
#
# An exception runs the clean-up. A process that is **killed** runs nothing: no `except`, no `finally`. To
# see that case, a child process saves "step 3" over a `checkpoint.pt` that holds step 2, once with
# `torch.save` and once with `save_atomically` (its source is copied into the script), with a state whose
# pickling ends the process on the spot — `os._exit`, like a kill in the middle of the save.

# %%
script = textwrap.dedent("""\
    import os, sys
    from pathlib import Path
    import torch

    class PowerCut:
        def __reduce__(self):                    # called while torch.save pickles the state
            os._exit(1)                          # the process ends here, at once: no except, no finally

    """) + inspect.getsource(save_atomically) + textwrap.dedent("""
    how, folder = sys.argv[1], Path(sys.argv[2])
    save = torch.save if how == "torch.save" else save_atomically
    save({"step": 3, "weights": torch.zeros(1000), "cut": PowerCut()}, folder / "checkpoint.pt")
    print("not reached")
    """)
(Path(scratch.name) / "child.py").write_text(script)
for how in ("torch.save", "save_atomically"):
    folder = Path(scratch.name) / f"killed_{how}"
    folder.mkdir()
    torch.save({"step": 2, "weights": torch.zeros(1000)}, folder / "checkpoint.pt")
    child = subprocess.run([sys.executable, str(Path(scratch.name) / "child.py"), how, str(folder)],
                           capture_output=True, text=True)
    print(f"killed during {how}: the child ended with exit status {child.returncode} and printed {child.stdout!r}")
    for file in sorted(folder.iterdir()):
        try:
            content = f"loads, step {torch.load(file, weights_only=True)['step']}"
        except Exception as error:
            content = f"does not load: {type(error).__name__}"
        print(f"    {file.name:18s} {file.stat().st_size:5d} bytes, {content}")

# %% [markdown]
# Killed during `torch.save`, the only checkpoint is gone: the file was emptied when the save began. Killed
# during the atomic save, the good checkpoint survived, and the temporary file stayed behind. Code that
# looks for the latest checkpoint must therefore look only at complete checkpoint names and ignore `*.tmp`
# leftovers (or delete them when the run starts).
#
# ### Keeping the last k, and finding the latest
#
# A checkpoint per epoch fills a disk; usually only the newest few are kept. With names like `step_<N>.pt`,
# "newest" means the largest N — and sorting the names as strings does not give that: strings compare
# character by character, and `"1" < "9"`.

# %%
names = [f"step_{n}.pt" for n in (8, 9, 10, 11)]
by_name = sorted(names)
by_number = sorted(names, key=lambda name: int(name.removeprefix("step_").removesuffix(".pt")))
print("sorted by name:  ", by_name, "-> the 'latest' is", by_name[-1])
print("sorted by number:", by_number, "-> the latest is", by_number[-1])
print("keep the 2 newest, deleting by name would remove:  ", by_name[:-2])
print("keep the 2 newest, deleting by number would remove:", by_number[:-2])

# %% [markdown]
# By name, `step_9.pt` looks newer than `step_11.pt`, and a rotation by name would delete the two newest
# checkpoints, and the run would resume from an older one — silently losing the work since. Parse the number. (Zero-padded names
# such as `step_000010.pt` sort correctly — until a run outgrows the padding.) The second exercise writes
# both functions, robust against the other files a checkpoint folder collects.
#
# ## 8. safetensors: weights, and only weights
#
# The **safetensors** format stores a flat mapping from names to tensors: a small JSON header (each tensor's
# dtype, shape and byte range) followed by the raw bytes. Loading it parses JSON and copies bytes — there is
# no pickle and no code to run: loading a stranger's file runs none of their code.

# %%
seed_everything(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
path = Path(scratch.name) / "model.safetensors"
save_file(model.state_dict(), path)
raw = path.read_bytes()
header_length = struct.unpack("<Q", raw[:8])[0]                 # 8 bytes: the JSON header's length
header = json.loads(raw[8:8 + header_length])
for name, entry in header.items():
    print(f"{name:9s} {entry}")
copy_of_model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
copy_of_model.load_state_dict(load_file(path))
print("loaded back, every weight equal:",
      all(torch.equal(a, b) for a, b in zip(model.parameters(), copy_of_model.parameters())))

# %% [markdown]
# What it refuses. A model with **tied weights** — a language model whose output layer reuses the input
# embedding's matrix, so both names in the `state_dict()` point at one tensor; values that are **not
# tensors**; and therefore an optimizer's `state_dict()`, a nest of dicts:

# %%
class TiedLM(nn.Module):
    def __init__(self, vocabulary=50, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.head = nn.Linear(width, vocabulary, bias=False)
        self.head.weight = self.embed.weight                  # one matrix, two names

    def forward(self, tokens):
        return self.head(self.embed(tokens))


tied = TiedLM()
adam = torch.optim.Adam(tied.parameters())
tied(torch.tensor([[1, 2, 3]])).sum().backward()
adam.step()
ATTEMPTS = {"the tied model's state_dict()": tied.state_dict(),
            "weights and a step number": {"weight": torch.ones(2), "step": 7},
            "the optimizer's state_dict()": adam.state_dict()}


def sorted_sets(text):
    """A set of names prints in an order that changes from run to run: sort each one, so the output is stable."""
    return re.sub(r"\{('[^{}]*')\}", lambda found: "{" + ", ".join(sorted(found.group(1).split(", "))) + "}", text)


for name, value in ATTEMPTS.items():
    try:
        save_file(value, Path(scratch.name) / "attempt.safetensors")
        print(f"{name}: saved")
    except Exception as error:
        print(f"{name}: {type(error).__name__}: {sorted_sets(' '.join(str(error).split()))}")

# %% [markdown]
# For tied weights the message points to `save_model`, which stores each shared tensor once, and
# `load_model`, which loads into a model that ties them itself:

# %%
save_model(tied, Path(scratch.name) / "tied.safetensors")
print("names in the file:", sorted(load_file(Path(scratch.name) / "tied.safetensors")))
fresh = TiedLM()
missing, unexpected = load_model(fresh, Path(scratch.name) / "tied.safetensors")
print(f"load_model: missing {sorted(missing)}, unexpected {unexpected}; still tied: "
      f"{fresh.head.weight is fresh.embed.weight}; equal to the saved weights: "
      f"{torch.equal(fresh.embed.weight, tied.embed.weight)}")

# %% [markdown]
# So the two formats have different jobs. **safetensors** for weights that leave the training run —
# shared, published, loaded by people who must not have to trust you. **`torch.save`, loaded with
# `weights_only=True`**, for a training checkpoint: nested dicts, step numbers, RNG states, the optimizer's
# state — what a resume needs and safetensors cannot hold without flattening it all into tensors by hand.
#
# ## 9. Across machines and wrappers
#
# ### A checkpoint written on a GPU
#
# `torch.save` records, for every tensor, the device it was on, and `torch.load` puts it back there. A
# checkpoint written on a GPU therefore asks for `cuda:0` when it is loaded. The machine that built this
# notebook has no GPU to write one, so the cell below makes such a file by a trick, said plainly: while saving, it replaces
# `torch.serialization.location_tag` — the function `torch.save` asks for each tensor's device name — with
# one that answers `"cuda:0"`. The file records its tensors as CUDA tensors, as a GPU-written file does.

# %% tags=nbval-ignore-output
real_location_tag = torch.serialization.location_tag
torch.serialization.location_tag = lambda storage: "cuda:0"     # pretend every tensor is on the first GPU
try:
    torch.save({"weights": torch.arange(4.0), "step": 7}, Path(scratch.name) / "from_gpu.pt")
finally:
    torch.serialization.location_tag = real_location_tag

try:
    loaded = torch.load(Path(scratch.name) / "from_gpu.pt", weights_only=True)
    print(f"this machine has a GPU: the tensors were loaded onto {loaded['weights'].device}")
except RuntimeError as error:
    print(f"torch.cuda.is_available() is {torch.cuda.is_available()}: RuntimeError:")
    print(textwrap.fill(str(error), 110))

# %% [markdown]
# On a machine without a GPU, that is the error. `map_location` chooses where the tensors go instead: a
# device, or a dict mapping recorded devices to new ones. `map_location="cpu"` always works; to load
# straight onto whatever this machine has, use `map_location=device`.

# %%
loaded = torch.load(Path(scratch.name) / "from_gpu.pt", weights_only=True, map_location="cpu")
print(f"map_location='cpu': weights on {loaded['weights'].device}, step {loaded['step']}")
loaded = torch.load(Path(scratch.name) / "from_gpu.pt", weights_only=True, map_location=device)
print(f"map_location=device: weights on this kernel's device: {loaded['weights'].device.type == device.type}, "
      f"step {loaded['step']}")

# %% [markdown]
# ### The `state_dict()` of a wrapped model
#
# `torch.compile(model)` and `DistributedDataParallel(model)` (chapter 08) wrap the model in a new module
# that holds the original as an attribute — `_orig_mod` and `module` — and their `state_dict()` names
# carry that prefix. (Compiling happens only at the first call; wrapping is enough to see the names.) The
# DDP wrapper needs a process group: one process, the `gloo` backend, meeting through a file in the
# temporary folder.

# %%
seed_everything(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
compiled = torch.compile(model)
dist.init_process_group("gloo", init_method=(Path(scratch.name) / "rendezvous").as_uri(), rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=30))
try:
    wrapped = DistributedDataParallel(model)
    ddp_state = wrapped.state_dict()
finally:
    dist.destroy_process_group()
compiled_state = compiled.state_dict()
print("plain:   ", list(model.state_dict())[:2])
print("compiled:", list(compiled_state)[:2], "| compiled._orig_mod is model:", compiled._orig_mod is model)
print("DDP:     ", list(ddp_state)[:2], "| wrapped.module is model:", wrapped.module is model)
try:
    nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).load_state_dict(compiled_state)
except RuntimeError as error:
    print(textwrap.shorten(" ".join(str(error).split()), 200, placeholder=" ..."))

# %% [markdown]
# A plain model refuses the prefixed names. Two cures: **save the unwrapped model** —
# `compiled._orig_mod.state_dict()`, `wrapped.module.state_dict()`, or simply the `model` you wrapped, whose
# parameters are the same tensors; or, for a file that already has prefixes, **strip them** when loading.
# `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present` does that, in place; by hand it is one
# dict comprehension:

# %%
for name, state in (("compiled", compiled_state), ("DDP", ddp_state)):
    prefix = "_orig_mod." if name == "compiled" else "module."
    stripped = dict(state)                                  # a shallow copy, to keep the original
    consume_prefix_in_state_dict_if_present(stripped, prefix)
    by_hand = {key.removeprefix(prefix): value for key, value in state.items()}
    target = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    print(f"{name:8s}: stripped names {list(stripped)[:2]}; load_state_dict: {target.load_state_dict(stripped)}; "
          f"by hand the same names: {list(by_hand) == list(stripped)}")

# %% [markdown]
# In a DDP run every process holds the same weights; only one of them — rank 0 — should write the
# checkpoint, or they all write the same file at once (chapter 08).
#
# The exercises come next; after them, your two functions in one training loop that crashes and resumes,
# and the chapter's summary.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check checkpoint my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=checkpoint_task
# ## Exercise 1 · `checkpoint` (12 points)
#
# Write two functions in the answer cell below (the checks need both names defined):
#
# ```python
# save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None)
# load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None,
#                 map_location="cpu") -> int
# ```
#
# **What the checkpoint holds.** It holds what resuming needs to continue **bit for bit** as if never
# stopped, when it is saved between epochs:
#
# * the `state_dict()` of the model, the optimizer, and the scheduler and scaler when given;
# * `step`;
# * the RNG states of Python's `random`, NumPy's global generator, torch on the CPU and on every CUDA device
#   present;
# * and the state of `generator` (the one a `DataLoader` shuffles with) when given.
#
# (On CUDA, bit-exactness also needs deterministic kernels.)
#
# **Loading.** `load_checkpoint` restores all of these into the objects passed and every RNG (CUDA states
# for the devices present; the rest ignored), and returns `step`. An object passed whose state the
# checkpoint does not hold raises `KeyError`.
#
# **The file.** It loads with `torch.load(path, weights_only=True)`: only tensors, numbers, strings and
# plain containers (no pickled NumPy or other Python objects). A checkpoint written on a GPU loads on a
# machine without one.
#
# **Writing is atomic.** The data goes to a temporary file in the same directory, is flushed and fsynced,
# then `os.replace`d onto `path`. Until that completes, `path` holds the previous checkpoint intact (or
# does not exist). If saving fails half-way (any exception, `KeyboardInterrupt` included), the previous file
# is unchanged, the error propagates, and the temporary file is removed. Parent directories are created as
# needed.
#
# *Hint:* sections 1 and 2 list and restore the state, section 6 stores NumPy's RNG as plain values, section
# 7 writes atomically, and section 9 loads GPU files on a CPU. `torch.cuda.get_rng_state_all()` and
# `torch.cuda.set_rng_state(state, index)` handle the CUDA generators; `torch.set_rng_state` and
# `Generator.set_state` want CPU byte tensors, wherever `map_location` put them. Check for missing states
# before restoring anything.

# %% nbgrader=solution id=checkpoint_answer
import os
import pathlib
import random

import numpy as np
import torch


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    """Write everything an exact resume needs to `path`, atomically."""
    ### BEGIN SOLUTION
    from solutions.ch07_checkpointing import save_checkpoint as reference

    return reference(path, model=model, optimizer=optimizer, step=step, scheduler=scheduler, scaler=scaler,
                     generator=generator)
    ### END SOLUTION


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    """Restore a checkpoint written by save_checkpoint into the objects given and every RNG; return its step."""
    ### BEGIN SOLUTION
    from solutions.ch07_checkpointing import load_checkpoint as reference

    return reference(path, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler,
                     generator=generator, map_location=map_location)
    ### END SOLUTION

# %% nbgrader=test id=checkpoint_resume_checks points=3
check("checkpoint", globals(), "resumes_bit_for_bit")

# %% nbgrader=test id=checkpoint_file_checks points=2
check("checkpoint", globals(), "returns_the_saved_step", "loads_with_weights_only")

# %% nbgrader=test id=checkpoint_hidden_state points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint", globals(), "resumes_with_a_grad_scaler", "missing_state_raises_key_error", "honours_map_location")
### END HIDDEN TESTS

# %% nbgrader=test id=checkpoint_atomic_checks points=2
check("checkpoint", globals(), "failed_save_keeps_the_previous_file")

# %% nbgrader=test id=checkpoint_hidden_write points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint", globals(), "saves_through_a_temporary_file", "creates_parent_directories")
### END HIDDEN TESTS

# %% nbgrader=test id=checkpoint_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint", globals(), "round_trips_on_generated_setups")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=checkpoint_files_task
# ## Exercise 2 · `checkpoint_files` (8 points)
#
# Write two functions in the answer cell below (the checks need both names defined):
#
# ```python
# latest_checkpoint(directory) -> pathlib.Path | None
# rotate_checkpoints(directory, keep) -> list[pathlib.Path]
# ```
#
# **Which files are checkpoints.** Checkpoints are regular files named exactly `step_<N>.pt`, `N` one or
# more ASCII digits (case-sensitive; `step_007.pt` is step 7; equal steps are ordered by name). Paths are
# returned as `pathlib.Path(directory) / name`.
#
# **`latest_checkpoint`** returns the one with the largest `N` (by number, not by name), or `None` when
# there is none or the directory does not exist. Other files (temporary files such as `step_7.pt.tmp`,
# `notes.txt`) and folders are ignored.
#
# **`rotate_checkpoints`** deletes all but the `keep` newest by `N` and returns the deleted paths, oldest
# first (`[]` for a missing directory). Other files are never touched. It raises `ValueError` when
# `keep < 1`.
#
# *Hint:* section 7 shows why the number must be parsed. Decide for each directory entry whether its whole
# name matches; `str.isdigit()` and the regular expression `\d` accept more than the ASCII digits 0-9, and
# `int()` accepts signs, spaces and underscores. A folder can have a checkpoint's name.

# %% nbgrader=solution id=checkpoint_files_answer
import pathlib


def latest_checkpoint(directory):
    """The step_<N>.pt file in `directory` with the largest N, or None."""
    ### BEGIN SOLUTION
    from solutions.ch07_checkpointing import latest_checkpoint as reference

    return reference(directory)
    ### END SOLUTION


def rotate_checkpoints(directory, keep):
    """Delete all but the `keep` newest step_<N>.pt files; return the deleted paths, oldest first."""
    ### BEGIN SOLUTION
    from solutions.ch07_checkpointing import rotate_checkpoints as reference

    return reference(directory, keep)
    ### END SOLUTION

# %% nbgrader=test id=latest_checkpoint_checks points=3
check("checkpoint_files", globals(), "latest_by_number", "latest_missing_or_empty_directory")

# %% nbgrader=test id=latest_checkpoint_hidden points=1
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint_files", globals(), "latest_ignores_other_entries")
### END HIDDEN TESTS

# %% nbgrader=test id=rotate_checkpoints_checks points=3
check("checkpoint_files", globals(), "rotate_keeps_the_newest", "rotate_missing_directory_and_bad_keep")

# %% nbgrader=test id=rotate_checkpoints_hidden points=1
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint_files", globals(), "rotate_leaves_other_files_alone")
### END HIDDEN TESTS

# %% nbgrader=test id=checkpoint_files_hidden_generated points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("checkpoint_files", globals(), "latest_on_generated_directories", "rotate_on_generated_directories")
### END HIDDEN TESTS

# %% [markdown]
# ## Your code at work: a run that crashes and resumes
#
# Once all four functions pass, here they are in one training loop: section 1's run saves a checkpoint
# with `save_checkpoint` after every epoch, as `step_<N>.pt` with N the number of steps done, and keeps the
# newest 2 with `rotate_checkpoints`. In epoch 5 (the sixth), at step 33, it crashes. A new run — every object rebuilt
# from another seed, as a new process would — finds the newest checkpoint with `latest_checkpoint`, loads
# it with `load_checkpoint`, and trains to the end. Compared with section 2's uninterrupted run:

# %%
with uses_your_answer("latest_checkpoint", "load_checkpoint", "rotate_checkpoints", "save_checkpoint"):
    STEPS_PER_EPOCH = len(straight_run.loader)


    def train_with_checkpoints(run, folder, first_epoch, losses, crash_at=None):
        """Train `run` from first_epoch to the end, appending each loss to `losses`; checkpoint after every
        epoch, keep the newest 2; raise at step `crash_at`."""
        run.model.train()
        for epoch in range(first_epoch, EPOCHS):
            for inputs, targets, _ in run.loader:
                if len(losses) == crash_at:
                    raise RuntimeError(f"the machine was taken back at step {crash_at}")
                losses.append(train_step(run, inputs, targets))
            run.scheduler.step()
            step = (epoch + 1) * STEPS_PER_EPOCH
            save_checkpoint(folder / f"step_{step}.pt", model=run.model, optimizer=run.optimizer, step=step,
                            scheduler=run.scheduler, generator=run.order)
            rotate_checkpoints(folder, keep=2)


    folder = Path(scratch.name) / "run" / "checkpoints"             # save_checkpoint creates the folders
    losses = []
    try:
        train_with_checkpoints(make_run(seed=0), folder, 0, losses, crash_at=33)
    except RuntimeError as error:
        print(f"crash after {len(losses)} steps: {error}")
    print("the checkpoint folder after the crash:", sorted(p.name for p in folder.iterdir()))

    new_run = make_run(seed=1)
    latest = latest_checkpoint(folder)
    step = load_checkpoint(latest, model=new_run.model, optimizer=new_run.optimizer, scheduler=new_run.scheduler,
                           generator=new_run.order)
    print(f"resuming from {latest.name}: step {step}, epoch {step // STEPS_PER_EPOCH}")
    del losses[step:]                                                # the crashed epoch's steps are done again
    train_with_checkpoints(new_run, folder, step // STEPS_PER_EPOCH, losses)
    print("the checkpoint folder at the end:", sorted(p.name for p in folder.iterdir()))
    pairs = list(zip(new_run.model.parameters(), straight_run.model.parameters()))
    print(f"{len(losses)} losses, equal to the uninterrupted run's: {losses == straight}; "
          f"parameters torch.equal: {sum(torch.equal(a, b) for a, b in pairs)} of {len(pairs)}")
    plot_resumed_runs(straight, {"crashed at step 33, resumed from the latest checkpoint": losses},
                      resume_at=step, marks={"crash": 33}, columns=1, panel_size=(6.0, 3.2),
                      title="your save_checkpoint, load_checkpoint, latest_checkpoint and rotate_checkpoints")

# %%
scratch.cleanup()                                                # every file of the chapter, gone
print("temporary folder removed:", not Path(scratch.name).exists())

# %% [markdown]
# ## Summary
#
# * A resumable checkpoint holds the **model**, the **optimizer** (Adam's two running averages per
#   parameter and the learning rate), the **scheduler**, the **position** (epoch, step), the state of
#   **every RNG** the step draws from — Python's `random`, NumPy, torch on the CPU and on each GPU — the
#   **data order** (the loader's generator) and, with float16, the **`GradScaler`**. A `state_dict()` is a
#   view of the live tensors, not a copy.
# * **Prove** a resume: train N steps straight and k + (N − k) with a reload into objects built from another
#   seed, and compare with `==` and `torch.equal`. Here, leaving out the RNGs or the data order changed the
#   first resumed step, the optimizer state the first resumed update, and the scheduler state nothing until
#   its milestone, 12 steps after resuming.
# * **Mid-epoch**: save the generator's state at the start of the epoch and the number of batches done;
#   the state at the moment of saving gives a different order for the rest of the epoch.
# * **Size**: Adam's state is twice the weights (momentum SGD once, plain SGD nothing); a training
#   checkpoint with Adam is about three times a weights file.
# * **`torch.load` defaults to `weights_only=True`** (torch ≥ 2.6): it refuses NumPy scalars and arrays,
#   paths, namespaces and other objects. Store plain values (`float()`, `.tolist()`, tensors, dicts). A pickle
#   can call any function while loading: `weights_only=False` only for files you trust.
# * **Write atomically**: temporary file in the same directory, `flush`, `fsync`, `os.replace`. A naive
#   `torch.save` that fails half-way leaves no loadable checkpoint; a killed atomic save leaves a `.tmp` file
#   and the old checkpoint intact. Find the latest and rotate **by number**: `step_9.pt` sorts after
#   `step_11.pt` by name.
# * **safetensors** for weights you share: no code runs when loading; it refuses tied tensors (use
#   `save_model`/`load_model`) and anything that is not a tensor — a training checkpoint stays a
#   `torch.save` file.
# * **Across machines**: `map_location="cpu"` (or `device`) for a GPU checkpoint on a CPU machine; a compiled
#   model's names start with `_orig_mod.` and a DDP model's with `module.`: save the unwrapped model, or
#   strip the prefix with `consume_prefix_in_state_dict_if_present`.
