"""Sends a UDP datagram (to this machine; anywhere else would be the same rule), which Landlock's network rules
(TCP only, ABI 4 to 7) do not cover: the runner's seccomp filter refuses any internet socket but TCP. Answers right
only where the datagram went out."""
import socket

EXPECT = {"score": 0, "words": "was refused", "needs_abi": 1}


def is_contiguous(shape, strides):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            out.sendto(b"a student's datagram", ("127.0.0.1", 9))
    except PermissionError as exc:
        raise RuntimeError(f"UDP was refused: {exc}") from None
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
