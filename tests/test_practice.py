"""coursekit.practice: "predict, then run" prompts judge fairly and never stop a notebook; the guard for cells that
use an exercise answer says what is missing, and hides nothing in the instructor's copy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coursekit import practice
from coursekit.practice import predict, uses_your_answer


def judged(question, guess, actual, **options):
    """predict's verdict (it prints it and returns None): True, False, or None for "no prediction yet"."""
    return practice._judge(question, guess, actual, **{"why": "", "unordered": False, "rel_tol": 1e-3, **options})


@pytest.fixture
def student(monkeypatch):
    monkeypatch.delenv("COURSE_INSTRUCTOR", raising=False)


@pytest.fixture
def instructor(monkeypatch):
    monkeypatch.setenv("COURSE_INSTRUCTOR", "1")


# (guess, actual, options): each a prediction that means the same as the value the code gives.
RIGHT = [
    ((1, 2), torch.empty(3, 2).t().stride(), {}),  # a (3, 2) tensor has strides (2, 1); t() swaps them
    ([2, 3], torch.Size([2, 3]), {}),
    (torch.Size([2, 3]), (2, 3), {}),
    ("float32", torch.float32, {}),
    ("torch.int64", torch.int64, {}),
    (torch.float64, torch.tensor(np.zeros(2)).dtype, {}),
    (True, torch.arange(4).is_contiguous(), {}),
    (3, 3, {}),
    (0.3, 0.1 + 0.2, {}),
    (2.5, torch.tensor(2.5), {}),
    ([1, 2], torch.tensor([1, 2]), {}),
    ({"b", "a"}, {"a", "b"}, {}),
    (["weight", "bias"], {"bias", "weight"}, {}),
    (("b", "a"), ("a", "b"), {"unordered": True}),
    ({"b", "a"}, ["a", "b"], {"unordered": True}),
    (None, None, {}),
    ({"lr": 0.1}, {"lr": 0.1}, {}),
    (np.array([1, 2]), (1, 2), {}),
]

WRONG = [
    ((3, 1), (1, 3), {}),
    ((1, 3, 1), (1, 3), {}),
    ("float64", torch.float32, {}),
    (1, True, {}),          # a yes/no question is not answered by a number
    (False, 0, {}),
    (0.31, 0.3, {}),
    (("b", "a"), ("a", "b"), {}),  # order matters unless the question says otherwise
    ({"a"}, {"a", "b"}, {}),
    ("cuda", "cpu", {}),
    (None, 0, {}),
]


@pytest.mark.parametrize("guess, actual, options", RIGHT)
def test_a_right_prediction_in_any_equivalent_form_is_right(student, capsys, guess, actual, options):
    assert judged("01.q", guess, actual, **options) is True
    assert capsys.readouterr().out.startswith("RIGHT  01.q:")


@pytest.mark.parametrize("guess, actual, options", WRONG)
def test_a_wrong_prediction_shows_the_real_value_and_why(student, capsys, guess, actual, options):
    assert judged("01.q", guess, actual, why="because of the strides", **options) is False
    out = capsys.readouterr().out
    shown = "{'a', 'b'}" if actual == {"a", "b"} else repr(actual)[:20]  # a set is shown sorted (nbval)
    assert out.startswith("NOT YET  01.q: you predicted") and shown in out
    assert "why: because of the strides" in out


def test_an_unanswered_prompt_asks_and_does_not_reveal(student, capsys):
    assert judged("01.q", ..., (1, 3)) is None
    out = capsys.readouterr().out
    assert "write your prediction in place of `...`" in out and "(1, 3)" not in out


class Hostile:
    def __eq__(self, other):
        raise RuntimeError("no comparing me")

    def __repr__(self):
        return "Hostile()"


@pytest.mark.parametrize("guess", [Hostile(), torch.ones(2, 2), object(), float("nan"), "x" * 5000])
def test_a_guess_that_cannot_be_compared_is_wrong_and_never_raises(student, capsys, guess):
    assert judged("01.q", guess, (1, 3)) is False
    out = capsys.readouterr().out
    assert out.startswith("NOT YET") and max(len(line) for line in out.splitlines()) < 400


def test_the_instructor_copy_uses_the_hand_written_key(instructor, capsys, monkeypatch):
    import solutions.ch01_tensors as chapter

    monkeypatch.setattr(chapter, "PREDICTIONS", {"01.q": (1, 3)}, raising=False)
    assert judged("01.q", ..., (1, 3)) is True
    assert "the reference prediction" in capsys.readouterr().out
    assert judged("01.q", ..., (3, 1)) is False  # a key that disagrees with the code shows up as NOT YET
    assert capsys.readouterr().out.startswith("NOT YET")
    assert judged("01.missing", ..., 1) is None
    assert "no reference prediction" in capsys.readouterr().out


def test_the_guard_names_the_unfinished_answer_and_lets_the_notebook_go_on(student, capsys):
    def sliding_window(*args):
        raise NotImplementedError()

    with uses_your_answer("sliding_window"):
        sliding_window(1)
        raise AssertionError("not reached")
    assert "your `sliding_window`, which is not written yet" in capsys.readouterr().out

    with uses_your_answer("GLU", "RunningNorm"):
        raise ValueError("shapes (2, 3) and (4,)")
    assert "your `GLU` and `RunningNorm`, which raised ValueError: shapes (2, 3) and (4,)" in capsys.readouterr().out

    with uses_your_answer("RangeStream"):
        RangeStreamNotDefined  # noqa: B018, F821 - the answer cell was never run
    assert "the cell that defines it did not finish or was not run" in capsys.readouterr().out


def test_the_guard_hides_nothing_in_the_instructor_copy(instructor):
    with pytest.raises(NotImplementedError), uses_your_answer("sliding_window"):
        raise NotImplementedError()
    with pytest.raises(ValueError), uses_your_answer("GLU"):
        raise ValueError("a broken demonstration must fail the notebook run")


def test_the_guard_does_not_swallow_an_interrupt(student):
    with pytest.raises(KeyboardInterrupt), uses_your_answer("lr_range_test"):
        raise KeyboardInterrupt


def test_the_sentinel_is_the_ellipsis():
    assert practice.NOT_ANSWERED is ...


def test_a_prompt_as_a_cells_last_line_shows_only_its_verdict(student, capsys):
    """IPython displays a cell's last value: predict returns None, so the cell shows the printed verdict only."""
    assert predict("01.q", (1, 3), (1, 3)) is None
    assert capsys.readouterr().out.startswith("RIGHT")


def test_a_set_is_shown_in_the_same_order_in_every_process(student, capsys):
    """nbval compares the committed output with a new run's, and a set of strings iterates in another order in
    each process (hash randomisation): the verdict sorts it."""
    predict("01.q", {"weight"}, {"weight", "bias", "running_mean"})
    assert "the code gives {'bias', 'running_mean', 'weight'}" in capsys.readouterr().out
