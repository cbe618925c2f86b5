"""Crashes the interpreter with a segmentation fault through ctypes."""
import ctypes
EXPECT = {"score": 0, "words": "segmentation fault"}


def is_contiguous(shape, strides):
    ctypes.string_at(0)
