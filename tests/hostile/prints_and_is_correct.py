"""A correct answer that prints to stdout and stderr, and from a child process too."""
import subprocess
import sys

EXPECT = {"passes": True, "words": ""}
print("hello from import")
subprocess.run([sys.executable, "-c", "print('from a child process')"], check=True)


def is_contiguous(shape, strides):
    print("checking", shape, strides)
    print("to stderr", file=sys.stderr)
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) != len(strides):
        raise ValueError("lengths differ")
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
