# %% [markdown]
# # 08 · Distributed data parallel: many processes, one training run
#
# One process trains on one device. To train faster you run **several processes**, each with a full copy of
# the model and its own share of the data. Each computes gradients on its share; before the optimizer step,
# the processes average their gradients, so every copy takes the same step and the copies stay identical.
# That is **data parallelism**, and `torch.nn.parallel.DistributedDataParallel` (DDP) is PyTorch's
# implementation of it. It is how most training runs on more than one GPU or machine.
#
# Nothing in this chapter is simulated: every demonstration starts real processes that talk to each other
# through `torch.distributed`, two of them, on this machine's CPU with the **gloo** backend (on GPUs the
# same code would use **NCCL**). Starting processes from a notebook has its own trap, which comes first.
# Distributed code also has new ways to fail: a process that waits for a partner that never comes waits
# for 30 minutes by default. Here every wait is a few seconds, so that a mistake shows up at once.
#
# **In this chapter** you will
# 1. meet processes, ranks, world size and local rank, backends, and how processes find each other (the
#    rendezvous) — without a fixed port;
# 2. start processes from a notebook: watch spawn fail on a function defined in the notebook, and use what
#    works — fork, a module, `torchrun`, and a helper that sends the function by value;
# 3. run the collectives `all_reduce`, `broadcast`, `all_gather` and `barrier` on two real ranks;
# 4. make a wrong collective fail in milliseconds instead of hanging (`TORCH_DISTRIBUTED_DEBUG=DETAIL`,
#    `monitored_barrier`);
# 5. wrap a model in DDP: identical start by broadcast, gradients averaged — the mean, not the sum — in
#    buckets that overlap the backward pass;
# 6. split the data with `DistributedSampler`: padding, `drop_last`, and `set_epoch` (pictured);
# 7. accumulate gradients with `no_sync`, counting the all-reduces; save a checkpoint from rank 0;
# 8. compute the effective batch size and scale the learning rate; compare DataParallel with DDP;
# 9. measure the scaling on this machine, and what oversubscribed cores cost;
# 10. write a `torchrun` script from the notebook and run it;
# 11. write three graded exercises — `shard_indices`, `average_gradients`, `ddp_accumulation` — and train
#     with them on two ranks.

# %% nbgrader=readonly id=opening
import contextlib
import datetime
import multiprocessing
import os
import pickle
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import cloudpickle
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

from coursekit import start_chapter
from coursekit.claims import under
from coursekit.distributed import Ranks, RankError, rank_device, run_on_ranks
from coursekit.plots import plot_rank_indices, plot_scaling
from coursekit.practice import uses_your_answer
from graders import check

device = start_chapter("08_ddp")

# %% [markdown]
# The numbers this chapter prints are compared with the ones in the committed notebook, and the last bits of
# a sum can depend on how many threads share it; so the notebook's own process runs torch on one thread, and
# so does every rank it starts (section 9 shows why that matters for more than reproducibility).

# %%
torch.set_num_threads(1)
print("torch CPU threads for this chapter:", torch.get_num_threads())
scratch = tempfile.TemporaryDirectory(prefix="course-08-")   # every file of the chapter; removed at the end
SCRATCH = Path(scratch.name)

# %% [markdown]
# ## 1. Processes, ranks and the process group
#
# A distributed job is a set of ordinary processes that run the same script. Each gets a number:
#
# * **world size** — how many processes the job has, on all machines together;
# * **rank** — this process's number, `0 … world size − 1`. Rank 0 usually does the jobs that need doing
#   once: printing, saving checkpoints;
# * **local rank** — its number among the processes *on its machine* (a *node*). With 2 machines of 4 GPUs,
#   the ranks are 0–7 and the local ranks 0–3 on each machine; process `local_rank` uses GPU `local_rank`.
#
# The processes talk through a **process group** and a **backend**, the library that moves the bytes:
#
# * **gloo** — on the CPU (and, slowly, CUDA tensors); it runs everywhere, which is why this chapter uses it;
# * **NCCL** — NVIDIA's library for GPUs, the one to use on GPUs. It needs **one GPU per rank**: two ranks
#   cannot share a GPU. So with one GPU, this course's multi-process checks run on gloo, on the CPU; with two
#   or more GPUs, on NCCL;
# * (MPI and others exist; you will rarely need them.)
#
# Before they can talk, the processes must find each other: the **rendezvous**. Every process joins with
# `dist.init_process_group(backend, init_method=..., rank=..., world_size=...)`, which meets the others
# through a **store**, a small key-value table all of them can reach, where each leaves its address:
#
# * `init_method="tcp://HOST:PORT"` (a `TCPStore`): rank 0 serves the table on that port; the others connect;
# * `init_method="env://"`, the default: the same, with the address in the environment variables
#   `MASTER_ADDR` and `MASTER_PORT`, and `RANK` and `WORLD_SIZE` there too — which is what `torchrun`
#   (section 10) sets for every process it starts;
# * `init_method="file:///path/to/file"` (a `FileStore`): the table is a file that every process can open —
#   on one machine, or on a shared file system.
#
# A fixed port such as the common 29500 works until two jobs on one machine want it: two notebooks, two
# students on a shared server, two test runs at once. The second fails to bind it — or worse, joins the first
# job's rendezvous. This chapter never fixes a port: its processes meet through a file in a fresh temporary
# folder, and where a port is needed, **port 0** asks the operating system for any free one. A store on
# its own shows both (here with a single process, world size 1):

# %%
store = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=datetime.timedelta(seconds=5))
store.set("rank 0's address", "whatever the others need to connect")
print("TCPStore on port 0: the system gave it a free port:", store.port != 0, "|", store.get("rank 0's address"))
del store

file_store = dist.FileStore(str(SCRATCH / "rendezvous"), 1)
file_store.set("greeting", "hello through a file")
print("FileStore:", file_store.get("greeting"), "| the table lives in the file", (SCRATCH / "rendezvous").name)
del file_store

# %% [markdown]
# ## 2. Starting processes from a notebook
#
# Chapter 04 met the two ways Python starts a process, for the `DataLoader`'s workers: **fork** (the default
# on Linux until Python 3.14) copies the running process, notebook variables and all; **spawn** (the default
# on macOS and Windows) starts a fresh interpreter and sends it the *name* of the function to run. For a
# function defined in a notebook that name is `__main__.<name>`, and a fresh interpreter's `__main__` does
# not have it. Here is the failure, with a process started by spawn. The child writes its traceback to the
# error output it inherited (file descriptor 2); the cell points that at a temporary file while the child
# runs, and prints the file's last line:

# %%
def greet(rank):
    return f"rank {rank}: hello"


def run_and_capture_stderr(process):
    """Start and join `process` with file descriptor 2 pointing at a temporary file; return what it wrote."""
    with tempfile.TemporaryFile(mode="w+") as child_stderr:
        kernel_stderr = os.dup(2)
        os.dup2(child_stderr.fileno(), 2)              # the child inherits descriptor 2: now this file
        try:
            process.start()
            process.join(timeout=30)
        finally:
            os.dup2(kernel_stderr, 2)                  # the kernel's own error output back
            os.close(kernel_stderr)
        child_stderr.seek(0)
        return child_stderr.read().strip().splitlines()


child = multiprocessing.get_context("spawn").Process(target=greet, args=(0,))
said = run_and_capture_stderr(child)
print("exit code:", child.exitcode)
print("the child's last words:", said[-1])
print(f"what pickle sends for greet ({len(pickle.dumps(greet))} bytes):", pickle.dumps(greet))

