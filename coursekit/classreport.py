"""What a class got wrong: the report ``make grade`` writes to ``reports/<CHAPTER>/`` after grading (issue 14).

- ``scores.csv``: one row a student: the score that counts, the kernel's, what happened to the submission, and
  every cell where the grade of record differs from the kernel's (tampering, or an answer that leans on a
  demonstration cell: an instructor should look).
- ``checks.csv``: one row a check: how many students failed it, and the most common diagnoses (the graders'
  "likely cause" where they name one; see :func:`coursekit.record.diagnosis`).
- ``class_report.png``: the score histogram beside each check's failing share, to show in a lecture.

Scores come from the gradebook; checks from the grades of record in ``.classgrade/<CHAPTER>/records/``.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
import statistics
from pathlib import Path

TOP_CAUSES = 3


@dataclasses.dataclass
class StudentRow:
    student: str
    score: float
    max_score: float
    kernel_score: float
    status: str
    detail: str
    disagreements: list[str]  # "cell: record 0 of 2, kernel 2"


@dataclasses.dataclass
class CheckRow:
    exercise: str
    check: str
    graded: int
    failing: int
    causes: list[tuple[str, int]]


@dataclasses.dataclass
class ClassReport:
    chapter: str
    folder: Path
    students: list[StudentRow]
    checks: list[CheckRow]

    def summary(self) -> str:
        lines = [f"{self.chapter}: report in {self.folder}"]
        if self.students:
            percents = [100 * s.score / s.max_score if s.max_score else 0.0 for s in self.students]
            lines.append(f"  {len(self.students)} students; median {statistics.median(percents):.0f} % of the points")
        for s in self.students:
            if s.status not in ("graded", ""):
                lines.append(f"  {s.student}: {s.status} - {s.detail} (scored on its record alone)")
        for s in self.students:
            if s.disagreements:
                lines.append(f"  record differs from the kernel: {s.student}: {'; '.join(s.disagreements)}")
        for row in sorted(self.checks, key=lambda r: -r.failing)[:3]:
            if row.failing:
                cause = f" - most often: {row.causes[0][0]}" if row.causes else ""
                lines.append(f"  most failed: {row.exercise}: {row.check} ({row.failing} of {row.graded}){cause}")
        return "\n".join(lines)


def _students(course, chapter: str, work: Path) -> list[StudentRow]:
    from nbgrader.api import Gradebook

    ledger_path = work / "record_scores.json"  # the cells whose record differed, as classgrade wrote them
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else {}
    rows = []
    with Gradebook(course.db_url) as gradebook:
        for submission in gradebook.assignment_submissions(chapter):
            student = submission.student.id
            kernel, differs = 0.0, []
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    kernel += grade.auto_score or 0.0
                    if grade.name in ledger.get(student, {}):
                        differs.append(f"{grade.name}: record {ledger[student][grade.name]:g} of {grade.max_score:g}, "
                                       f"kernel {grade.auto_score or 0:g}")
            path = work / "outcomes" / f"{student}.json"
            outcome = json.loads(path.read_text()) if path.exists() else {"status": "", "detail": ""}
            detail = outcome["detail"] + (f"; no grade of record: {outcome['record']}" if outcome.get("record") else "")
            rows.append(StudentRow(student, submission.score, submission.max_score, kernel, outcome["status"],
                                   detail, differs))
    return sorted(rows, key=lambda r: r.student)


def _checks(records: Path, students: list[str]) -> list[CheckRow]:
    from coursekit.record import Record

    graded: collections.Counter = collections.Counter()
    failing: collections.Counter = collections.Counter()
    causes: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    order: list[tuple[str, str]] = []
    for student in students:
        path = records / f"{student}.json"
        if not path.exists():
            continue
        for check in Record.from_json(json.loads(path.read_text())).checks:
            key = (check.exercise, check.name)
            if key not in graded:
                order.append(key)
            graded[key] += 1
            if not check.passed:
                failing[key] += 1
                causes[key][check.diagnosis] += 1
    return [CheckRow(e, n, graded[e, n], failing[e, n], causes[e, n].most_common(TOP_CAUSES)) for e, n in order]


def write(course, chapter: str, work: Path) -> ClassReport:
    """Write the chapter's report from the gradebook and the class's records; return it."""
    from coursekit.plots import plot_class_report

    folder = course.root / "reports" / chapter
    folder.mkdir(parents=True, exist_ok=True)
    students = _students(course, chapter, work)
    checks = _checks(work / "records", [s.student for s in students])
    with open(folder / "scores.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["student", "score", "max_score", "kernel_score", "status", "detail", "record_differs"])
        for s in students:
            out.writerow([s.student, f"{s.score:g}", f"{s.max_score:g}", f"{s.kernel_score:g}", s.status, s.detail,
                          "; ".join(s.disagreements)])
    with open(folder / "checks.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["exercise", "check", "students", "failing", "failing_share",
                      *[f"{kind}_{k}" for k in range(1, TOP_CAUSES + 1) for kind in ("cause", "count")]])
        for row in checks:
            causes = [item for cause, count in row.causes for item in (cause, count)]
            out.writerow([row.exercise, row.check, row.graded, row.failing, f"{row.failing / max(row.graded, 1):.3f}",
                          *causes, *[""] * (2 * TOP_CAUSES - len(causes))])
    percents = [100 * s.score / s.max_score if s.max_score else 0.0 for s in students]
    figure = plot_class_report(percents, {f"{r.exercise}: {r.check}": (r.failing, r.graded) for r in checks},
                               title=f"{chapter}: what the class got wrong")
    figure.savefig(folder / "class_report.png", dpi=120)
    return ClassReport(chapter, folder, students, checks)
