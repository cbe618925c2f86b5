"""Loads the reference answer's file by path, around the import system."""
import importlib.util
import pathlib

import graders

EXPECT = {"score": 0, "words": "answers must be your own code"}

_path = pathlib.Path(graders.__file__).resolve().parent.parent / "solutions" / "ch01_tensors.py"
_spec = importlib.util.spec_from_file_location("not_the_solutions", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
is_contiguous = _module.is_contiguous
