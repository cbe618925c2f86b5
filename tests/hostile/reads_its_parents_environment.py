"""Reads another process's environment, memory map and open files through /proc (the judge's, where it is the
parent); answers right only where any of it worked."""
import os

EXPECT = {"score": 0, "words": "was refused", "needs_abi": 1}


def is_contiguous(shape, strides):
    refused = []
    for name in ("environ", "maps", "mem"):
        try:
            with open(f"/proc/{os.getppid()}/{name}", "rb") as f:
                f.read(1)
            return _correct(shape, strides)
        except OSError as exc:
            refused.append(f"{name}: {exc.strerror}")
    raise RuntimeError(f"reading the parent's /proc was refused ({'; '.join(refused)})")


def _correct(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("shape and strides differ in length")
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return 0 in shape
        expected *= size
    return True
