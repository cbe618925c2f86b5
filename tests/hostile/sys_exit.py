"""Exits instead of answering: sys.exit(0) inside the function."""
import sys
EXPECT = {"score": 0, "words": "called sys.exit(0)"}


def is_contiguous(shape, strides):
    sys.exit(0)
