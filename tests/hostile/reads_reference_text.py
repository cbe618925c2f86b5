"""Reads the reference answer's source text and runs a copy of it under another file name."""
import pathlib

import graders

EXPECT = {"score": 0, "words": "answers must be your own code"}

_path = pathlib.Path(graders.__file__).resolve().parent.parent / "solutions" / "ch01_tensors.py"
_copy = {}
exec(compile(_path.read_text(), "<my answer>", "exec"), _copy)
is_contiguous = _copy["is_contiguous"]
