"""Switches off SIGALRM and every interval timer, then loops forever."""
import signal

EXPECT = {"score": 0, "words": "did not finish within"}


def is_contiguous(shape, strides):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            pass
        except BaseException:
            pass
