"""coursekit.classreport: counting what a class failed, and the figure an instructor shows (no nbgrader here;
tests/test_classgrade.py writes whole reports)."""

from __future__ import annotations

import json

from coursekit import classreport
from coursekit.plots import plot_class_report
from coursekit.record import CellRecord, CheckRecord, Record


def _record(path, checks):
    record = Record([CellRecord("cell", 0.0, 1.0, [])], [CheckRecord("ex", n, ok, d) for n, ok, d in checks])
    path.write_text(json.dumps(record.as_json()))


def test_each_check_counts_its_students_failing_and_their_commonest_diagnoses_first(tmp_path):
    _record(tmp_path / "a.json", [("shape", False, "off by one"), ("dtype", True, "")])
    _record(tmp_path / "b.json", [("shape", False, "off by one"), ("dtype", False, "returns float64")])
    _record(tmp_path / "c.json", [("shape", False, "wrong order"), ("dtype", True, "")])
    rows = classreport._checks(tmp_path, ["a", "b", "c", "no_record"])
    assert [(r.check, r.graded, r.failing, r.causes) for r in rows] == [
        ("shape", 3, 3, [("off by one", 2), ("wrong order", 1)]),
        ("dtype", 3, 1, [("returns float64", 1)])]


def test_the_class_figure_is_legible_its_labels_never_overlap():
    failing = {f"sliding_window: check_number_{k}": (k, 24) for k in range(18)}
    fig = plot_class_report([100 * k / 23 for k in range(24)], failing, title="01_tensors: what the class got wrong")
    fig.canvas.draw()
    assert fig.dpi >= 110
    renderer = fig.canvas.get_renderer()
    checks_ax = fig.axes[1]
    labels = [t.get_window_extent(renderer) for t in checks_ax.get_yticklabels() if t.get_text()]
    assert len(labels) == 18
    assert all(not a.overlaps(b) for i, a in enumerate(labels) for b in labels[i + 1:])
    assert [t.get_text() for t in checks_ax.get_yticklabels()][-1].endswith("_17"), "most failed at the top"
    counts = fig.axes[0].get_yticks()
    assert all(float(c).is_integer() for c in counts), "students are counted in whole numbers"


def test_writing_the_class_report_does_not_import_torch():
    """make grade's parent writes the report once every submission is graded: importing torch there (1.7 s, through
    the shared plots module) made the class wait for it."""
    import subprocess
    import sys

    code = ("import sys; from coursekit import classreport; from coursekit.plots import plot_class_report; "
            "print('torch' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert shown.stdout.strip() == "False", shown.stdout + shown.stderr