# %% [markdown]
# The pickle of `greet` is a few dozen bytes: the module name `__main__` and the name `greet` — a reference, not
# the code. What works instead:
#
# * **fork**, on Linux: the child is a copy of this process, `greet` included. macOS offers fork but it is
#   unsafe there (system libraries break in a forked child), Windows does not have it, and a process that has
#   used CUDA cannot fork a child that uses CUDA. Fine for a quick experiment on Linux, wrong for code that
#   must run anywhere;
# * **a module**: put the function in a `.py` file and import it; a spawned child imports it too (chapter 04's
#   cure). Every real training script works this way;
# * **`torchrun`**: the launcher starts N copies of a *script* (section 10) — the way to run real jobs, on one
#   machine or many;
# * **send the function by value**: `cloudpickle`, a pickle that copies a notebook function's code (and the
#   notebook globals it uses), gets it to a spawned child inside an importable helper.
#
# The first two, side by side (fork only where it is safe to offer it). The module goes into the chapter's
# temporary folder, which joins `sys.path` — chapter 04 wrote its modules with `%%writefile`:

# %%
(SCRATCH / "greetings.py").write_text(textwrap.dedent("""\
    def greet(rank):
        return f"rank {rank}: hello from a module"
    """))
sys.path.insert(0, str(SCRATCH))
import greetings                                   # noqa: E402 - written just above

if sys.platform.startswith("linux"):
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("fork, the notebook's greet:   ", pool.map(greet, range(2)))
else:
    print("fork: not used on", sys.platform)
with multiprocessing.get_context("spawn").Pool(2) as pool:
    print("spawn, greetings.greet:        ", pool.map(greetings.greet, range(2)))
by_value = cloudpickle.dumps(greet)
print("cloudpickle sends greet's code:", b"hello" in by_value, "| plain pickle does:", b"hello" in pickle.dumps(greet))

# %% [markdown]
# ### The course's helper: `run_on_ranks`
#
# `coursekit.distributed.run_on_ranks(function, world_size, *args)` uses the fourth way. It starts
# `world_size` processes with the notebook's start method — this notebook is also tested with spawn forced,
# as on macOS and Windows — sends each one `function` by value, and in each process:
#
# 1. joins a fresh process group — gloo, or NCCL when there is a GPU per rank — through a `file://` store in a
#    new temporary folder (no port), with a **short collective timeout** (5 s unless asked);
# 2. runs `function(rank, world_size, *args)` with **one CPU thread**;
# 3. sends back the return value (or the error, naming the rank), and leaves the group.
#
# What the ranks print is shown afterwards with their rank in front; their stderr goes to files, so torch's
# log lines never reach the notebook. Whatever happens — an error, a hang, Ctrl-C — every process is killed
# and the folder removed. (The helper is `coursekit/distributed.py`; its docstrings say why each part is there.)

# %%
def who_am_i(rank, world_size):
    print("hello from inside the rank")
    return {"rank": dist.get_rank(), "world size": dist.get_world_size(), "backend": dist.get_backend(),
            "RANK": os.environ["RANK"], "LOCAL_RANK": os.environ["LOCAL_RANK"],
            "torch threads": torch.get_num_threads(), "runs greet": greet(rank)}


for answer in run_on_ranks(who_am_i, 2):
    print(answer)

# %% [markdown]
# ### Processes that stay up
#
# A process started by spawn imports torch before it can do anything — and for DDP or an optimizer, torch's
# compiler stack too: seconds, on a laptop. A real job pays that once and then trains for hours in the same
# processes. `Ranks(2)` does the same for this notebook: it starts two processes at its first run and keeps
# them; each `ranks.run(function, *args)` is a fresh process group in the same processes, with the same
# guarantees as `run_on_ranks`. The timing varies with the machine and the start method (under fork a child
# needs no imports):

# %% tags=nbval-ignore-output
ranks = Ranks(2)                                   # closed at the end of the chapter
for attempt in ("first run (starts the processes)", "second run (same processes)"):
    start = time.perf_counter()
    ranks.run(lambda rank, world_size: rank * 10)  # a lambda: cloudpickle sends it too
    print(f"{attempt}: {time.perf_counter() - start:.2f} s")

# %% [markdown]
# A rank that raises is reported as such: the helper raises `RankError`, which names the rank and carries its
# traceback (`.remote_traceback`). When one rank fails, the others usually fail *because* of it — a collective
# loses its partner — so the helper reports the rank that failed first.

# %%
def rank_1_fails(rank, world_size):
    if rank == 1:
        raise ValueError("rank 1 found a bad batch")
    dist.barrier()                                # rank 0 waits here for a partner that is gone
    return "rank 0 done"


try:
    ranks.run(rank_1_fails)
except RankError as error:
    print(f"{type(error).__name__}: {error} | error.rank = {error.rank}")
    print("its traceback ends with:", error.remote_traceback.strip().splitlines()[-1])
print("the next run works:", ranks.run(lambda rank, world_size: f"rank {rank} of {world_size}"))

# %% [markdown]
# ## 3. Collectives on real ranks
#
# A **collective** is an operation that every rank of a group calls, and that completes only when all have
# called it. The four you meet most (each works **in place** on the tensors it is given):
#
# * `all_reduce(t, op=SUM)` — every rank ends with the sum (or max, min, product, average) of all ranks' `t`:
#   gradient averaging is an all-reduce;
# * `broadcast(t, src=0)` — every rank ends with rank 0's `t`: how DDP makes the copies of the model equal;
# * `all_gather(list_of_tensors, t)` — every rank ends with everybody's `t`, in rank order;
# * `barrier()` — nobody continues until everybody has arrived.
#
# A collective can also run in a **subgroup** of the ranks, made with `dist.new_group(ranks)` or
# `dist.new_subgroups(...)` (every rank must call these, even one that is not in the new group); then the
# collective involves only that group's ranks, and `dist.get_world_size(group)` is the group's size.

# %%
def collectives(rank, world_size):
    device = rank_device()                         # this rank's device: the CPU under gloo, cuda:<rank> under NCCL
    seen = {}
    t = torch.tensor([rank + 1.0], device=device)
    dist.all_reduce(t)                             # op=dist.ReduceOp.SUM
    seen["all_reduce(sum) of rank + 1"] = t.tolist()
    t = torch.tensor([rank + 1.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    seen["all_reduce(max) of rank + 1"] = t.tolist()
    t = torch.tensor([100.0 * (rank + 1)], device=device)
    dist.broadcast(t, src=0)
    seen["broadcast from rank 0 of 100 * (rank + 1)"] = t.tolist()
    gathered = [torch.zeros(2, device=device) for _ in range(world_size)]
    dist.all_gather(gathered, torch.tensor([rank, 10.0 * rank], device=device))
    seen["all_gather of [rank, 10 * rank]"] = [g.tolist() for g in gathered]
    dist.barrier()
    alone, _ = dist.new_subgroups(group_size=1)   # a group of one rank each
    t = torch.tensor([rank + 1.0], device=device)
    dist.all_reduce(t, group=alone)
    seen["all_reduce(sum) in a group of 1"] = t.tolist() + [f"group size {dist.get_world_size(alone)}"]
    return seen


for rank, seen in enumerate(ranks.run(collectives)):
    print(f"rank {rank}:")
    for name, value in seen.items():
        print(f"    {name:44s} -> {value}")

# %% [markdown]
# ## 4. When a collective goes wrong
#
# A collective waits for all ranks. If one rank calls a different collective — typically an `if rank == 0:`
# with a collective inside — or never arrives, the others wait. For how long? For the process group's
# **timeout**: 30 minutes by default for gloo, 10 for NCCL. Thirty minutes of a frozen cell, or of a job that
# holds 64 GPUs and does nothing, before anything is said. Two cures, and both belong in every debugging
# session: a short timeout, and a debug mode that compares the collectives before running them.
#
# Below, rank 0 calls `all_reduce` and rank 1 `broadcast` — a mistake. Each rank catches its error and
# returns it, with how long it waited. First with a 1-second timeout and no debug mode:

# %%
def clean(error):
    """An error message on one line, without source paths and network addresses (they vary by machine)."""
    text = " ".join(str(error).split())
    text = re.sub(r"\[[^\]\s]+\.(?:cc|cpp|h|hpp):\d+\] ?", "", text)          # [/path/to/pair.cc:561]
    text = re.sub(r"\[?\d{1,3}(?:\.\d{1,3}){3}\]?:\d+", "ADDRESS", text)        # [127.0.0.1]:22444
    return re.sub(r", TensorDeviceTypes=TensorOptions\(.*?memory_format=\(\w+\)\)", "", text)  # long, says little


def mismatched(rank, world_size):
    t = torch.ones(3, device=rank_device())
    start = time.perf_counter()
    try:
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
        return "no error", time.perf_counter() - start
    except RuntimeError as error:
        return clean(error), time.perf_counter() - start


plain = ranks.run(mismatched, collective_timeout=1.0)
detail = ranks.run(mismatched, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})

# %% tags=nbval-ignore-output
for name, results in (("timeout 1 s, no debug mode", plain), ("TORCH_DISTRIBUTED_DEBUG=DETAIL", detail)):
    print(name)
    for rank, (message, seconds) in enumerate(results):
        print(f"    rank {rank} failed after {seconds:.3f} s: {textwrap.shorten(message, 100)}")

# %% [markdown]
# Without the debug mode, each rank waited out the whole timeout and then reported a timeout (or a lost
# connection, when the other rank had given up first) — nothing about *which* collectives disagreed. Had the
# timeout been the default, this cell would have taken half an hour. With `TORCH_DISTRIBUTED_DEBUG=DETAIL`
# the ranks failed within milliseconds. The whole message of rank 0, and what it says:

# %%
print("every rank failed well before the timeout:", all(seconds < 0.5 for _, seconds in detail))
print(textwrap.fill(detail[0][0], 110))

# %% [markdown]
# In DETAIL mode, before each collective the ranks exchange a *fingerprint* of it — its sequence number, its
# kind, the shapes, dtypes and devices of its tensors — and stop at the first difference, on every rank, with
# a message that names both sides. It costs an extra small collective each time: switch it on to find a bug,
# off to measure speed. (It is an environment variable, read when the process group is made: in a script, set
# it before `init_process_group`, or run `TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ...`.)
#
# The other failure: a rank that never arrives — stuck in a slow file system, an endless loop, a deadlock of
# its own. A plain `barrier()` waits out the timeout and says little. `dist.monitored_barrier(timeout=...)`
# (gloo only; with NCCL, make a gloo group for it with `dist.new_group(backend="gloo")`) has rank 0 collect the
# others one by one, and **names the ranks that did not come**:

# %%
def straggler(rank, world_size):
    if rank == 1:
        time.sleep(1.0)                            # stuck somewhere; it never reaches the barrier
        return "rank 1 was busy elsewhere"
    start = time.perf_counter()
    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=0.3))
    except RuntimeError as error:
        return clean(str(error).splitlines()[0]), time.perf_counter() - start


