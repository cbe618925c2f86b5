"""coursekit.classgrade on a tiny course (no torch: the machinery, not a chapter, is under test; the chapters'
grades against serial nbgrader are measured by benchmarks/classgrade.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit import classgrade

pytestmark = pytest.mark.slow

ANSWERS = {  # student: (answer cell, expected score of t1 (2 points) and t2 (1 point))
    "right": ("def f():\n    return 42", 3.0),
    "half": ("def f():\n    return 7", 1.0),
    "dies": ("import os\nos._exit(1)", 0.0),
}


def _cell(source, **nbgrader):
    return new_code_cell(source, metadata={"nbgrader": {"schema_version": 3, "locked": not nbgrader.get("solution"),
                                                        "grade": False, "solution": False, **nbgrader}})


def _course(root):
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\nc.CourseDirectory.source_directory = 'source'\n"
        "c.Execute.timeout = 60\n")
    nb = new_notebook(cells=[
        new_code_cell("x = 1"),
        _cell("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION", solution=True, grade_id="ans"),
        _cell("assert f() == 42", grade=True, grade_id="t1", points=2),
        _cell("assert f() > 0", grade=True, grade_id="t2", points=1),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "source" / "a1").mkdir(parents=True)
    nbformat.write(nb, root / "source" / "a1" / "a1.ipynb")
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    made = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "a1"], cwd=root,
                          capture_output=True, text=True, env=env)
    assert made.returncode == 0, made.stdout + made.stderr


def _submit(root, student, answer):
    released = nbformat.read(root / "release" / "a1" / "a1.ipynb", as_version=4)
    for cell in released.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ans":
            cell.source = answer
    folder = root / "submitted" / student / "a1"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(released, folder / "a1.ipynb")


def _scores(root) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        return {sub.student.id: sub.score for sub in gradebook.assignment_submissions("a1")}


def _an_earlier_full_score(root, student):
    """What an earlier run left in the gradebook: full marks on every cell."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_student(student)
        submission = gradebook.add_submission("a1", student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = grade.max_score
        gradebook.db.commit()


# nbgrader 0.9.6's add_submission warns under SQLAlchemy 2 ("not in session"); the rows are written all the
# same, as the premise below checks.
@pytest.mark.filterwarnings("ignore:Object of type <Submitted")
def test_a_class_graded_on_two_workers_and_a_dead_kernel_never_keeps_a_stale_score(tmp_path):
    _course(tmp_path)
    for student, (answer, _) in ANSWERS.items():
        _submit(tmp_path, student, answer)
    _an_earlier_full_score(tmp_path, "dies")
    assert _scores(tmp_path)["dies"] == 3.0  # the premise
    lines: list[str] = []
    outcomes = classgrade.grade_class(tmp_path, "a1", jobs=2, progress=lines.append)
    assert [(o.student, o.status) for o in outcomes] == [("dies", "kernel died"), ("half", "graded"),
                                                          ("right", "graded")]
    assert len(lines) == 3 and all(line.startswith("[") for line in lines)
    assert all(" s left" in line for line in lines[:2]) and "left" not in lines[2], lines
    assert _scores(tmp_path) == {student: score for student, (_, score) in ANSWERS.items()}
    assert not [p for p in os.listdir(tmp_path) if p.startswith("cg")]


def test_a_submission_that_is_not_a_notebook_becomes_the_release_failed_on_every_graded_cell(tmp_path):
    release = tmp_path / "release.ipynb"
    nb = new_notebook(cells=[new_code_cell("x = 1"), _cell("assert True", grade=True, grade_id="t1", points=1),
                             _cell("def f(): pass", solution=True, grade_id="ans")])
    nbformat.write(nb, release)
    garbage = tmp_path / "submitted.ipynb"
    garbage.write_text("{ this is not json")
    zero = classgrade._zero_notebook(garbage, release, "not graded: nbgrader could not read it")
    outputs = {c.metadata.get("nbgrader", {}).get("grade_id"): c.outputs for c in zero.cells}
    assert outputs["t1"][0]["ename"] == "NotGraded" and "could not read" in outputs["t1"][0]["evalue"]
    assert outputs["ans"] == [] and outputs[None] == []
