"""Signals a process outside its own sandbox (its parent, the runners' server; signal 0 only probes); answers
right only where that worked."""
import os

EXPECT = {"score": 0, "words": "was refused", "needs_abi": 6}


def is_contiguous(shape, strides):
    try:
        os.kill(os.getppid(), 0)
    except OSError as exc:
        raise RuntimeError(f"signalling the parent was refused: {exc}") from None
    return _correct(shape, strides)


def _correct(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return 0 in shape
        expected *= size
    return True