late = ranks.run(straggler, backend="gloo")
print("rank 0:", late[0][0])
print("rank 1:", late[1])

# %% tags=nbval-ignore-output
print(f"rank 0 gave up after {late[0][1]:.2f} s")

# %% [markdown]
# ## 5. DistributedDataParallel
#
# DDP's recipe, in one process per rank:
#
# 1. every rank builds the **same model** and wraps it: `ddp_model = DDP(model)` (on GPUs,
#    `DDP(model.to(local_rank), device_ids=[local_rank])`). The constructor **broadcasts** rank 0's parameters
#    and buffers to all ranks, so the copies — the *replicas* — start equal;
# 2. every rank computes the loss on **its own share of the batch** and calls `backward()`. During the
#    backward pass DDP **all-reduces** the gradients, divides them by the world size, and writes the average
#    into every replica's `.grad`;
# 3. every rank runs the same `optimizer.step()` on the same gradients: the replicas stay equal, without ever
#    sending a weight again.
#
# ### Identical starting weights, by broadcast
#
# A mistake on purpose: each rank seeds its model with its own rank, so the replicas start different. DDP's
# constructor repairs it:

# %%
def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))


def replicas(rank, world_size):
    model = make_model(seed=rank)                  # a different seed on every rank: on purpose
    before = model[0].weight.sum().item()
    ddp_model = DDP(model)                         # broadcasts rank 0's parameters and buffers
    return before, model[0].weight.sum().item(), ddp_model.module is model


# 3 decimals: the weights are the same on every CPU, but the float32 sum of 128 of them moves by up to 1e-6
# with the order of its additions (the CPU's vector width), and rank 1's, 1.4426537, lies 4e-6 from where
# 4 decimals round it down.
for rank, (before, after, same_object) in enumerate(ranks.run(replicas)):
    print(f"rank {rank}: sum of the first weight before DDP {before:+.3f}, after {after:+.3f}; "
          f"ddp_model.module is the model: {same_object}")
print(f"rank 0's model, built here with seed 0: {make_model(0)[0].weight.sum().item():+.3f}")

# %% [markdown]
# (DDP also checks that every rank's model has the same parameter shapes, and refuses to start otherwise.)
# Building the model from the same seed everywhere is still the habit to keep: the broadcast is DDP's, and
# code that syncs weights by hand does not get it.
#
# ### The gradient is the mean
#
# Each rank gets 8 of 16 samples. Three gradients, compared: DDP's; the rank's own gradient all-reduced with
# `SUM` by hand; and that sum divided by the world size. And, in the notebook's own process, the gradient of
# the loss on all 16 samples at once:

# %%
generator = torch.Generator().manual_seed(0)
inputs = torch.randn(16, 8, generator=generator)
labels = torch.randn(16, 1, generator=generator)


def three_gradients(rank, world_size, inputs, labels):
    share = slice(rank * 8, rank * 8 + 8)          # this rank's 8 samples
    ddp_model = DDP(make_model(0))
    F.mse_loss(ddp_model(inputs[share]), labels[share]).backward()
    plain = make_model(0)                          # the same weights, no DDP
    F.mse_loss(plain(inputs[share]), labels[share]).backward()
    local = plain[0].weight.grad.clone()
    summed = local.clone()
    dist.all_reduce(summed, op=dist.ReduceOp.SUM)
    return {"local": local, "ddp": ddp_model.module[0].weight.grad, "sum": summed}


grads = ranks.run(three_gradients, inputs, labels)
one_process = make_model(0)
F.mse_loss(one_process(inputs), labels).backward()
whole_batch = one_process[0].weight.grad

print("the ranks' own gradients differ:     ", not torch.equal(grads[0]["local"], grads[1]["local"]))
print("DDP's gradient is the same on both:  ", torch.equal(grads[0]["ddp"], grads[1]["ddp"]))
print("DDP's gradient / the summed gradient:", (grads[0]["ddp"] / grads[0]["sum"]).unique().tolist())
# Exact, on any CPU: halving a float is exact, and a sum of two numbers rounds the same in either order.
torch.testing.assert_close(grads[0]["ddp"], grads[0]["sum"] / 2, rtol=0, atol=0)
# The same sum over 16 samples, added in another order (8 and 8, then the two halves): equal to float32's
# rounding, 1.5e-8 apart at most here (4.5e-8 with every sum's last bit moved, as another CPU may round it),
# far inside float32's usual tolerance of 1e-5 + 1.3e-6 x |gradient| (assert_close's default, written out).
torch.testing.assert_close(grads[0]["ddp"], whole_batch, rtol=1.3e-6, atol=1e-5)
print("assert_close: DDP's gradient = sum / world size = the gradient of the whole 16-sample batch")

# %% [markdown]
# DDP's gradient is the **mean** over the ranks: half the sum here. And because the loss is itself a mean over
# each rank's 8 samples, the mean of the two ranks' gradients is exactly the gradient of the mean loss over
# all 16 samples: **two ranks with 8 samples each train like one process with 16**. (That needs equal shares
# and a mean loss; section 8 turns it into a rule for the learning rate.) A hand-written all-reduce that
# forgets the division trains with gradients `world_size` times too large; exercise 2 asks for the right one.
#
# ### Buckets, and overlapping communication with the backward pass
#
# All-reducing each parameter's gradient on its own would mean many small messages, each with a fixed cost.
# DDP packs the gradients into **buckets** of about `bucket_cap_mb` megabytes (25 by default) and all-reduces a
# bucket as soon as all its gradients are computed — **while the backward pass goes on** computing the
# gradients of earlier layers. The backward pass runs from the last layer to the first, so after the first
# step DDP orders the buckets that way too.
#
# A **communication hook** — a function DDP calls with each bucket that is ready, instead of its own
# all-reduce — lets us watch. This one records the names in each bucket and then does what DDP does
# (`allreduce_hook`: all-reduce, then divide by the world size); a tensor hook on the first layer's weight
# records when *its* gradient is computed:

