"""Imported once by the forkserver, so every runner forked from it starts warm.

The first optimizer step in a fresh process costs 1-2 s (torch loads its compiler stack then); paying it
here, once, keeps each check's runner at a few milliseconds to start. A judge that grades only exercises
whose checks never step an optimizer sets ``COURSE_RUNNER_WARM_OPTIMIZERS=0`` and saves that time.
"""

import os

import cloudpickle  # noqa: F401 - notebook answers arrive pickled by value
import numpy  # noqa: F401
import torch
import torch.utils.data  # noqa: F401
from torch import nn

import graders
from graders import registry

registry.load_all_chapters()

if os.environ.get("COURSE_RUNNER_WARM_OPTIMIZERS") != "0":
    _model = nn.Linear(2, 1)
    for _optimizer in (torch.optim.SGD(_model.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(_model.parameters())):
        _model(torch.ones(1, 2)).sum().backward()
        _optimizer.step()
        _optimizer.zero_grad()
    del _model, _optimizer
