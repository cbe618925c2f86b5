"""The layout a newcomer relies on: from an exercise id alone, its grader, reference, fixtures and tests.

What a new exercise touches (graders/README.md): its grader module, the chapter's solutions module, the
chapter source and notebook, optionally tests/test_<id>.py, and its fixtures — never the grader core.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import graders

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = graders.exercises()
# The grader core: shared by every exercise; an exercise never needs an edit here.
CORE = {"__init__.py", "__main__.py", "_preload.py", "_rank_demos.py", "compare.py", "confine.py", "devices.py", "domain.py",
        "isolation.py", "judge.py", "judge_server.py", "outcomes.py", "ranks.py", "registry.py", "runclock.py", "student.py",
        "watch.py", "wire.py"}


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_everything_about_an_exercise_is_found_from_its_id(exercise):
    chapter_package = f"ch{exercise.chapter}"
    assert exercise.module == f"graders.{chapter_package}.{exercise.id}", (
        f"{exercise.id} must be declared in graders/{chapter_package}/{exercise.id}.py, not in {exercise.module}")
    assert (ROOT / "graders" / chapter_package / f"{exercise.id}.py").exists()
    reference = importlib.import_module(f"solutions.{chapter_package}")
    missing = [name for name in exercise.names if not hasattr(reference, name)]
    assert not missing, f"solutions/{chapter_package}.py lacks {missing}"
    assert (ROOT / "tests" / "submissions" / chapter_package / exercise.id).is_dir()
    source = (ROOT / "course_src" / f"{exercise.chapter}.py").read_text()
    assert f'check("{exercise.id}"' in source, f"course_src/{exercise.chapter}.py has no check cell for {exercise.id}"


def test_the_grader_core_has_no_exercise_in_it():
    top_level = {p.name for p in (ROOT / "graders").glob("*.py")}
    assert top_level == CORE, f"graders/ holds {sorted(top_level - CORE)} besides the core: exercises go in chapter packages"
    for path in (ROOT / "graders").glob("*.py"):
        text = path.read_text()
        for exercise in EXERCISES:
            assert f'"{exercise.id}"' not in text, f"graders/{path.name} names exercise {exercise.id}"


def test_every_fixture_folder_is_an_exercise():
    known = {(f"ch{e.chapter}", e.id) for e in EXERCISES}
    for folder in (ROOT / "tests" / "submissions").glob("*/*"):
        if folder.is_dir():
            assert (folder.parent.name, folder.name) in known, f"{folder} is not an exercise's fixture folder"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_an_exercise_that_needs_torchs_compiler_stack_says_so(exercise):
    """The command line and an autograded notebook's judge warm torch's compiler stack up in the runners'
    forkserver only for exercises that declare it (about 1 s saved for the others); an undeclared one pays that
    inside a check's time limit (positional_encoding's stays_on_device took 1.0 s of its 2 so). What imports it on
    first use: an optimizer, FakeTensorMode, gradcheck (which needs sympy)."""
    source = (ROOT / "graders" / f"ch{exercise.chapter}" / f"{exercise.id}.py").read_text()
    needs = any(use in source for use in ("torch.optim.", "FakeTensorMode", "gradcheck("))
    assert exercise.warm_compiler_stack == needs, (
        f"{exercise.id}: set warm_compiler_stack={needs} in its exercise(...) declaration")


def test_a_bug_is_graded_on_the_checks_it_names_and_every_check_in_ci(monkeypatch):
    """`make test` grades a bug on its named checks only (issue 9); CI (COURSE_EVERY_CHECK=1) on all of them.
    A fixture whose total score is asserted, and a correct one, is always graded on every check."""
    from tests.submissions import checks_to_grade

    monkeypatch.delenv("COURSE_EVERY_CHECK", raising=False)
    assert checks_to_grade({"EXPECT_FAIL": {"a": "x", "b": "y"}}) == ["a", "b"]
    assert checks_to_grade({"EXPECT_FAIL": {"a": "x"}, "EXPECT_SCORE": 0}) is None
    assert checks_to_grade({"EXPECT_FAIL": {"*": "x"}}) is None
    assert checks_to_grade({"EXPECT_PASS": True}) is None
    monkeypatch.setenv("COURSE_EVERY_CHECK", "1")
    assert checks_to_grade({"EXPECT_FAIL": {"a": "x", "b": "y"}}) is None


def test_every_check_a_fixture_names_exists():
    from tests.submissions import verdict

    for path in sorted((ROOT / "tests" / "submissions").glob("*/*/*.py")):
        expected = verdict(path)
        names = {c.name for c in graders.get_exercise(path.parent.name).checks} | {"*"}
        unknown = set(expected.get("EXPECT_FAIL", {})) - names
        assert not unknown, f"{path.relative_to(ROOT)} names checks its exercise does not have: {sorted(unknown)}"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_an_exercise_whose_checks_lay_out_files_says_so(exercise):
    """A check that makes a folder for the student's code in the judge's exchange folder needs it made before the
    runners start (Exercise.writes_files): a confined runner may write nowhere else (graders.confine)."""
    module = importlib.import_module(exercise.module)
    uses = "exchange_folder(" in Path(module.__file__).read_text()
    assert exercise.writes_files == uses, (f"{exercise.id}: writes_files={exercise.writes_files}, but its module "
                                           f"{'calls' if uses else 'never calls'} exchange_folder()")