# %%
def big_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))


def watch_buckets(rank, world_size, bucket_cap_mb):
    model = big_model()
    names = {id(p): name for name, p in model.named_parameters()}
    ddp_model = DDP(model, bucket_cap_mb=bucket_cap_mb)
    events = []

    def recording_hook(state, bucket):
        events.append("all-reduce bucket " + str([names[id(p)] for p in bucket.parameters()]))
        return default_hooks.allreduce_hook(None, bucket)

    ddp_model.register_comm_hook(None, recording_hook)
    model[0].weight.register_hook(lambda grad: events.append("the gradient of 0.weight is computed"))
    x, y = torch.randn(32, 64), torch.randn(32, 4)
    for step in range(2):
        events.clear()
        ddp_model.zero_grad()
        F.mse_loss(ddp_model(x), y).backward()
    return events                                  # what happened during the second backward pass


for cap in (25, 0.1):
    megabytes = sum(p.numel() * p.element_size() for p in big_model().parameters()) / 2**20
    print(f"bucket_cap_mb={cap} (the gradients take {megabytes:.2f} MB), the second backward pass on rank 0:")
    for event in ranks.run(watch_buckets, cap)[0]:
        print("    " + event)

# %% [markdown]
# With the default 25 MB, the whole model fits one bucket, all-reduced once the last gradient is in. With 0.1
# MB, the bucket holding the last two layers is all-reduced **before** the first layer's gradient is even
# computed: the communication overlaps the computation, and the backward pass ends only a little after its
# last gradient, instead of a whole all-reduce after it. (A bucket closes once it exceeds the cap, so a bucket
# can be larger than `bucket_cap_mb`.) Bigger buckets: fewer, larger messages; smaller buckets: more overlap.
# The default is a good start; tune it only with measurements.
#
# ## 6. Splitting the data: `DistributedSampler`
#
# Each rank must train on **different** samples — otherwise two ranks compute the same gradient and the
# second one is wasted. `DistributedSampler(dataset, num_replicas=world_size, rank=rank)` gives each rank its
# share of the indices; pass it to the `DataLoader` as `sampler=` (and leave the loader's `shuffle` off: the
# sampler shuffles). Inside a process group, `num_replicas` and `rank` default to the group's; here they are
# given, so the samplers of all ranks can be looked at side by side, in this process.
#
# Without shuffling, rank `r` takes every `world_size`-th index, starting at `r`. A dataset that does not
# divide evenly is **padded**: the sampler repeats indices from the start of the order until every rank has
# the same number (`ceil(n / world_size)`) — every rank must run the same number of steps, or the ranks would
# wait for each other's all-reduce at the end of the epoch. `drop_last=True` drops the tail instead:

# %%
def shares(num_samples, world_size, **options):
    return [list(DistributedSampler(range(num_samples), num_replicas=world_size, rank=rank, **options))
            for rank in range(world_size)]


print("10 samples, 2 ranks:                ", shares(10, 2, shuffle=False))
print("10 samples, 3 ranks:                ", shares(10, 3, shuffle=False), "<- 0 and 1 twice")
print("10 samples, 3 ranks, drop_last=True:", shares(10, 3, shuffle=False, drop_last=True), "<- 9 never")
print("2 samples, 5 ranks:                 ", shares(2, 5, shuffle=False), "<- padded more than once")
print("len(sampler), 10 samples, 3 ranks:   ", len(DistributedSampler(range(10), num_replicas=3, rank=0)),
      "| with drop_last:", len(DistributedSampler(range(10), num_replicas=3, rank=0, drop_last=True)))

# %% [markdown]
# Padding makes some samples count twice in every epoch — harmless for training on a large dataset, wrong for
# an exact evaluation metric: evaluate on one rank, or drop the duplicates before averaging. `drop_last`
# skips a few samples every epoch instead (which ones changes from epoch to epoch when shuffling).
#
# ### Shuffling, and `set_epoch`
#
# With `shuffle=True` (the default), the sampler draws a permutation of all indices from a generator of its own,
# seeded with `seed + epoch`, pads it, and deals it out as above. Every rank must use the **same** seed — the
# permutation must be the same everywhere for the shares not to overlap. And the sampler only learns the epoch
# from `sampler.set_epoch(epoch)`: forget it, and `epoch` stays 0 — **every epoch has the same order**.

# %%
def epochs_of_orders(num_samples, world_size, epochs, call_set_epoch):
    """For every epoch, every rank's indices, with samplers made once (as a training script makes them)."""
    samplers = [DistributedSampler(range(num_samples), num_replicas=world_size, rank=rank, shuffle=True, seed=0)
                for rank in range(world_size)]
    orders = []
    for epoch in range(epochs):
        if call_set_epoch:
            for sampler in samplers:
                sampler.set_epoch(epoch)
        orders.append([list(sampler) for sampler in samplers])
    return orders


without = epochs_of_orders(10, 3, 3, call_set_epoch=False)
with_set_epoch = epochs_of_orders(10, 3, 3, call_set_epoch=True)
print("without set_epoch, rank 0's order in epochs 0, 1, 2:", [epoch[0] for epoch in without])
print("with set_epoch,    rank 0's order in epochs 0, 1, 2:", [epoch[0] for epoch in with_set_epoch])
plot_rank_indices({"without set_epoch: the same order every epoch": without,
                   "with sampler.set_epoch(epoch)": with_set_epoch},
                  title="DistributedSampler, 10 samples, 3 ranks, shuffle=True, seed=0")

# %% [markdown]
# Without `set_epoch`, the model sees the samples in the same order and the same groupings every epoch: a
# silent loss of the shuffling that SGD relies on (and, with augmentation drawn per epoch, no other error
# shows it). The fix is one line at the top of the epoch loop: `sampler.set_epoch(epoch)`.
#
# The other mistake, ranks that shuffle with different seeds, is as quiet — each rank's share is drawn from
# its own permutation, so the shares overlap:

# %%
mixed = [list(DistributedSampler(range(10), num_replicas=2, rank=rank, seed=rank)) for rank in range(2)]
seen = sorted(mixed[0] + mixed[1])
print("seed = rank:", mixed, "| read twice:", sorted({i for i in seen if seen.count(i) > 1}),
      "| never read:", sorted(set(range(10)) - set(seen)))

# %% [markdown]
# ## 7. Gradient accumulation with `no_sync`
#
# Chapter 02's gradient accumulation sums the gradients of several micro-batches before one optimizer step.
# Under DDP every `backward()` all-reduces — so accumulating over 4 micro-batches all-reduces 4 times, when
# only the sum at the end matters. `ddp_model.no_sync()` is a context manager that switches the all-reduce
# off: backward passes inside it only add to the local `.grad`; the first backward outside it all-reduces the
# accumulated sum. The trap is *where* the forward pass runs: DDP decides during the **forward** pass whether
# the next backward will all-reduce. A forward outside `no_sync` followed by a backward inside it still
# synchronises.
#
# Counted with a communication hook that adds one per bucket it is given — 4 micro-batches, three ways:

