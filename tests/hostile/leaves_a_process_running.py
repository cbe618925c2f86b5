"""Starts a process that would run forever, and answers wrongly."""
import subprocess
import sys

EXPECT = {"score_below_max": True, "words": ""}
LEFT = []
MARKER = "course-hostile-left-running"  # the test finds it by this (a confined answer cannot write its pid out)


def is_contiguous(shape, strides):
    if not LEFT:
        LEFT.append(subprocess.Popen([sys.executable, "-c", f"import time  # {MARKER}\nwhile True: time.sleep(1)"]))
    return True
