"""The grade of record of a submission: its answers graded by the isolated grader, never inside its kernel.

Under nbgrader a submission's answer cells and the test cells run in one kernel, so an answer cell that
redefines ``check``, patches ``graders`` or ``torch.allclose`` passes every test cell, and nbgrader cannot
tell. Grading a class (issue 14) therefore also grades each submission this way:

1. **The program.** The chapter's opening cell, taken from the instructor's notebook (a student may have
   edited theirs), then the submission's answer cells in the instructor notebook's order, matched by nbgrader
   ``grade_id``: one Python file. IPython syntax in an answer (``%timeit``, ``!ls``) is translated and does
   nothing, so it costs no points; an answer cell the student deleted is simply missing (its exercise is then
   "not written yet").
2. **The cells.** Each graded test cell of the *instructor's* notebook (hidden tests included; never the
   student's copy) names its checks, ``check("exercise", globals(), "name", ...)``, and its points.
3. **The grade.** :func:`graders.check_file` grades the program, each check in its own process under limits
   the answer cannot switch off. A cell earns its points when every one of its checks passes, as in the
   notebook, where the cell raises otherwise.

:func:`disagreements` compares that with the scores the kernel gave (nbgrader's gradebook): a cell where
they differ is tampering, or a difference between the kernel and the program (an answer that relies on a
demonstration cell, say) that an instructor should look at.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import nbformat

# Answer cells may use IPython syntax; outside a kernel it must do nothing rather than fail the whole file.
_PRELUDE = '''\
class _NoIPython:  # what IPython syntax in an answer cell calls, outside a notebook: nothing
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def get_ipython():
    return _NoIPython()
'''


@dataclasses.dataclass(frozen=True)
class GradedCell:
    """A graded test cell of the instructor's notebook: what it checks and what it is worth."""

    grade_id: str
    points: float
    checks: tuple[tuple[str, tuple[str, ...]], ...]  # (exercise id, check names) per check() call


@dataclasses.dataclass
class CellRecord:
    grade_id: str
    score: float
    max_score: float
    failed: list[str]  # "exercise: check" of each check that did not pass
    on_record: bool = True  # False: the cell calls no check, so only the kernel can score it


@dataclasses.dataclass
class CheckRecord:
    """One check of the record: passed or not, and the diagnosis a class report counts."""

    exercise: str
    name: str
    passed: bool
    diagnosis: str = ""  # "" when it passed