# %%
def accumulate(rank, world_size, how):
    ddp_model = DDP(make_model(0))
    all_reduces = []

    def counting_hook(state, bucket):
        all_reduces.append(bucket.index())
        return default_hooks.allreduce_hook(None, bucket)

    ddp_model.register_comm_hook(None, counting_hook)
    generator = torch.Generator().manual_seed(rank)
    micro_batches = [(torch.randn(4, 8, generator=generator), torch.randn(4, 1, generator=generator))
                     for _ in range(4)]
    for index, (x, y) in enumerate(micro_batches):
        last = index == len(micro_batches) - 1
        if how == "no no_sync":
            F.mse_loss(ddp_model(x), y).div(4).backward()
        elif how == "forward and backward in no_sync":
            with contextlib.nullcontext() if last else ddp_model.no_sync():
                F.mse_loss(ddp_model(x), y).div(4).backward()
        else:                                      # "only the backward in no_sync": the trap
            loss = F.mse_loss(ddp_model(x), y).div(4)
            with contextlib.nullcontext() if last else ddp_model.no_sync():
                loss.backward()
    return len(all_reduces), ddp_model.module[0].weight.grad


results = {how: ranks.run(accumulate, how)
           for how in ("no no_sync", "forward and backward in no_sync", "only the backward in no_sync")}
reference = results["no no_sync"][0][1]
for how, per_rank in results.items():
    count, grad = per_rank[0]
    # The same additions in another order: 1.5e-8 apart at most here, far inside float32's usual tolerance of
    # 1e-5 + 1.3e-6 x |gradient| (assert_close's default, written out).
    torch.testing.assert_close(grad, reference, rtol=1.3e-6, atol=1e-5)
    print(f"{how:33s}: {count} all-reduce(s) for 4 micro-batches; the final gradient assert_close to the others: "
          f"yes; equal on both ranks: {torch.equal(grad, per_rank[1][1])}")

# %% [markdown]
# Same gradient all three ways (the order of the additions differs, so `assert_close`, not `equal`): the
# mean over all micro-batches of all ranks. With `no_sync` around the forward **and** the backward, one
# all-reduce instead of four. The third variant looks like the second and costs as much as the first.
#
# ## 8. Saving, batch size and learning rate, DataParallel
#
# ### Save from rank 0, from `.module`
#
# Every rank holds the same weights, so one rank writes the checkpoint — rank 0, by convention; if every rank
# wrote the same file at once, the copies would overwrite each other half-way. The others wait at a
# `barrier()` until the file is complete, before anyone reads it. And DDP's `state_dict()` names every entry
# `module.…`, since the model is the wrapper's attribute `module` (chapter 07): save `ddp_model.module.state_dict()`,
# which loads into a plain model.

# %%
def train_and_save(rank, world_size, path):
    ddp_model = DDP(make_model(0))
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    optimizer.zero_grad()
    F.mse_loss(ddp_model(torch.randn(8, 8, generator=generator)), torch.randn(8, 1, generator=generator)).backward()
    optimizer.step()
    if rank == 0:
        torch.save(ddp_model.module.state_dict(), path)
    dist.barrier()                                 # nobody reads the file before rank 0 has written it
    weights = torch.load(path, weights_only=True)  # e.g. every rank reloads it to resume
    return list(ddp_model.state_dict())[:2], list(weights)[:2], ddp_model.module[0].weight.detach().clone()


checkpoint = SCRATCH / "ddp_model.pt"
saved = ranks.run(train_and_save, checkpoint)
print("ddp_model.state_dict():       ", saved[0][0], "...")
print("ddp_model.module.state_dict():", saved[0][1], "...")
plain_model = make_model(1)
print("a plain model loads the file:", plain_model.load_state_dict(torch.load(checkpoint, weights_only=True)))
print("its weights equal rank 1's after the step:", torch.equal(plain_model[0].weight, saved[1][2]))

# %% [markdown]
# ### Effective batch size and the learning rate
#
# Section 5 showed that DDP averages: `world_size` ranks with `b` samples each take the step of one process
# with `world_size × b`. With gradient accumulation over `k` micro-batches, the **effective batch size** is
#
# &nbsp;&nbsp;&nbsp;&nbsp;effective batch = per-rank micro-batch `b` × accumulation steps `k` × world size.
#
# A learning rate tuned for one batch size is tuned for *that* batch. The common starting point when the
# effective batch grows is the **linear scaling rule**: multiply the learning rate by the factor the batch grew
# by — with a **warm-up** (a few hundred steps that raise the rate gradually), because a large rate on a
# fresh model can diverge before the rule holds. It is a rule of thumb: in the study that made it popular
# (ResNet-50 on ImageNet, SGD with momentum) it held up to batches of 8192; for Adam a square-root rule is
# sometimes better, and beyond some size larger batches stop helping at all. Start from the rule, and measure:

# %%
base_batch, base_lr = 256, 0.1                     # a learning rate tuned on one GPU, batch 256
print(f"{'ranks':>5s} {'per rank':>8s} {'accumulate':>10s} {'effective batch':>15s} {'linear-rule lr':>14s}")
for world_size, per_rank, accumulate_steps in ((1, 256, 1), (2, 128, 1), (8, 256, 1), (8, 64, 4), (64, 64, 4)):
    effective = per_rank * accumulate_steps * world_size
    print(f"{world_size:5d} {per_rank:8d} {accumulate_steps:10d} {effective:15d} {base_lr * effective / base_batch:14.3g}")

# %% [markdown]
# ### DataParallel and DistributedDataParallel
#
# `torch.nn.DataParallel(model)` looks simpler: one line, one process. It runs **one process** with one
# thread per GPU: at every forward pass it copies the model from the first GPU to the others, splits the batch,
# runs the copies in threads (which share Python's global interpreter lock), gathers the outputs on the first
# GPU, and sums the gradients there. The first GPU does more work and holds more memory than the others, the
# copies are made again at every step, and it cannot span machines. It only does anything with GPUs (on a CPU
# it just calls the model). DDP runs one process per GPU, sends only gradients, overlaps that with the backward
# pass, and scales to many machines; PyTorch's own documentation recommends DDP even on a single machine.
# Everything in this chapter is DDP.
#
# ## 9. Scaling, measured on this machine
#
# Does a second rank make training twice as fast? The benchmark: an MLP (64 → 512 → 512 → 10, 1.1 MB of
# gradients), a training step (forward, backward, the DDP all-reduce, an SGD update) on 512 samples per rank.
# **Throughput** is the samples all ranks process per second; **efficiency** is the throughput divided by the
# ideal, world size × one rank's throughput. Both settings run in `ranks`: first rank 0 alone, without DDP,
# while rank 1 waits (one rank), then both with DDP. Each runs with 1 thread per rank, and again with as many
# threads per rank as the machine has cores — what torch uses in a fresh process unless told otherwise. Each
# setting is timed 3 times, 5 steps each, and the best time counts (another program on the machine can only
# make a round slower). (This notebook's own process stays on one thread: a process forked from one whose
# thread pool has run more than one thread can hang at its first multi-threaded operation.)

