"""A file-descriptor storm: opens files until the system refuses, and keeps them open."""
import os

EXPECT = {"score": 0, "words": "open files a check may hold"}
HELD = []


def is_contiguous(shape, strides):
    while len(HELD) < 100_000:
        HELD.append(os.open(os.devnull, os.O_RDONLY))
    return True