@dataclasses.dataclass
class Record:
    """The grade of record of one submission: per graded cell, and per check."""

    cells: list[CellRecord]
    checks: list[CheckRecord]

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    def as_json(self) -> dict[str, Any]:
        return {"cells": [dataclasses.asdict(c) for c in self.cells],
                "checks": [dataclasses.asdict(c) for c in self.checks]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Record":
        return cls([CellRecord(**c) for c in data["cells"]], [CheckRecord(**c) for c in data["checks"]])


_MESSAGE_KEYS = ("input:", "expected:", "returned:", "where:", "likely cause:", "at ")


def diagnosis(result: Any) -> str:
    """What a failed check says went wrong, in a form that is the same for every student who made the mistake:
    the grader's "likely cause" where it names one, else the kind of error the answer raised, else the first
    line of the failure (what was wrong, without the student's values, which follow on later lines)."""
    lines = result.message.splitlines()
    for k, line in enumerate(lines):
        if line.strip().startswith("likely cause:"):
            cause = [line.strip()[len("likely cause:"):].strip()]
            for more in lines[k + 1:]:  # a cause wrapped onto further lines
                if not more.startswith("    ") or more.strip().startswith(_MESSAGE_KEYS):
                    break
                cause.append(more.strip())
            return " ".join(cause)
    error = getattr(result, "error", None)
    if error is not None:
        if error.not_written:
            return "not written yet"
        return error.summary
    return lines[0].strip() if lines else result.status


def _nbgrader(cell: Any) -> dict:
    return cell.metadata.get("nbgrader", {})


def check_calls(source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ``check(exercise_id, namespace, *names)`` calls in a test cell's source, in order."""
    calls = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check":
            constants = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if constants:
                calls.append((constants[0], tuple(constants[1:])))
    return tuple(calls)


def graded_cells(instructor_notebook: Any) -> list[GradedCell]:
    """Every graded code cell of the instructor's notebook, with its checks and points."""
    cells = []
    for cell in instructor_notebook.cells:
        meta = _nbgrader(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cells.append(GradedCell(meta["grade_id"], float(meta.get("points", 0)), check_calls(cell.source)))
    return cells


def _python(source: str) -> str:
    """A cell's source as plain Python (IPython syntax becomes ``get_ipython()`` calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def answer_program(submission: Any, instructor_notebook: Any) -> str:
    """The opening cell of the instructor's notebook, then the submission's answer cells, as one file."""
    opening = next(c for c in instructor_notebook.cells if c.cell_type == "code")
    answers = {_nbgrader(c).get("grade_id"): c for c in submission.cells
               if c.cell_type == "code" and _nbgrader(c).get("solution")}
    parts = [_PRELUDE, f"# the chapter's opening cell\n{_python(opening.source)}"]
    for cell in instructor_notebook.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        if cell.cell_type == "code" and _nbgrader(cell).get("solution") and grade_id in answers:
            parts.append(f"# answer cell {grade_id}\n{_python(answers[grade_id].source)}")
    return "\n\n".join(parts) + "\n"


def grade_of_record(submission_path: str | Path, instructor_path: str | Path, workdir: str | Path, *,
                    device: str = "cpu", timeout: float | None = None, instructor: bool = False) -> Record:
    """Grade a submitted notebook's answers outside any kernel: one :class:`CellRecord` per graded cell of the
    instructor's notebook, one :class:`CheckRecord` per check those cells call.

    ``workdir`` receives the program (``answers.py``), which stays for the instructor to read. ``instructor``
    lets answers import the reference solutions (only the instructor's own notebook does).
    """
    submission = nbformat.read(str(submission_path), as_version=4)
    reference = nbformat.read(str(instructor_path), as_version=4)
    program = Path(workdir) / "answers.py"
    program.write_text(answer_program(submission, reference), encoding="utf-8")
    cells = graded_cells(reference)
    wanted: dict[str, list[str]] = {}
    for cell in cells:
        for exercise_id, names in cell.checks:
            wanted.setdefault(exercise_id, [])
            wanted[exercise_id] += [n for n in names if n not in wanted[exercise_id]]
    passed: dict[tuple[str, str], bool] = {}
    checks: list[CheckRecord] = []
    options = {} if timeout is None else {"timeout": timeout}
    if wanted:
        import graders  # imports torch: only when some cell calls a check
    for exercise_id, names in wanted.items():
        report = graders.check_file(exercise_id, str(program), names or None, device=device,
                                    instructor=instructor, **options)
        for result in report.results:
            passed[exercise_id, result.name] = result.passed
            checks.append(CheckRecord(exercise_id, result.name, result.passed,
                                      "" if result.passed else diagnosis(result)))
    records = []
    for cell in cells:
        failed = [f"{e}: {n}" for e, names in cell.checks
                  for n in (names or [r for (x, r) in passed if x == e]) if not passed.get((e, n), False)]
        score = cell.points if cell.checks and not failed else 0.0
        records.append(CellRecord(cell.grade_id, score, cell.points, failed, on_record=bool(cell.checks)))
    return Record(records, checks)


def unreadable(instructor_path: str | Path, why: str) -> Record:
    """The record of a submission that is not a notebook at all: nothing on any cell or check."""
    cells = graded_cells(nbformat.read(str(instructor_path), as_version=4))
    checks = {(e, n) for cell in cells for e, names in cell.checks for n in names}
    return Record([CellRecord(c.grade_id, 0.0, c.points, [why], on_record=bool(c.checks)) for c in cells],
                  [CheckRecord(e, n, False, why) for e, n in sorted(checks)])


def disagreements(records: list[CellRecord], in_kernel: dict[str, float]) -> list[tuple[str, float, float | None]]:
    """The cells whose kernel score (``{grade_id: score}``, e.g. from the gradebook) differs from the record:
    ``(grade_id, score of record, score in the kernel)``; a cell missing from ``in_kernel`` counts as None."""
    return [(r.grade_id, r.score, in_kernel.get(r.grade_id)) for r in records
            if in_kernel.get(r.grade_id) is None or abs(in_kernel[r.grade_id] - r.score) > 1e-9]


def main(argv: list[str] | None = None) -> int:
    """``python -m coursekit.record SUBMISSION INSTRUCTOR_NOTEBOOK --out record.json``: the grade of record of
    one submission, as JSON (``make grade`` runs this in a process of its own per submission)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m coursekit.record", description=main.__doc__.split("\n")[0])
    parser.add_argument("submission")
    parser.add_argument("instructor_notebook")
    parser.add_argument("--out", required=True, help="the JSON file to write (X.json: the program goes to X/answers.py)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per check (default: the graders')")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    exercises = {e for cell in graded_cells(nbformat.read(args.instructor_notebook, as_version=4)) for e, _ in cell.checks}
    if exercises:
        from graders.isolation import warm_up

        # The checks' forkserver, forked from this process before it computes anything (as the command line
        # does): each check's process then starts without importing torch again.
        warm_up(next(iter(exercises)) if len(exercises) == 1 else None)
    try:
        nbformat.read(args.submission, as_version=4)
    except Exception as exc:  # noqa: BLE001 - not JSON, not a notebook: nothing of it can be graded
        result = unreadable(args.instructor_notebook, f"not a notebook: {type(exc).__name__}")
    else:
        program = out.with_suffix("")  # a folder of its own: records of a class are made side by side
        program.mkdir(exist_ok=True)
        result = grade_of_record(args.submission, args.instructor_notebook, program, device=args.device,
                                 timeout=args.timeout)
    out.write_text(json.dumps(result.as_json(), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