# %%
def benchmark(rank, world_size, thread_counts, steps=5, rounds=3, batch=512):
    """Samples per second for {1 rank, world_size ranks}: {threads per rank: throughput}."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))

    def throughput(trained, ranks_used, threads):
        torch.set_num_threads(threads)
        wait_for_all = dist.barrier if ranks_used > 1 else (lambda: None)

        def step():
            trained.zero_grad()
            F.cross_entropy(trained(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad

        step(), step()                             # warm up
        best = float("inf")
        for _ in range(rounds):
            wait_for_all()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            wait_for_all()                         # the slowest rank decides
            best = min(best, time.perf_counter() - start)
        return ranks_used * batch * steps / best

    results = {}
    if rank == 0:                                  # one rank: rank 0 alone, a plain model
        results[1] = {threads: throughput(model, 1, threads) for threads in thread_counts}
    dist.barrier()                                 # the other ranks wait here meanwhile
    ddp_model = DDP(model)
    results[world_size] = {threads: throughput(ddp_model, world_size, threads) for threads in thread_counts}
    return results


cores = os.cpu_count()
thread_counts = sorted({1, cores})
measured = ranks.run(benchmark, thread_counts, backend="gloo", collective_timeout=60)[0]
one_rank, two_ranks = measured[1], measured[2]

# %% tags=nbval-ignore-output
print(f"this machine: {cores} cores")
print(f"{'threads per rank':>16s} {'ranks':>5s} {'samples/s':>10s} {'efficiency':>10s}")
for threads in thread_counts:
    for world_size, result in ((1, one_rank), (2, two_ranks)):
        print(f"{threads:16d} {world_size:5d} {result[threads]:10.0f} "
              f"{result[threads] / (world_size * one_rank[threads]):10.0%}")
if cores > 1:
    print(f"1 rank of {cores} threads: {one_rank[cores]:.0f} samples/s; 2 ranks of 1 thread: {two_ranks[1]:.0f}")
    print(f"2 ranks of {cores} threads ({2 * cores} threads on {cores} cores) are {two_ranks[1] / two_ranks[cores]:.1f} "
          f"times slower than 2 ranks of 1 thread")
plot_scaling({"1 thread per rank": {1: one_rank[1], 2: two_ranks[1]},
              f"{cores} threads per rank": {1: one_rank[cores], 2: two_ranks[cores]}},
             title=f"an MLP training step, 512 samples per rank, on this machine ({cores} cores)")

# %% [markdown]
# The numbers of your run are above. When this notebook was built, on a 2-core CPU with nothing else running,
# one rank of one thread trained about 45,000 samples/s; two ranks of one thread about 63,000 — 1.38 times as
# many, an efficiency of 69 %; one rank of two threads about 82,000; and two ranks of two threads about 26,000,
# 2.4 times slower than two ranks of one thread. What to read in it:
#
# * **One thread per rank scales, but not perfectly**: every step now also all-reduces 1.1 MB of gradients
#   through gloo, and the slower rank sets the pace. A step of this small model computes for only about 11 ms
#   (512 samples at 45,000 samples/s), so the communication is a large part of it; larger models and batches
#   (more computation for the same gradients) scale better.
# * **On CPU cores, more threads in one process can beat more processes**, as it did here: the threads share
#   the model and never exchange gradients. DDP earns its place with GPUs — one per rank — and with many
#   machines, where there is no other way to add compute. On CPUs it is the way to learn and test distributed
#   code, as in this chapter.
# * **Oversubscription is a disaster**: two ranks that each start as many threads as there are cores run
#   twice as many threads as cores. Torch's CPU threads split every matrix product into equal parts and wait
#   for each other at its end — often spinning rather than sleeping. With more threads than cores, a thread
#   waits for a partner that is not running, and burns the core that partner needs. (How much slower depends on
#   the machine and on what else runs on it: while other programs kept this machine busy, runs of this benchmark
#   with 256 samples per rank were up to 17 times slower.) `torchrun` sets `OMP_NUM_THREADS=1` for its processes unless you set it (it prints a warning
#   saying so); with CPU ranks, give each rank at most `cores // ranks_per_machine` threads. With GPUs the same
#   rule applies to the CPU work: data-loading workers × ranks must fit the cores.
#
# ## 10. A `torchrun` script
#
# Everything so far ran inside this notebook's helper. A real job is a **script**, started by **`torchrun`**
# (also `python -m torch.distributed.run`), which starts the processes, sets their environment variables,
# and restarts them on failure if asked. The script below is complete: it joins the group through `env://`,
# shards a dataset with `DistributedSampler`, trains with DDP for 2 epochs with `set_epoch`, logs from rank 0,
# and saves from rank 0. Everything it knows about its place in the job comes from the environment:

# %%
script = SCRATCH / "train_ddp.py"
script.write_text(textwrap.dedent('''\
    import datetime
    import os
    import time

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def say(message):
        """Print one line, prefixed with the rank, in one write: the processes share one output."""
        print(f"[rank {os.environ['RANK']}] {message}\\n", end="", flush=True)


    def leave_group(*last_tensors):
        """Wait for every rank, then leave the process group.

        gloo runs each collective on a worker thread, which lets go of the collective's tensors a moment
        after the call has returned. If Python is already shutting down at that moment, the process aborts
        (SIGABRT, "terminate called without an active exception") although its work is done. So wait until
        gloo holds none of the last collectives' tensors (`_use_count() == 1`: only this script does).
        """
        done = torch.zeros(1, device=last_tensors[0].device)
        dist.all_reduce(done)  # every rank has reached this line
        if dist.get_backend() == "gloo":
            give_up = time.monotonic() + 10
            while any(t._use_count() > 1 for t in (done, *last_tensors)) and time.monotonic() < give_up:
                time.sleep(0.001)
        dist.destroy_process_group()


    def main():
        rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ["LOCAL_WORLD_SIZE"]):
            backend, device = "nccl", torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
        else:
            backend, device = "gloo", torch.device("cpu")
        # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; a short timeout fails fast.
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=20))
        port = os.environ["MASTER_PORT"]
        say(f"world size {dist.get_world_size()}: LOCAL_RANK={local_rank} "
            f"LOCAL_WORLD_SIZE={os.environ['LOCAL_WORLD_SIZE']} GROUP_RANK={os.environ['GROUP_RANK']} "
            f"MASTER_ADDR={os.environ['MASTER_ADDR']} MASTER_PORT is the default 29500: {port == '29500'} "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")

        generator = torch.Generator().manual_seed(0)  # the same data on every rank; the sampler splits it
        features = torch.randn(64, 8, generator=generator)
        targets = features.sum(dim=1, keepdim=True).tanh()
        dataset = TensorDataset(features, targets)
        sampler = DistributedSampler(dataset, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)

        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device),
                    device_ids=[local_rank] if backend == "nccl" else None)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
        model.train()
        for epoch in range(2):
            sampler.set_epoch(epoch)
            total = torch.zeros(2, device=device)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                total += torch.stack([loss.detach() * len(x), torch.tensor(float(len(x)), device=device)])
            dist.all_reduce(total)  # the loss of the epoch over all ranks, for the log
            if rank == 0:
                say(f"epoch {epoch}: mean loss {(total[0] / total[1]).item():.3f} over {int(total[1].item())} samples")
        if rank == 0:
            torch.save(model.module.state_dict(), os.environ["CHECKPOINT"])
        leave_group(total)


    if __name__ == "__main__":
        main()
    '''))
print(f"{script.name}: {len(script.read_text().splitlines())} lines")

# %% [markdown]
# `--standalone` runs a one-machine job with its own rendezvous on a **free port** of this machine (no fixed
# port); `--nproc_per_node=2` starts two processes. `OMP_NUM_THREADS=1` is set here, as section 9 asks, and
# `TMPDIR` too: torchrun writes logs into a new temporary folder at every run, and leaves it behind. The cell
# captures the job's output and its error output (torchrun logs there), prints what the script printed,
# and shows the error output only if the job failed. Every process prefixes its lines with its rank: both
# write at the same time, so the cell sorts the lines by rank.

# %%
def run_job(command, timeout, **options):
    """Run `command`; return (exit code, stdout, stderr). If it outlives `timeout` seconds (or the cell is
    interrupted), stop it as a cluster scheduler would: SIGTERM — torchrun then stops its processes — and
    SIGKILL 10 s later."""
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)
    try:
        out, err = job.communicate(timeout=timeout)
    finally:
        if job.poll() is None:
            job.terminate()
            try:
                job.wait(timeout=10)
            except subprocess.TimeoutExpired:
                job.kill()
            job.communicate()
    return job.returncode, out, err


environment = {**os.environ, "OMP_NUM_THREADS": "1", "CHECKPOINT": str(SCRATCH / "from_torchrun.pt"),
               "TMPDIR": str(SCRATCH)}           # torchrun leaves its log folder in TMPDIR: here, removed at the end
code, out, err = run_job([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          str(script)], timeout=120, env=environment, cwd=SCRATCH)
print("exit code:", code)
lines = sorted(out.splitlines(), key=lambda line: line.split("]")[0])   # by rank; in order within a rank
for line in lines:
    print(textwrap.fill(line, 110, subsequent_indent="    "))
if code != 0:   # torchrun's summary names each failed rank with its exit code or signal; Python's errors follow
    said = [line for line in err.splitlines() if re.search(r"rank|exitcode|[Ss]ignal|Error|terminate", line)]
    print("the lines of its error output that say what failed:", *said[-15:], sep="\n    ")
from_torchrun = make_model(0)
print("the checkpoint rank 0 wrote loads into a plain model:",
      from_torchrun.load_state_dict(torch.load(SCRATCH / "from_torchrun.pt", weights_only=True)))

# %% [markdown]
# The environment that `torchrun` gave each process: `RANK` and `WORLD_SIZE` for the whole job,
# `LOCAL_RANK` and `LOCAL_WORLD_SIZE` on this machine, `GROUP_RANK` for the machine's own number, and
# `MASTER_ADDR` and `MASTER_PORT` for `env://` — a port it chose, not 29500 (it also sets `TORCHELASTIC_*`
# variables for its own bookkeeping).
#
# The script ends with `leave_group` rather than the usual `dist.barrier()` then
# `dist.destroy_process_group()`, because of a failure seen on this course's test machine: with that usual
# ending, 4 of 65 runs on a busy 2-core machine ended with exit code 1 — rank 1 killed by SIGABRT
# ("terminate called without an active exception") *after* training and saving had finished. A debugger on
# the crashed process showed why: gloo's worker thread was still releasing the barrier's tensors while Python
# was shutting down, and a thread cannot take Python's lock then. (`destroy_process_group` cannot stop those
# threads here: the DDP model keeps the group alive.) Waiting until gloo has let go of the last tensors
# removes the race: 0 failures in 80 runs under the same load. A job that fails *after* its work is
# done is still a failed job to a scheduler — it may rerun it, or report the whole run as broken.
#
# **More machines** is the same script and the same command with two changes: how many machines, and where
# they meet. On each of 2 machines with 4 GPUs each:
#
# ```bash
# torchrun --nnodes=2 --nproc_per_node=4 --rdzv-backend=c10d --rdzv-endpoint=node0.example.org:29400 \
#          --rdzv-id=my-job-17 train_ddp.py
# ```
#
# `--rdzv-endpoint` is a machine that all of them can reach, and a port on it that you choose for this job
# and that the network lets through — the one place where a port is written down, because machines have no
# shared temporary folder to meet in. The c10d rendezvous hands out the machines' numbers (`GROUP_RANK`) itself;
# the older static form sets them by hand: `--node-rank=0` on one machine and `--node-rank=1` on the other, with
# `--master-addr` and `--master-port`. `--nnodes=1:4` makes the job *elastic* (it starts once 1 machine has
# joined, and takes up to 4), and `--max-restarts=3` restarts every process when one fails — the script then has to resume
# from its last checkpoint (chapter 07). A cluster scheduler (Slurm, Kubernetes) usually runs this command for
# you on every machine it gives the job.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the check
# cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your notebook is
# graded. The checks of the last two exercises run your code on real process groups — gloo, 2 or 3 ranks on
# the CPU (NCCL only on a machine with a GPU for every rank) — with short timeouts, so a collective that never
# completes fails in seconds. You can also check a file from a terminal:
# `python -m graders check shard_indices my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=shard_indices_task
# ## Exercise 1 · `shard_indices` (7 points)
#
# ```python
# shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False) -> list[int]
# ```
#
# Return the indices that `torch.utils.data.DistributedSampler` gives rank `rank` — in the same order — for a
# dataset of `num_samples` items, with `num_replicas=world_size`, that `rank`, and the same `shuffle`, `seed` and
# `drop_last`, after `set_epoch(epoch)` has been called on it.
#
# * Do **not** use `DistributedSampler` (or anything that calls it): compute the indices yourself.
# * Do **not** change torch's global random number generator: after your function, `torch.rand(...)` draws
#   what it would have drawn without it.
# * Raise `ValueError` unless `0 <= rank < world_size`.
#
# *Hint:* section 6 describes the rule: a permutation from a generator of its own seeded with `seed + epoch`
# (or no shuffle at all), padding from the start of the order — as often as needed, even when there are more
# ranks than samples — or cutting the tail with `drop_last`, then every `world_size`-th index from `rank` on.
# Compare with `DistributedSampler` while you work, for many sizes.

# %% nbgrader=solution id=shard_indices_answer
import math

import torch


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    """The indices DistributedSampler gives `rank` of `world_size` in `epoch`, computed without it."""
    ### BEGIN SOLUTION
    from solutions.ch08_ddp import shard_indices as reference

    return reference(num_samples, rank, world_size, shuffle=shuffle, seed=seed, epoch=epoch, drop_last=drop_last)
    ### END SOLUTION

# %% nbgrader=test id=shard_indices_sampler_checks points=3
check("shard_indices", globals(), "matches_the_sampler_in_order", "matches_the_sampler_shuffled")

# %% nbgrader=test id=shard_indices_hidden points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("shard_indices", globals(), "more_ranks_than_samples", "does_not_use_the_sampler")
### END HIDDEN TESTS

# %% nbgrader=test id=shard_indices_rules_checks points=2
check("shard_indices", globals(), "keeps_the_global_rng", "invalid_rank_raises_value_error")

# %% [markdown] nbgrader=readonly id=average_gradients_task
# ## Exercise 2 · `average_gradients` (7 points)
#
# ```python
# average_gradients(model, group=None)
# ```
#
# DDP's averaging, by hand. Every rank of `group` (all ranks when `group` is `None`) — and no other rank —
# calls `average_gradients(model, group)` after its own `backward()`. Afterwards, on every rank of the group,
# every parameter of `model` that has a gradient holds the **mean** of that parameter's gradient over the
# group's ranks: the gradients `DistributedDataParallel` would have produced, to a relative 1e-5 and an
# absolute 1e-7.
#
# * The caller makes sure the same parameters have a gradient on every rank; skip the parameters whose `.grad`
#   is `None`.
# * Change the gradients only: the weights stay as they are.
# * It must work with gloo on the CPU and NCCL on CUDA, for any world size and any group.
#
# *Hint:* sections 3 and 5: `dist.all_reduce` with the `group`, and the size of *that* group.

# %% nbgrader=solution id=average_gradients_answer
import torch
import torch.distributed as dist


def average_gradients(model, group=None):
    """Replace every gradient of `model` by its mean over the ranks of `group` (all ranks when None)."""
    ### BEGIN SOLUTION
    from solutions.ch08_ddp import average_gradients as reference

    return reference(model, group)
    ### END SOLUTION

# %% nbgrader=test id=average_gradients_checks points=4
check("average_gradients", globals(), "averages_on_two_ranks", "skips_parameters_without_gradients",
      "leaves_the_weights_alone")

# %% nbgrader=test id=average_gradients_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("average_gradients", globals(), "averages_on_three_ranks", "averages_within_a_group")
### END HIDDEN TESTS

# %% nbgrader=test id=average_gradients_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("average_gradients", globals(), "averages_generated_models")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=ddp_accumulation_task
# ## Exercise 3 · `ddp_accumulation` (8 points)
#
# ```python
# ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches) -> float
# ```
#
# One optimizer step with gradient accumulation under `DistributedDataParallel`. `micro_batches` is this rank's
# list of `(inputs, targets)` pairs; all micro-batches have the same size, and every rank has the same number
# of them.
#
# * Zero the gradients first: nothing from before the call may leak into the step.
# * Divide each micro-batch's loss, `loss_fn(ddp_model(inputs), targets)`, by the number of micro-batches before
#   its backward pass.
# * Every micro-batch but the last runs its forward **and** backward inside `ddp_model.no_sync()`; so exactly
#   one backward pass runs outside it, and each gradient bucket is all-reduced once per call.
# * Then `optimizer.step()`. The gradient it steps with equals the gradient of the mean loss over all
#   micro-batches of all ranks.
# * Return this rank's mean micro-batch loss (the losses before the division), as a Python `float`.
# * Raise `ValueError` for an empty list.
#
# *Hint:* section 7, and its trap.

# %% nbgrader=solution id=ddp_accumulation_answer
import contextlib

import torch


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    """One optimizer step over this rank's micro-batches, all-reducing each bucket once; the mean loss."""
    ### BEGIN SOLUTION
    from solutions.ch08_ddp import ddp_accumulation_step as reference

    return reference(ddp_model, optimizer, loss_fn, micro_batches)
    ### END SOLUTION

