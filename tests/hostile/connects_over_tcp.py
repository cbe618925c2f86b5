"""Opens a TCP connection (to this machine; anywhere else would be the same rule), and binds a port; answers right
only where either worked. A refused connection (nothing listens on port 9) means the network was reachable."""
import socket

EXPECT = {"score": 0, "words": "was refused", "needs_abi": 4}


def is_contiguous(shape, strides):
    try:
        socket.socket().bind(("127.0.0.1", 0))
        return _correct(shape, strides)
    except PermissionError:
        pass
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=2).close()
    except PermissionError as exc:
        raise RuntimeError(f"TCP was refused: {exc}") from None
    except OSError:
        pass  # refused by the other end, or timed out: the network itself was reachable
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
