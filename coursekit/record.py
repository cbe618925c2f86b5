"""The grade of record of a submission: its answers graded by the isolated grader, never inside its kernel.

Under nbgrader a submission's answer cells and the test cells run in one kernel, so an answer cell that
redefines ``check``, patches ``graders`` or ``torch.allclose`` passes every test cell, and nbgrader cannot
tell. Grading a class (issue 14) therefore also grades each submission this way:

1. **The programs.** Per exercise, one Python file: the chapter's opening cell, taken from the instructor's
   notebook (a student may have edited theirs), then the submission's answer cell for that exercise, matched
   by nbgrader ``grade_id``, after any earlier answer cells it uses (:func:`exercise_programs`). IPython syntax
   in an answer (``%timeit``, ``!ls``) is translated and does nothing, so it costs no points; an answer cell
   the student deleted is simply missing (its exercise is then "not written yet").
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


def answer_cells(instructor_notebook: Any) -> dict[str, str]:
    """Each graded cell's answer cell: the last answer (solution) cell before it."""
    answers, last = {}, None
    for cell in instructor_notebook.cells:
        meta = _nbgrader(cell)
        if meta.get("solution"):
            last = meta["grade_id"]
        elif meta.get("grade") and last:
            answers[meta["grade_id"]] = last
    return answers


