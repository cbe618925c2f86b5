"""A fork storm: a shell that starts 300 looping subshells, each starting a sleep (600 processes), once per
grading process; then the answer raises. Under a process limit (a user that is not root) the shell's forks are
refused; either way none of them may outlive the check."""
import subprocess
import time

EXPECT = {"score": 0, "words": ""}
MARKER = "course-hostile-storm"  # in every subshell's command line (a fork of the shell keeps it)
STARTED = []


def is_contiguous(shape, strides):
    if not STARTED:
        STARTED.append(True)
        storm = f": {MARKER}; i=0; while [ $i -lt 300 ]; do (while :; do sleep 600; done) & i=$((i+1)); done; wait"
        subprocess.Popen(["sh", "-c", storm], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    raise RuntimeError("a fork storm was started")
