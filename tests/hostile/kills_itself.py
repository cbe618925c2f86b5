"""Sends itself SIGTERM."""
import os
import signal
EXPECT = {"score": 0, "words": "SIGTERM"}


def is_contiguous(shape, strides):
    os.kill(os.getpid(), signal.SIGTERM)
