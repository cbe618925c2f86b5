"""coursekit.autograde: what nbgrader's autograde runs (the graded part only) and the judge it starts early."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.autograde import NOT_RUN, RunGradedPartOnly, uses_the_graders


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "solution": False, "grade": False, "locked": False,
                                     **nbgrader}
    return cell


# What the first graded cell reports: whether the kernel's judge was already running before any cell asked it.
_PROBE = ("import sys\njudge = sys.modules.get('graders.judge_server')\nclient = judge and judge._CLIENT\n"
          "print('judge running:', bool(client and client._process and client._process.poll() is None))")


@pytest.mark.parametrize("opening, judge_expected", [
    ("import graders\nx = 1", True),       # a chapter: its opening cell imports the graders
    ("x = 1", False),                      # a notebook that never checks anything pays for no judge
])
def test_a_kernel_starts_its_judge_before_the_first_cell_only_where_the_graders_are_used(opening, judge_expected):
    nb = new_notebook(cells=[
        _cell(opening, locked=True, grade_id="opening"),
        _cell("raise SystemExit('a demonstration cell must not run')"),
        _cell(_PROBE, grade=True, grade_id="probe", points=1, locked=True),
    ])
    assert uses_the_graders(nb) is judge_expected
    executed, _ = RunGradedPartOnly(timeout=60).preprocess(nb, {"metadata": {"path": "."}})
    opening_cell, demonstration, probe = executed.cells
    assert [o.get("text") for o in demonstration.outputs] == [NOT_RUN]
    assert "".join(o.get("text", "") for o in probe.outputs) == f"judge running: {judge_expected}\n"
