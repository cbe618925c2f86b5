"""Imported once by the forkserver, so every runner forked from it starts warm.

The first optimizer in a fresh process costs about 1 s (torch loads its compiler stack then, which FakeTensorMode
and gradcheck use too); paying it here, once, keeps each check's runner at a few milliseconds to start. A judge
that grades only exercises that need none of it (``warm_compiler_stack`` in the registry) sets
``COURSE_RUNNER_WARM_OPTIMIZERS=0`` and saves that time.
"""

import os

import cloudpickle  # noqa: F401 - notebook answers arrive pickled by value
import numpy  # noqa: F401
import torch
import torch.utils.data  # noqa: F401
from torch import nn

import graders
from graders import isolation, registry, wire

registry.load_all_chapters()

# What every runner would otherwise do for itself, each time (measured in a runner forked from here, in ms of CPU):
# find the judge-only functions it withholds (7), register gloo, which torch does by reading every installed
# package's entry points on the first process group of a process (6: chapter 08 starts 2-3 ranks per run), and
# load what torch.save, which sends each reply, imports on its first call (2).
isolation.judge_only_functions()
if torch.distributed.is_available():
    _backend = torch.distributed.distributed_c10d.Backend
    if hasattr(_backend, "_ensure_backend_registered"):  # a private helper: where torch has none, nothing to do
        _backend._ensure_backend_registered("gloo")
    del _backend
wire.to_bytes(wire.encode(None))
# What each runner may read beside its own answer (graders.confine): found once here, 3 ms a runner otherwise.
isolation._static_reads(False)
isolation._static_devices()

# Where a GPU exists, nothing here may touch it, not even to ask whether it is there: torch.cuda.is_available()
# counts devices, and from then on every child forked from this process fails its first CUDA call ("Cannot
# re-initialize CUDA in forked subprocess"; seen on an H100 with torch 2.11: every cuda check failed). A child
# forked after a backward cannot run a backward either (autograd's device threads), and the first optimizer
# step asks for the accelerator. So the judge, which may ask, decides before it starts this forkserver
# (graders.isolation._context sets COURSE_RUNNER_WARM_OPTIMIZERS=0 where a GPU exists), and this file only reads
# its answer.
_optimizers_warm = False


def warm_optimizers() -> None:
    """Build and step an optimizer once, which imports torch's compiler stack (about 1 s): done at import unless
    ``COURSE_RUNNER_WARM_OPTIMIZERS=0``, or later, by a judge that forked a cold helper first
    (graders.judge_server); once per process."""
    global _optimizers_warm
    if _optimizers_warm:
        return
    model = nn.Linear(2, 1)
    for optimizer in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(model.parameters())):
        for parameter in model.parameters():
            parameter.grad = torch.ones_like(parameter)  # gradients set by hand: no backward here (see above)
        optimizer.step()
        optimizer.zero_grad()
    _optimizers_warm = True


if os.environ.get(isolation.WARM_OPTIMIZERS_ENV) != "0":
    warm_optimizers()
