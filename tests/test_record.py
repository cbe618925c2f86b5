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


def test_an_answer_that_disarms_check_passes_in_the_kernel_and_earns_nothing_on_record(instructor, tmp_path):
    tampered = copy.deepcopy(instructor)
    for exercise in ("contiguous_strides", "is_contiguous", "sliding_window"):
        _answer_cell(tampered, exercise).source = f"def {exercise}(*args, **kwargs):\n    return None\n"
    _answer_cell(tampered, "contiguous_strides").source += "\n\ndef check(*args, **kwargs):  # every test cell passes\n    pass\n"
    in_kernel = _kernel_scores(tampered)
    records = record.grade_of_record(_write(tampered, tmp_path), notebooks.notebook_path(CHAPTER), tmp_path)
    assert all(score > 0 for score in in_kernel.values()), "the premise: the kernel is fooled"
    assert all(r.score == 0 for r in records)
    assert {grade_id for grade_id, _, _ in record.disagreements(records, in_kernel)} == set(in_kernel)


def test_answers_earn_their_points_ipython_syntax_costs_nothing_a_deleted_answer_costs_its_own(instructor, tmp_path):
    """The instructor's answers, one with IPython syntax in it, one deleted (one grading run: each costs seconds)."""
    edited = copy.deepcopy(instructor)
    cell = _answer_cell(edited, "is_contiguous")
    cell.source = "%time x = 1\n!echo hello\n" + cell.source
    edited.cells.remove(_answer_cell(edited, "sliding_window"))
    records = {r.grade_id: r for r in record.grade_of_record(_write(edited, tmp_path), notebooks.notebook_path(CHAPTER),
                                                             tmp_path, instructor=True)}
    for grade_id, r in records.items():
        if grade_id.startswith("sliding_window"):
            assert r.score == 0 and r.failed, grade_id
        else:
            assert r.score == r.max_score, (grade_id, r.failed)
    assert "get_ipython()" in (tmp_path / "answers.py").read_text()
    kept = {grade_id: r.score for grade_id, r in records.items()}
    assert record.disagreements(list(records.values()), kept) == []
    assert record.disagreements(list(records.values()), {**kept, "is_contiguous_hidden": 0.0}) == [
        ("is_contiguous_hidden", records["is_contiguous_hidden"].score, 0.0)]
