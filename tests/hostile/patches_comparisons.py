"""A wrong answer that patches every comparison and the grader's own functions it can find."""
import builtins

import numpy
import torch

import graders
import graders.judge
import graders.outcomes

EXPECT = {"score_below_max": True, "words": ""}

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
builtins.isinstance = lambda *a, **k: True
graders.judge.run_checks = lambda *a, **k: None
graders.outcomes.Report.passed = property(lambda self: True)
graders.outcomes.CheckFailed = Exception


def is_contiguous(shape, strides):
    return True
