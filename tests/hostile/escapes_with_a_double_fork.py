"""Starts a process that leaves the runner's process group and session (a double fork and setsid, as a daemon
does), so that killing the group misses it, and answers nothing."""
import os
import sys

EXPECT = {"score": 0, "words": "outlive its check"}
MARKER = "course-hostile-escaped"  # the test finds it by this (a confined answer cannot write its pid out)
STARTED = []


def is_contiguous(shape, strides):
    if not STARTED:
        STARTED.append(True)
        child = os.fork()
        if child == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", f"import time  # {MARKER}\nwhile True: time.sleep(1)"])
            os._exit(0)
        os.waitpid(child, 0)
    raise RuntimeError("started a process meant to outlive its check")
