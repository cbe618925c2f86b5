"""Raises KeyboardInterrupt, which is not an Exception."""
EXPECT = {"score": 0, "words": "KeyboardInterrupt"}


def is_contiguous(shape, strides):
    raise KeyboardInterrupt
