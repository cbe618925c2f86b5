"""Ends the process with os._exit(0) inside the function (no exception, no report of its own)."""
import os
EXPECT = {"score": 0, "words": "ended its process with exit status 0"}


def is_contiguous(shape, strides):
    os._exit(0)
