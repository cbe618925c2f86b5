"""Imports the course's reference answer."""
from solutions.ch01_tensors import is_contiguous  # noqa: F401

EXPECT = {"score": 0, "words": "answers must be your own code"}
