"""Practice while reading: "predict, then run" prompts between a chapter's sections, and a guard for the cells
after an exercise that use the student's answer.

A prompt is two lines in an ordinary (ungraded) cell::

    guess = ...                                   # your prediction, e.g. (4, 1)
    predict("01.transpose_strides", guess, base.t().stride(), why="transposing swaps the strides")

With ``guess`` still ``...`` the cell asks for a prediction; with one it says at once whether it was right, and
when it was not, what the value is and why. It never raises: a wrong guess must not stop "Run All" from reaching
the next section. Predictions are not graded.

In the instructor's copy (``COURSE_INSTRUCTOR=1``, as the committed notebooks are executed) an unanswered prompt
uses the reference prediction written by hand in the chapter's solutions module (``PREDICTIONS``), so every notebook run proves the
questions' answers against what the code really does. The student edition is released without outputs.
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

NOT_ANSWERED = Ellipsis


def _instructor() -> bool:
    return os.environ.get("COURSE_INSTRUCTOR") == "1"


def _reference(question: str) -> Any:
    """The hand-written prediction for ``question`` ("01.name"): ``PREDICTIONS`` in that chapter's solutions
    module (``solutions/ch01_tensors.py``), beside the chapter's reference answers."""
    import importlib
    import pkgutil

    import solutions

    chapter = question.split(".", 1)[0]
    for module in pkgutil.iter_modules(solutions.__path__):
        if module.name.startswith(f"ch{chapter}_"):
            predictions = getattr(importlib.import_module(f"solutions.{module.name}"), "PREDICTIONS", {})
            return predictions.get(question, NOT_ANSWERED)
    return NOT_ANSWERED


def _canonical(value: Any) -> Any:
    """A plain Python value to compare: tuples for sizes, lists and arrays of numbers; dtype names for dtypes
    ("float32", "torch.float32" and ``torch.float32`` are one answer); numbers as numbers; sets as frozensets."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a course dependency
        torch = None
    if torch is not None:
        if isinstance(value, torch.dtype):
            return str(value).removeprefix("torch.")
        if isinstance(value, torch.device):
            return str(value)
        if isinstance(value, torch.Tensor):
            return _canonical(value.tolist()) if value.dim() else _canonical(value.item())
    if isinstance(value, str):
        return value.strip().removeprefix("torch.")
    if isinstance(value, (set, frozenset)):
        return frozenset(_canonical(v) for v in value)
    if isinstance(value, dict):
        return {_canonical(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if hasattr(value, "tolist") and not isinstance(value, (bool, int, float)):  # a NumPy array or scalar
        return _canonical(value.tolist())
    return value


def _same(guess: Any, actual: Any, unordered: bool, rel_tol: float) -> bool:
    if unordered and isinstance(actual, (tuple, frozenset)) and isinstance(guess, (tuple, frozenset)):
        guess, actual = frozenset(guess), frozenset(actual)  # a set or a list, in any order
    if isinstance(actual, frozenset) and isinstance(guess, tuple):
        guess = frozenset(guess)  # a list answers a set question
    if isinstance(actual, bool) or isinstance(guess, bool):
        return type(guess) is type(actual) and guess == actual  # 1 is not an answer to a yes/no question
    if isinstance(actual, (int, float)) and isinstance(guess, (int, float)):
        return math.isclose(guess, actual, rel_tol=rel_tol, abs_tol=0.0) or guess == actual
    if isinstance(actual, tuple) and isinstance(guess, tuple):
        return len(guess) == len(actual) and all(_same(g, a, False, rel_tol) for g, a in zip(guess, actual))
    if isinstance(actual, dict) and isinstance(guess, dict):
        return guess.keys() == actual.keys() and all(_same(guess[k], actual[k], False, rel_tol) for k in actual)
    return bool(guess == actual)


def _shown(value: Any) -> str:
    if isinstance(value, (set, frozenset)):  # a set's order changes from one process to the next: sort it
        text = "{" + ", ".join(sorted(map(repr, value))) + "}" if value else "set()"
    else:
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def predict(question: str, guess: Any, actual: Any, *, why: str = "", unordered: bool = False,
            rel_tol: float = 1e-3) -> None:
    """Compare a prediction with the value the code really gives; print the verdict and return it.

    ``question`` names the prompt (chapter, then a short name). ``guess`` is ``...`` until the student writes a
    prediction. Sizes, lists and tuples compare element by element (a list answers a tuple question), dtypes by
    name, floats within ``rel_tol``, and with ``unordered`` a sequence's order does not matter. Prints the
    verdict and returns None (so that a prompt as a cell's last line shows nothing more). Never raises.
    """
    _judge(question, guess, actual, why=why, unordered=unordered, rel_tol=rel_tol)


def _judge(question: str, guess: Any, actual: Any, *, why: str, unordered: bool, rel_tol: float) -> bool | None:
    """:func:`predict`'s verdict: True (right), False (not right) or None (no prediction yet)."""
    from_reference = guess is NOT_ANSWERED and _instructor()
    if from_reference:
        guess = _reference(question)
        if guess is NOT_ANSWERED:
            print(f"PREDICT  {question}: the chapter's solutions module has no reference prediction for this question")
            return None
    if guess is NOT_ANSWERED:
        print(f"PREDICT  {question}: write your prediction in place of `...`, then run this cell again")
        return None
    try:
        right = _same(_canonical(guess), _canonical(actual), unordered, rel_tol)
    except Exception as error:  # a guess that cannot even be compared is simply not right
        right = False
        why = f"(your prediction could not be compared: {type(error).__name__}: {error}) {why}".strip()
    source = " (the reference prediction, instructor's copy)" if from_reference else ""
    if right:
        print(f"RIGHT  {question}: {_shown(actual)}{source}" + (f"\n      {why}" if why else ""))
        return True
    print(f"NOT YET  {question}: you predicted {_shown(guess)}{source}; the code gives {_shown(actual)}")
    if why:
        print(f"      why: {why}")
    return False


@contextlib.contextmanager
def uses_your_answer(*names: str):
    """Wrap a cell that runs the student's exercise answers (``names``): while they are unfinished, say so in one
    line instead of stopping "Run All" with a traceback. In the instructor's copy errors propagate, so that a
    broken demonstration cannot hide behind this guard."""
    listed = " and ".join(f"`{name}`" for name in names)
    try:
        yield
    except NotImplementedError:
        if _instructor():
            raise
        print(f"This cell uses your {listed}, which is not written yet (it still raises NotImplementedError). "
              "Run it again once its check cells pass.")
    except NameError as error:
        if _instructor():
            raise
        print(f"This cell uses your {listed}, but {error}: the cell that defines it did not finish or was not run.")
    except Exception as error:
        if _instructor():
            raise
        print(f"This cell uses your {listed}, which raised {type(error).__name__}: {error}. "
              "Its check cells say what is wrong.")
