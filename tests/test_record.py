"""coursekit.record: the grade of record, made outside the kernel, and where it disagrees with the kernel's."""

from __future__ import annotations

import copy

import nbformat
import pytest

from coursekit import notebooks, record

CHAPTER = "01_tensors"


@pytest.fixture(scope="module")
def instructor():
    return nbformat.read(notebooks.notebook_path(CHAPTER), as_version=4)


def _answer_cell(nb, exercise: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{exercise}_answer")


def _write(nb, tmp_path, name="submission.ipynb"):
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def _kernel_scores(nb) -> dict[str, float]:
    """What the kernel would score: the opening cell, every answer and every test cell run in one namespace,
    in order (as nbgrader runs them); a test cell that raises scores 0."""
    namespace: dict = {}
    scores = {}
    opening = next(c for c in nb.cells if c.cell_type == "code")
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not (cell is opening or meta.get("solution") or meta.get("grade")):
            continue
        try:
            exec(cell.source, namespace)
            ok = True
        except Exception:  # noqa: BLE001 - a failing test cell
            ok = False
        if meta.get("grade") and not meta.get("solution"):
            scores[meta["grade_id"]] = float(meta["points"]) if ok else 0.0
    return scores


def test_graded_cells_carry_every_point_of_the_chapter(instructor):
    cells = record.graded_cells(instructor)
    points = sum(float(c.metadata["nbgrader"]["points"]) for c in instructor.cells
                 if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution"))
    assert sum(c.points for c in cells) == points > 0
    assert all(c.checks for c in cells), "a graded cell that calls no check would be worth nothing on record"
    hidden = [c for c in cells if c.grade_id.endswith("_hidden")]
    assert hidden and all(c.checks for c in hidden), "hidden tests are part of the record"


def test_one_submission_disarming_check_with_ipython_syntax_and_a_deleted_answer(instructor, tmp_path):
    """One grading run (each costs seconds): the first answer disarms ``check`` (so every later test cell passes
    in the kernel), the second is the instructor's with IPython syntax added, the third answer cell is deleted."""
    edited = copy.deepcopy(instructor)
    _answer_cell(edited, "contiguous_strides").source = (
        "def contiguous_strides(shape):\n    return None\n\n\ndef check(*args, **kwargs):  # every test cell passes\n"
        "    pass\n\n\ndef helper():\n    return 1\n\n\nraise RuntimeError('a leftover error at the end of the cell')\n")
    _answer_cell(edited, "is_contiguous").source = ("%time x = 1\n!echo hello\nONE = helper()\n" +
                                                    _answer_cell(edited, "is_contiguous").source)
    edited.cells.remove(_answer_cell(edited, "sliding_window"))
    in_kernel = _kernel_scores(edited)
    assert all(score > 0 for score in in_kernel.values()), "the premise: the kernel is fooled"

    result = record.grade_of_record(_write(edited, tmp_path), notebooks.notebook_path(CHAPTER), tmp_path,
                                    instructor=True)
    records = result.cells
    assert record.Record.from_json(result.as_json()) == result
    assert {c.exercise for c in result.checks} == {"contiguous_strides", "is_contiguous", "sliding_window"}
    assert all(c.diagnosis == "not written yet" or "define" in c.diagnosis
               for c in result.checks if c.exercise == "sliding_window"), "a deleted answer: nothing to grade"
    by_id = {r.grade_id: r for r in records}
    for grade_id, r in by_id.items():
        if grade_id.startswith("is_contiguous"):  # IPython syntax and an earlier cell's error cost nothing
            assert r.score == r.max_score > 0, (grade_id, r.failed)
        else:  # disarmed, or deleted: nothing on record
            assert r.score == 0 and r.failed, grade_id
    program = (tmp_path / "is_contiguous.py").read_text()
    assert "get_ipython()" in program and "answer cell contiguous_strides_answer" in program, program
    assert {grade_id for grade_id, _, _ in record.disagreements(records, in_kernel)} == {
        grade_id for grade_id in by_id if not grade_id.startswith("is_contiguous")}


def _failure(message, error=None):
    from graders.outcomes import CheckResult

    return CheckResult("a_check", "failed" if error is None else "error", 0, 1, message, error)


def test_a_diagnosis_is_the_likely_cause_where_the_grader_names_one_wrapped_lines_included():
    message = ("wrong strides for a scalar shape\n  input:    shape=()\n  likely cause: the loop starts at the "
               "wrong end\n    of the shape\n  where:    dim 0")
    assert record.diagnosis(_failure(message)) == "the loop starts at the wrong end of the shape"


def test_without_a_likely_cause_a_diagnosis_is_the_error_kind_then_what_was_wrong_never_the_values():
    from graders.outcomes import StudentError

    raised = StudentError("raised", "raised ValueError", "ValueError", ("builtins.ValueError",), "bad", "a.py, line 2")
    assert record.diagnosis(_failure("f(x=(3,)) failed: raised ValueError: bad", raised)) == "raised ValueError"
    stub = StudentError("raised", "raised NotImplementedError", "NotImplementedError",
                        ("builtins.NotImplementedError",), "", "a.py, line 2")
    assert record.diagnosis(_failure("f((2,)) failed: raised NotImplementedError", stub)) == "not written yet"
    assert record.diagnosis(_failure("wrong strides for an ordinary shape\n  input:    shape=(5,)")) == \
        "wrong strides for an ordinary shape"


def _notebook(answers: dict[str, str], instructor):
    nb = copy.deepcopy(instructor)
    for exercise, source in answers.items():
        _answer_cell(nb, exercise).source = source
    return nb


def test_an_exercise_is_graded_with_the_earlier_answer_cells_it_uses_and_no_others(instructor):
    """A later answer never reaches an earlier exercise; an earlier one only through the names it defines,
    transitively, inside try (so a stub's top-level raise or a leftover error stops nothing)."""
    nb = _notebook({
        "contiguous_strides": "import math as m\nBASE = 2\n\n\ndef contiguous_strides(shape):\n    while True:\n        pass\n",
        "is_contiguous": "def is_contiguous(shape, strides):\n    return m.prod(shape) >= BASE\n\n\nraise NotImplementedError()\n",
        "sliding_window": "def sliding_window(x, size, step):\n    return is_contiguous((1,), (1,))\n",
    }, instructor)
    programs = record.exercise_programs(nb, instructor)
    assert set(programs) == {"contiguous_strides", "is_contiguous", "sliding_window"}
    assert "answer cell is_contiguous_answer" not in programs["contiguous_strides"]
    assert "answer cell sliding_window_answer" not in programs["is_contiguous"]
    assert "try:\n    exec(compile(" in programs["is_contiguous"] and "BASE = 2" in programs["is_contiguous"]
    # sliding_window uses is_contiguous, which uses m and BASE from the first cell: both come along
    assert "answer cell contiguous_strides_answer" in programs["sliding_window"]
    assert "answer cell is_contiguous_answer (what" in programs["sliding_window"]
    for program in programs.values():
        compile(program, "program", "exec")  # each is a valid file
    deleted = copy.deepcopy(nb)
    deleted.cells.remove(_answer_cell(deleted, "is_contiguous"))
    assert "def is_contiguous" not in record.exercise_programs(deleted, instructor)["is_contiguous"]


def test_the_command_line_records_a_file_that_is_not_a_notebook_as_nothing_on_every_cell(tmp_path):
    import json
    import subprocess
    import sys

    garbage = tmp_path / "submission.ipynb"
    garbage.write_text("{ not json")
    out = tmp_path / "records" / "student.json"
    done = subprocess.run([sys.executable, "-m", "coursekit.record", str(garbage), str(notebooks.notebook_path(CHAPTER)),
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = record.Record.from_json(json.loads(out.read_text()))
    assert result.cells and all(c.score == 0 and "not a notebook" in c.failed[0] for c in result.cells)
    assert result.checks and not any(c.passed for c in result.checks)


def test_the_opening_cells_imports_are_found_in_order_without_running_the_cell():
    """make grade's workers import them once, before forking the processes that load every exercise program."""
    from nbformat.v4 import new_code_cell, new_notebook

    opening = ("import os, numpy as np\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n"
               "from . import relative\n%matplotlib inline\nif True:\n    import json  # not at top level\n"
               "raise SystemExit('the cell itself must not run')\nimport os\n")
    nb = new_notebook(cells=[new_code_cell(opening), new_code_cell("import never_imported")])
    assert record.opening_imports(nb) == ["os", "numpy", "torch.nn.functional", "torch.utils.data"]
    assert record.opening_imports(new_notebook(cells=[new_code_cell("import (")])) == []


def test_an_opening_that_imports_coursekit_also_preloads_what_start_chapter_imports():
    """start_chapter imports matplotlib itself: a process forked from a worker that had not imported it paid 0.1 s
    for it in every check of the grade of record (every rank of chapter 08's)."""
    from nbformat.v4 import new_code_cell, new_notebook

    from coursekit import START_CHAPTER_IMPORTS

    nb = new_notebook(cells=[new_code_cell("import torch\nfrom coursekit import start_chapter\nstart_chapter('x')")])
    assert record.opening_imports(nb) == ["torch", "coursekit", *START_CHAPTER_IMPORTS]
    assert "matplotlib" in START_CHAPTER_IMPORTS


def test_preloading_imports_what_loads_and_skips_what_does_not():
    import sys

    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("import colorsys\nimport no_such_module_for_the_course\nimport json")])
    assert record.preload_opening_imports(nb) == ["colorsys", "json"]
    assert "colorsys" in sys.modules and "no_such_module_for_the_course" not in sys.modules


@pytest.mark.parametrize("chapter", notebooks.chapters())
def test_every_chapters_opening_imports_torch_and_the_graders(chapter):
    nb = nbformat.read(notebooks.notebook_path(chapter), as_version=4)
    assert {"torch", "graders"} <= set(record.opening_imports(nb))
