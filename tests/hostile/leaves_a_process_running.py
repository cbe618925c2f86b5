"""Starts a process that would run forever, and answers wrongly."""
import subprocess
import sys

EXPECT = {"score_below_max": True, "words": ""}
LEFT = []


def is_contiguous(shape, strides):
    if not LEFT:
        LEFT.append(subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]))
        with open(__file__ + ".pids", "a") as f:
            f.write(f"{LEFT[0].pid}\n")
    return True
