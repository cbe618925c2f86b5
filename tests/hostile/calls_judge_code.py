"""Calls a grader's expected-value code (marked judge_only) and swallows the error it raises, then answers
correctly: the call itself must cost every point."""
import graders.ch05_devices.positional_encoding as grader

EXPECT = {"score": 0, "words": "answers must be your own code"}


def is_contiguous(shape, strides):
    try:
        grader.encoding(2, 2)
    except Exception:
        pass
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    expected = 1
    for size, stride in reversed(list(zip(shape, strides))):
        if size == 0:
            return True
    for size, stride in reversed(list(zip(shape, strides))):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
