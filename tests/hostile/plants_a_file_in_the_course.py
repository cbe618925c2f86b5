"""Writes into the course's own code (a file beside the graders, as a review's answer once appended to
graders/judge.py so that every later answer passed); answers right only where that worked."""
import pathlib

import graders

EXPECT = {"score": 0, "words": "was refused", "must_not_exist": ["graders/planted_by_a_student.py"], "needs_abi": 1}


def is_contiguous(shape, strides):
    target = pathlib.Path(graders.__file__).resolve().parent / "planted_by_a_student.py"
    try:
        target.write_text("PLANTED = True\n")
    except OSError as exc:
        raise RuntimeError(f"writing into the course was refused: {exc}") from None
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