def _names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell defines at its top level, and every name it uses (nothing, if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            defined |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return defined, used


def exercise_programs(submission: Any, instructor_notebook: Any) -> dict[str, str]:
    """One file per exercise the instructor's graded cells check: the instructor's opening cell, the earlier
    answer cells the exercise's own answer cell needs (by the names it uses, transitively), then its own
    answer cell.

    As in the notebook, where each test cell runs right after its exercise's answer, a later answer cell
    cannot change an exercise's grade, and an earlier one only through what it defines: an earlier cell runs
    inside ``try`` (an error there stops nothing, as a failing cell stops nothing in a kernel), and an earlier
    cell the exercise does not use is left out (one that loops forever then costs its own exercise only). An
    answer cell the student deleted is missing: its exercise is "not written" and costs nothing else.
    """
    opening = next(c for c in instructor_notebook.cells if c.cell_type == "code")
    submitted = {_nbgrader(c).get("grade_id"): _python(c.source) for c in submission.cells
                 if c.cell_type == "code" and _nbgrader(c).get("solution")}
    order = [_nbgrader(c)["grade_id"] for c in instructor_notebook.cells
             if c.cell_type == "code" and _nbgrader(c).get("solution")]
    answer_of = answer_cells(instructor_notebook)
    own: dict[str, str] = {}
    for cell in graded_cells(instructor_notebook):
        for exercise_id, _ in cell.checks:
            own.setdefault(exercise_id, answer_of.get(cell.grade_id, ""))
    programs = {}
    for exercise_id, answer in own.items():
        earlier = order[:order.index(answer)] if answer in order else []
        needed = _names(submitted.get(answer, ""))[1]
        included = []
        for grade_id in reversed(earlier):
            defined, used = _names(submitted.get(grade_id, ""))
            if defined & needed:
                included.insert(0, grade_id)
                needed |= used
        parts = [_PRELUDE, f"# the chapter's opening cell\n{_python(opening.source)}"]
        for grade_id in included:
            parts.append(f"# answer cell {grade_id} (what {answer} uses from it; an error here stops nothing)\n"
                         f"try:\n    exec(compile({submitted[grade_id]!r}, 'answer cell {grade_id}', 'exec'))\n"
                         "except Exception:\n    pass")
        if answer in submitted:
            parts.append(f"# answer cell {answer}\n{submitted[answer]}")
        programs[exercise_id] = "\n\n".join(parts) + "\n"
    return programs


def opening_imports(instructor_notebook: Any) -> list[str]:
    """The modules the chapter's opening cell imports (its top-level ``import`` statements), in order, then what
    ``coursekit.start_chapter`` imports when the cell imports coursekit (matplotlib: 0.1 s in every process
    that runs the opening cell, where it was not imported first)."""
    opening = next(c for c in instructor_notebook.cells if c.cell_type == "code")
    try:
        tree = ast.parse(_python(opening.source))
    except SyntaxError:
        return []
    modules: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.append(node.module)
    if any(m == "coursekit" or m.startswith("coursekit.") for m in modules):
        from coursekit import START_CHAPTER_IMPORTS

        modules += START_CHAPTER_IMPORTS
    return list(dict.fromkeys(modules))


def preload_opening_imports(instructor_notebook: Any) -> list[str]:
    """Import what the opening cell imports, here, and return the modules that loaded.

    Every exercise program starts with the opening cell, and each is loaded by a process forked from this
    one's forkserver: a module imported here before :func:`graders.isolation.warm_up` is imported once per
    worker instead of once per exercise and submission (torchvision alone takes 1.4 s on a 2-core laptop).
    Only the instructor's own imports are run, never a student's cell; one that fails is left to the program.
    """
    import importlib

    loaded = []
    for module in opening_imports(instructor_notebook):
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the program meets the same error and reports it
            continue
        loaded.append(module)
    return loaded


def grade_of_record(submission_path: str | Path, instructor_path: str | Path, workdir: str | Path, *,
                    device: str = "cpu", timeout: float | None = None, instructor: bool = False) -> Record:
    """Grade a submitted notebook's answers outside any kernel: one :class:`CellRecord` per graded cell of the
    instructor's notebook, one :class:`CheckRecord` per check those cells call.

    ``workdir`` receives each exercise's program (``<exercise>.py``, :func:`exercise_programs`), which stays for
    the instructor to read. ``instructor`` lets answers import the reference solutions (only the instructor's
    own notebook does).
    """
    submission = nbformat.read(str(submission_path), as_version=4)
    reference = nbformat.read(str(instructor_path), as_version=4)
    programs = {}
    for exercise_id, text in exercise_programs(submission, reference).items():
        programs[exercise_id] = Path(workdir) / f"{exercise_id}.py"
        programs[exercise_id].write_text(text, encoding="utf-8")
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
        report = graders.check_file(exercise_id, str(programs[exercise_id]), names or None, device=device,
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


def write_record(submission_path: str | Path, instructor_path: str | Path, out: Path, *, device: str | None = None,
                 timeout: float | None = None) -> Record:
    """The grade of record of one submitted file, written to ``out`` as JSON (its programs to the folder
    ``out`` names without ``.json``); a file that is not a notebook is nothing on every cell."""
    import json

    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        nbformat.read(str(submission_path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - not JSON, not a notebook: nothing of it can be graded
        result = unreadable(instructor_path, f"not a notebook: {type(exc).__name__}")
    else:
        programs = out.with_suffix("")  # a folder of its own: records of a class are made side by side
        programs.mkdir(exist_ok=True)
        result = grade_of_record(submission_path, instructor_path, programs, device=device, timeout=timeout)
    out.write_text(json.dumps(result.as_json(), indent=1), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m coursekit.record SUBMISSION INSTRUCTOR_NOTEBOOK --out record.json``: the grade of record of
    one submission, as JSON, made by hand (``make grade`` makes it inside its workers: coursekit.gradeworker)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m coursekit.record", description=main.__doc__.split("\n")[0])
    parser.add_argument("submission")
    parser.add_argument("instructor_notebook")
    parser.add_argument("--out", required=True, help="the JSON file to write (X.json: the programs go to X/<exercise>.py)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per check (default: the graders')")
    args = parser.parse_args(argv)
    exercises = {e for cell in graded_cells(nbformat.read(args.instructor_notebook, as_version=4)) for e, _ in cell.checks}
    if exercises:
        from graders.isolation import warm_up

        # The checks' forkserver, forked from this process before it computes anything (as the command line
        # does): each check's process then starts without importing torch again.
        warm_up(next(iter(exercises)) if len(exercises) == 1 else None)
    write_record(args.submission, args.instructor_notebook, Path(args.out), device=args.device, timeout=args.timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