# %% nbgrader=test id=ddp_accumulation_checks points=5
check("ddp_accumulation", globals(), "matches_single_process_training", "all_reduces_once_per_call")

# %% nbgrader=test id=ddp_accumulation_hidden points=1
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("ddp_accumulation", globals(), "clears_leftover_gradients")
### END HIDDEN TESTS

# %% nbgrader=test id=ddp_accumulation_hidden_generated points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("ddp_accumulation", globals(), "matches_on_generated_cases")
### END HIDDEN TESTS

# %% nbgrader=test id=ddp_accumulation_rules_checks points=2
check("ddp_accumulation", globals(), "returns_the_mean_loss", "empty_list_raises_value_error")

# %% [markdown]
# ## Your code at work: two ranks train like one process
#
# Once all three pass, here they are together. A regression on 64 samples, 2 ranks, 3 epochs; each epoch every
# rank reads its share from **your `shard_indices`** (shuffled, a new order each epoch), in 2 steps of 4
# micro-batches of 4 samples. Two ways to train on the ranks: a DDP model stepped by **your
# `ddp_accumulation_step`**, and a plain model whose gradients **your `average_gradients`** averages before
# the step. The reference is one process that never heard of ranks: for each step, it takes the 32 samples
# that both ranks read in that step (using `DistributedSampler` for the indices), and steps on their mean loss.

