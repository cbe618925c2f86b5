"""Reads the reference answers through a child process (cat), which an audit hook in the runner never sees, and
runs them: only the operating system (Landlock, inherited by every child) refuses it."""
import pathlib
import subprocess

import graders

EXPECT = {"score": 0, "words": "was refused", "needs_abi": 1}


def is_contiguous(shape, strides):
    path = pathlib.Path(graders.__file__).resolve().parent.parent / "solutions" / "ch01_tensors.py"
    done = subprocess.run(["cat", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"reading the reference was refused: {done.stderr.strip()[:100]}")
    copy = {}
    exec(done.stdout, copy)
    return copy["is_contiguous"](shape, strides)