# %%
with uses_your_answer("average_gradients", "ddp_accumulation_step", "shard_indices"):
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(64, 8, generator=generator)
    targets = features.sum(dim=1, keepdim=True).tanh() + 0.05 * torch.randn(64, 1, generator=generator)
    EPOCHS, STEPS, MICRO, MICRO_SIZE = 3, 2, 4, 4      # 2 steps x 4 micro-batches x 4 samples = 32 per rank


    def micro_batches_of(indices, step):
        chunk = indices[step * MICRO * MICRO_SIZE:(step + 1) * MICRO * MICRO_SIZE]
        return [(features[chunk[i:i + MICRO_SIZE]], targets[chunk[i:i + MICRO_SIZE]])
                for i in range(0, len(chunk), MICRO_SIZE)]


    def train_on_ranks(rank, world_size):
        ddp_model = DDP(make_model(0))
        ddp_optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
        by_hand = make_model(0)
        hand_optimizer = torch.optim.SGD(by_hand.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for epoch in range(EPOCHS):
            indices = shard_indices(len(features), rank, world_size, shuffle=True, seed=0, epoch=epoch)
            for step in range(STEPS):
                micro_batches = micro_batches_of(indices, step)
                losses.append(ddp_accumulation_step(ddp_model, ddp_optimizer, F.mse_loss, micro_batches))
                hand_optimizer.zero_grad()
                for x, y in micro_batches:
                    (F.mse_loss(by_hand(x), y) / len(micro_batches)).backward()
                average_gradients(by_hand)
                hand_optimizer.step()
        return losses, ddp_model.module.state_dict(), by_hand.state_dict()


    def train_one_process():
        model = make_model(0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        samplers = [DistributedSampler(range(len(features)), num_replicas=2, rank=rank, shuffle=True, seed=0)
                    for rank in range(2)]
        losses = []
        for epoch in range(EPOCHS):
            for sampler in samplers:
                sampler.set_epoch(epoch)
            orders = [list(sampler) for sampler in samplers]
            for step in range(STEPS):
                batch = [pair for order in orders for pair in micro_batches_of(order, step)]   # both ranks' samples
                x, y = torch.cat([x for x, _ in batch]), torch.cat([y for _, y in batch])
                optimizer.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        return losses, model.state_dict()


    on_ranks = ranks.run(train_on_ranks)
    alone_losses, alone_weights = train_one_process()
    # The ranks add the same numbers as one process, in another order, so the results agree to float32's
    # rounding, not bit for bit: the weights after 6 steps by 3e-8 at most here (9e-8 with every sum's last bit
    # moved, as another CPU may round it), 10 times inside atol=1e-6; the losses by 1.5e-7 of their size.
    for name, weights in (("DDP + ddp_accumulation_step", on_ranks[0][1]), ("average_gradients", on_ranks[0][2])):
        torch.testing.assert_close(weights, alone_weights, rtol=1e-5, atol=1e-6)
        print(f"{name:28s}: the weights after {EPOCHS * STEPS} steps assert_close to one process's: yes")
    mean_of_ranks = [(a + b) / 2 for a, b in zip(on_ranks[0][0], on_ranks[1][0])]
    gap = max(abs(mine - alone) / alone for mine, alone in zip(mean_of_ranks, alone_losses))
    # 3 decimals: at 4, three of these losses lie within 2e-6 of where they would round the other way.
    print("losses, one process:", [round(loss, 3) for loss in alone_losses])
    print(f"the mean of the ranks' losses differs from these by {under(gap, 1e-5)} of their size, step by step")

# %% [markdown]
# Two ranks, each seeing half the data, end with the weights of one process that saw all of it, step by step —
# that is the whole promise of data parallelism, and the check of any distributed training code: run it on
# two ranks and on one with the same global batches, and compare.
#
# Before you scale a real job out, the habits of the earlier chapters still come first: overfit one batch on
# one process; seed; `model.train()` / `model.eval()` where they belong. A bug that exists on one process is
# only harder to find on eight.

# %%
ranks.close()                                      # stop the two processes
sys.path.remove(str(SCRATCH))
scratch.cleanup()                                  # every file of the chapter, gone
print("processes still running:", multiprocessing.active_children(), "| temporary folder removed:",
      not SCRATCH.exists())

# %% [markdown]
# ## Summary
#
# * A distributed job is N processes running the same script: **rank** 0 … N − 1, **world size** N, **local
#   rank** on each machine. They meet at a **rendezvous** (a TCP store at `MASTER_ADDR:MASTER_PORT`, or a
#   file), and talk through a **backend**: gloo on CPUs, NCCL on GPUs — one GPU per rank, so with a single GPU
#   the course's checks run on gloo. Never fix a port in code: port 0, a file store, or `torchrun --standalone`.
# * **Spawn** (macOS, Windows) cannot start a function defined in a notebook: the child looks for
#   `__main__.<name>` and does not find it. Fork (Linux only), a module, `torchrun`, or sending the function by
#   value (`cloudpickle`, `coursekit.distributed`) work.
# * **Collectives** (`all_reduce`, `broadcast`, `all_gather`, `barrier`) block until every rank of the group has
#   called them. Use a **short timeout**; `TORCH_DISTRIBUTED_DEBUG=DETAIL` turns mismatched collectives into an
#   error within milliseconds; `monitored_barrier` names the ranks that never came.
# * **DDP** broadcasts rank 0's weights at construction, and averages — the **mean**, not the sum — the
#   gradients during backward, in **buckets** (`bucket_cap_mb`) that overlap the backward pass. N ranks with b
#   samples each take the step of one process with N × b.
# * **`DistributedSampler`** pads (repeats) or, with `drop_last`, drops samples so every rank runs the same number
#   of steps; the same seed on every rank; **`set_epoch(epoch)`** every epoch, or every epoch has the same order.
# * **`no_sync()`** around the forward *and* backward of all micro-batches but the last: one all-reduce per step.
# * Save from **rank 0**, **`ddp_model.module.state_dict()`**, then `barrier()`.
# * **Effective batch** = micro-batch × accumulation steps × world size; scale the learning rate linearly from
#   the batch it was tuned for, with a warm-up, and measure.
# * **One thread per CPU rank** (`OMP_NUM_THREADS=1`): oversubscribed cores made training 2.4 times slower when
#   this notebook was built. Measure throughput and efficiency before and after adding ranks.
# * **`torchrun --standalone --nproc_per_node=N script.py`** on one machine; `--nnodes`, `--rdzv-backend=c10d`,
#   `--rdzv-endpoint=HOST:PORT` on several.
