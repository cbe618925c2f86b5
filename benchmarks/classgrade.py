"""Grading a class: ``make grade JOBS=2`` against one serial ``nbgrader autograde`` (issue 14).

    python benchmarks/classgrade.py                                  # every chapter, 24 submissions each
    python benchmarks/classgrade.py --chapters 01_tensors 03_modules --submissions 24 --jobs 2
    python benchmarks/classgrade.py --trivial-only                   # only the per-submission cost ratios
    python benchmarks/classgrade.py --keep /tmp/classgrade           # keep the courses, logs and results.json
    python benchmarks/classgrade.py --chapters 01_tensors --confinement  # B unconfined too: confinement's share

A script, not a test: the figures depend on the machine and on what else runs on it (issue 14 asks for a
quiet 2-core machine). For each chapter it builds a course in a temporary folder from the repository's
nbgrader_config.py and ``course/<chapter>/``, and hands in a class of generated submissions, answered with
the student fixtures of ``tests/submissions/``: correct, partly correct, blank, crashing (an answer cell
kills its kernel) and looping (an answer cell never ends). Then, from two copies of that same course:

- **A**, serial: ``nbgrader autograde <chapter>``, one command, as an instructor would run it;
- **B**, parallel: ``python -m coursekit.classgrade <chapter> --jobs N`` (what ``make grade`` runs).

It reports both wall times and their ratio (issue 14's target: at least 1.7 on 2 cores), whether every
graded cell got the same kernel score (``auto_score``) in both gradebooks, and where B's grade of record
(written as the cell's manual score) overrides the kernel: expected only where an answer fools the kernel
or the kernel's run failed. Both runs interrupt a cell after ``--cell-timeout`` seconds, so a looping
answer costs its kernel the same in each; B's grade of record then loads that answer once per exercise, each
time stopped by the graders' own timeout (10 s).

It also reports what one submission of each chapter costs to autograde, as a multiple of a trivial
notebook's (one assignment, one graded cell): the part of a chapter's time that nbgrader's own start-up
does not explain.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "submissions"
CHAPTERS = sorted(p.name for p in (REPO / "course").iterdir() if p.is_dir() and re.match(r"\d\d_", p.name))
TRIVIAL = "00_trivial"
TARGET_RATIO = 1.7
KINDS = ("correct", "partial", "blank", "crashing", "looping")
CRASHING_ANSWER = "import os\nos._exit(1)"
LOOPING_ANSWER = "while True:\n    pass"
# A bug that never returns costs the graders' per-check timeout (10 s) in every check it reaches, which can
# race the cell timeout and so depend on the machine's load: the looping students cover that case instead.
SLOW_BUG = "did not finish"


# --- running nbgrader --------------------------------------------------------------------------------------

def grading_env() -> dict[str, str]:
    """A student's grading environment: never the instructor's (COURSE_INSTRUCTOR lets answers import the
    reference), one thread per kernel as ``make grade`` gives each worker, and this environment's tools first
    on PATH (nbgrader runs ``alembic`` by name)."""
    env = {k: v for k, v in os.environ.items() if k != "COURSE_INSTRUCTOR"}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def run_logged(command: list[str], root: Path, log: Path, *, echo: str | None = None,
               env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run ``command`` in ``root`` (``env`` added to the grading environment), its output appended to ``log`` (and
    printed after ``echo``, when given); its wall time in seconds and its exit code."""
    start = time.monotonic()
    with open(log, "a") as out, subprocess.Popen(command, cwd=root, env={**grading_env(), **(env or {})}, text=True,
                                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as process:
        for line in process.stdout:
            out.write(line)
            if echo is not None:
                print(f"{echo}{line}", end="", flush=True)
    return time.monotonic() - start, process.returncode


def nbgrader(root: Path, log: Path, *args: str) -> tuple[float, int]:
    return run_logged([sys.executable, "-m", "nbgrader", *args], root, log)


def best_autograde_seconds(root: Path, assignment: str, student: str, log: Path, repeat: int = 2) -> float:
    """One submission's ``nbgrader autograde`` wall time, best of ``repeat``."""
    times = []
    for _ in range(repeat):
        seconds, code = nbgrader(root, log, "autograde", assignment, "--student", student, "--force")
        if code != 0:
            raise SystemExit(f"autograde of {student} in {root} failed; see {log}")
        times.append(seconds)
    return min(times)


def score_of(root: Path, assignment: str, student: str) -> tuple[float, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(assignment, student)
        return submission.score, submission.max_score


def full_marks_note(root: Path, assignment: str, student: str) -> str:
    """Empty when ``student`` scored full marks, else a warning (the time wanted is a correct submission's)."""
    score, max_score = score_of(root, assignment, student)
    return "" if score == max_score else f" (WARNING: it scored {score:g} of {max_score:g}, not full marks)"


# --- a course ----------------------------------------------------------------------------------------------

def write_config(root: Path, cell_timeout: int) -> None:
    """The repository's nbgrader_config.py with ``root`` as the course root, and the cell timeout."""
    text, found = re.subn(r"^c\.CourseDirectory\.root\s*=.*$", f"c.CourseDirectory.root = {str(root)!r}",
                          (REPO / "nbgrader_config.py").read_text(), flags=re.MULTILINE)
    assert found == 1, "nbgrader_config.py should set c.CourseDirectory.root once"
    text += (f"\n# benchmarks/classgrade.py: a looping cell is interrupted after {cell_timeout} s, in both runs.\n"
             f"c.Execute.timeout = {cell_timeout}\nc.ExecutePreprocessor.timeout = {cell_timeout}\n")
    (root / "nbgrader_config.py").write_text(text)


def copy_course(source: Path, target: Path, cell_timeout: int) -> Path:
    """A copy of a course root (gradebook, release, submissions) whose config names its own folder."""
    shutil.copytree(source, target)
    write_config(target, cell_timeout)
    return target


def make_course(root: Path, chapter: str, notebook: nbformat.NotebookNode | None, cell_timeout: int) -> Path:
    """A course root with one assignment, released: ``chapter`` copied from the repository, or ``notebook``
    written under that name."""
    root.mkdir(parents=True)
    write_config(root, cell_timeout)
    folder = root / "course" / chapter
    if notebook is None:
        shutil.copytree(REPO / "course" / chapter, folder)
    else:
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{chapter}.ipynb")
    _, code = nbgrader(root, root / "generate.log", "generate_assignment", chapter, "--force")
    if code != 0:
        raise SystemExit(f"nbgrader generate_assignment {chapter} failed; see {root / 'generate.log'}")
    return root


def trivial_notebook() -> nbformat.NotebookNode:
    """A locked cell ``x = 1`` (as a chapter's opening cell is: autograde skips unmarked demonstration cells,
    coursekit/autograde.py) and a graded test cell worth 1 point. nbgrader needs no answer cell; a graded or
    locked cell needs a grade_id, and a graded one its points."""
    def cell(source: str, grade_id: str, **nbgrader) -> nbformat.NotebookNode:
        return new_code_cell(source, metadata={"nbgrader": {"schema_version": 3, "grade": False, "solution": False,
                                                            "locked": True, "grade_id": grade_id, **nbgrader}})

    nb = new_notebook(cells=[cell("x = 1", "setup"), cell("assert x == 1", "x_is_one", grade=True, points=1)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def hand_in(root: Path, assignment: str, student: str, nb: nbformat.NotebookNode) -> None:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


def released(root: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(root / "release" / assignment / f"{assignment}.ipynb", as_version=4)


# --- the class -------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Student:
    name: str
    kind: str
    answers: dict[str, str]  # exercise id -> what its answer cell holds: a fixture's name, "stub", "crash", "loop"


def answer_exercises(nb: nbformat.NotebookNode) -> list[str]:
    """The exercise id of each answer cell, in order (answer cells are ``<exercise id>_answer``)."""
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    wrong = [i for i in ids if not i.endswith("_answer")]
    assert not wrong, f"answer cells not named <exercise>_answer: {wrong}"
    return [i.removesuffix("_answer") for i in ids]


def fixtures(chapter: str, exercise: str, prefix: str) -> list[Path]:
    found = sorted((FIXTURES / f"ch{chapter}" / exercise).glob(f"{prefix}_*.py"))
    if prefix == "bug":
        found = [p for p in found if SLOW_BUG not in p.read_text()]
    assert found, f"no {prefix}_*.py fixture in {FIXTURES / f'ch{chapter}' / exercise}"
    return found


def class_mix(n: int) -> list[str]:
    """``n`` kinds: about 1/3 correct, 1/3 partly correct, 1/6 blank, the rest crashing and looping; at least
    one of each."""
    counts = {"correct": n // 3, "partial": n // 3, "blank": n // 6}
    rest = n - sum(counts.values())
    counts["crashing"], counts["looping"] = (rest + 1) // 2, rest // 2
    for kind in KINDS:
        while counts[kind] == 0:
            counts[max(counts, key=counts.get)] -= 1
            counts[kind] += 1
    return [kind for kind in KINDS for _ in range(counts[kind])]


def plan_answers(kind: str, exercises: list[str], chapter: str, rng: random.Random) -> dict[str, str]:
    """What each answer cell of a ``kind`` submission holds."""
    def pick(exercise: str, prefix: str) -> str:
        return rng.choice(fixtures(chapter, exercise, prefix)).name

    if kind == "blank":
        return {e: "stub" for e in exercises}
    answers = {e: pick(e, "correct") for e in exercises}
    if kind in ("crashing", "looping"):
        answers[rng.choice(exercises)] = "crash" if kind == "crashing" else "loop"
    elif kind == "partial":  # the first exercise drawn stays right, the second goes wrong, the others may
        _, wrong, *others = rng.sample(exercises, len(exercises))
        for exercise in [wrong, *(e for e in others if rng.random() < 0.5)]:
            how = rng.choice(["bug", "bug", "stub", "nothing"])
            answers[exercise] = "stub" if how == "stub" else pick(exercise, how)
    return answers


def answered(release: nbformat.NotebookNode, chapter: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with each answer cell replaced as planned. A fixture is a standalone module (its
    own imports; its EXPECT_* constants are harmless in a kernel), so it goes in whole."""
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        exercise = meta["grade_id"].removesuffix("_answer")
        answer = answers[exercise]
        if answer == "crash":
            cell.source = CRASHING_ANSWER
        elif answer == "loop":
            cell.source = LOOPING_ANSWER
        elif answer != "stub":
            cell.source = (FIXTURES / f"ch{chapter}" / exercise / answer).read_text()
    return nb


def hand_in_class(root: Path, chapter: str, n: int, seed: int) -> list[Student]:
    """``n`` submissions in ``submitted/``. Names say nothing of the kind and kinds are shuffled: the parallel
    run takes submissions in name order, so a class sorted by kind would put every looping one together."""
    rng = random.Random(f"{seed}:{chapter}")
    release = released(root, chapter)
    exercises = answer_exercises(release)
    kinds = class_mix(n)
    rng.shuffle(kinds)
    students = []
    for number, kind in enumerate(kinds):
        student = Student(f"s{number:02d}", kind, plan_answers(kind, exercises, chapter, rng))
        hand_in(root, chapter, student.name, answered(release, chapter, student.answers))
        students.append(student)
    return students


def print_class(students: list[Student]) -> None:
    counts = {kind: sum(s.kind == kind for s in students) for kind in KINDS}
    print(f"  class of {len(students)}: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()) +
          " (correct: a correct fixture in every answer cell)")
    for student in students:
        if student.kind != "correct":
            print(f"    {student.name} {student.kind}: " +
                  ", ".join(f"{e}={a.removesuffix('.py')}" for e, a in student.answers.items()))


# --- the gradebooks ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CellGrade:
    auto: float | None
    manual: float | None
    score: float


def read_grades(root: Path, chapter: str) -> dict[tuple[str, str], CellGrade]:
    """Every graded cell's grade in a course's gradebook, by (student, grade_id)."""
    from nbgrader.api import Gradebook

    grades = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for submission in gradebook.assignment_submissions(chapter):
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    grades[submission.student.id, grade.name] = CellGrade(grade.auto_score, grade.manual_score,
                                                                          grade.score)
    return grades


def compare(serial: dict, parallel: dict, kinds: dict[str, str]) -> dict:
    """Where the two gradebooks' kernel scores differ (there should be nowhere), where serial nbgrader wrote no
    kernel score at all, and where B's grade of record overrides its kernel."""
    kernel, unscored, overrides = [], [], []
    for student, cell in sorted(serial.keys() | parallel.keys()):
        a, b = serial.get((student, cell)), parallel.get((student, cell))
        where = {"student": student, "kind": kinds.get(student, "?"), "cell": cell}
        if a is not None and b is not None and a.auto is None and b.auto == 0:
            # nbgrader alone writes nothing when a kernel dies; make grade writes 0: the same 0 points.
            unscored.append(where)
        elif a is None or b is None or a.auto != b.auto:
            kernel.append({**where, "serial": a and a.auto, "parallel": b and b.auto})
        if a is not None and b is not None and a.score != b.score:
            overrides.append({**where, "kernel": b.auto, "record": b.manual, "serial": a.score})
    return {"kernel_differences": kernel, "unscored_in_serial": unscored, "record_overrides": overrides}


def print_comparison(found: dict) -> None:
    if found["kernel_differences"]:
        print(f"  KERNEL SCORES DIFFER in {len(found['kernel_differences'])} cells (auto_score, serial vs parallel):")
        for d in found["kernel_differences"]:
            print(f"    {d['student']} ({d['kind']}) {d['cell']}: serial {d['serial']}, parallel {d['parallel']}")
    else:
        print("  kernel scores (auto_score): identical wherever serial nbgrader wrote one")
    unscored = sorted({f"{u['student']} ({u['kind']})" for u in found["unscored_in_serial"]})
    if unscored:
        print(f"  serial nbgrader wrote no kernel score for {', '.join(unscored)} (its kernel died), the parallel "
              "run 0 in every cell: the same 0 points")
    if found["record_overrides"]:
        print(f"  the grade of record differs from the kernel in {len(found['record_overrides'])} cells (expected "
              "only where an answer fools the kernel or the kernel's run failed: not an error):")
        for o in found["record_overrides"]:
            print(f"    {o['student']} ({o['kind']}) {o['cell']}: kernel {o['kernel']:g}, record (manual_score) "
                  f"{o['record']:g}")
    else:
        print("  the grade of record: the same as the kernel's everywhere")


def print_totals(serial: dict, parallel: dict, students: list[Student]) -> None:
    """Each submission's points: serial (kernel), parallel kernel, parallel final (the grade of record counted)."""
    def total(grades: dict, student: str, field: str) -> float:
        return sum(getattr(g, field) or 0.0 for (s, _), g in grades.items() if s == student)

    print("  points per submission: serial / parallel kernel / parallel final")
    for kind in KINDS:
        points = [f"{s.name} {total(serial, s.name, 'score'):g}/{total(parallel, s.name, 'auto'):g}/"
                  f"{total(parallel, s.name, 'score'):g}" for s in students if s.kind == kind]
        print(f"    {kind}: {'; '.join(points)}")


def parallel_breakdown(root: Path, chapter: str, started: float, wall_s: float) -> dict:
    """How the parallel run's time splits, from its shard's file (written when the workers finish): grading on
    the workers (each submission's kernel run and grade of record), then the merge and the class report."""
    shard = root / ".classgrade" / chapter / "shards" / "0-of-1" / "shard.json"
    if not shard.exists():
        return {}
    outcomes = json.loads(shard.read_text())["outcomes"]
    grading_s = shard.stat().st_mtime - started
    slowest = max(outcomes, key=lambda o: o["seconds"])
    return {"grading_s": round(grading_s, 1), "merge_and_report_s": round(wall_s - grading_s, 1),
            "worker_busy_s": round(sum(o["seconds"] for o in outcomes), 1),
            "slowest": f"{slowest['student']} {slowest['seconds']:.1f} s"}


# --- one chapter -------------------------------------------------------------------------------------------

def time_serial(root: Path, chapter: str, log: Path) -> float:
    """Run A: one ``nbgrader autograde`` of the whole class, as an instructor would type it."""
    print(f"  A: nbgrader autograde {chapter} (serial) ...", flush=True)
    seconds, code = nbgrader(root, log, "autograde", chapter)
    print(f"  A: {seconds:.1f} s (exit code {code}: nbgrader exits 1 when some kernel died; log {log})")
    return seconds


def time_parallel(root: Path, chapter: str, jobs: int, log: Path, env: dict[str, str] | None = None) -> tuple[float, dict]:
    """Run B: ``make grade``'s command, its output shown as it comes; its wall time and how that splits."""
    print(f"  B: python -m coursekit.classgrade {chapter} --jobs {jobs} {' '.join(f'{k}={v}' for k, v in (env or {}).items())}...",
          flush=True)
    started = time.time()
    seconds, code = run_logged([sys.executable, "-m", "coursekit.classgrade", chapter, "--root", str(root),
                                "--jobs", str(jobs)], root, log, echo="    | ", env=env)
    if code != 0:
        raise SystemExit(f"coursekit.classgrade failed (exit code {code}); see {log}")
    split = parallel_breakdown(root, chapter, started, seconds)
    details = (f": grading {split['grading_s']:.1f} s (workers busy {split['worker_busy_s']:.1f} s in all, slowest "
               f"{split['slowest']}), then merge and report {split['merge_and_report_s']:.1f} s") if split else ""
    print(f"  B: {seconds:.1f} s{details}")
    return seconds, split


def benchmark_chapter(chapter: str, folder: Path, args, trivial_s: float) -> dict:
    """The class's two runs from one prepared course, compared; and one correct submission alone."""
    print(f"\n== {chapter}", flush=True)
    prepared = make_course(folder / "prepared", chapter, None, args.cell_timeout)
    students = hand_in_class(prepared, chapter, args.submissions, args.seed)
    print_class(students)
    single, serial, parallel = (copy_course(prepared, folder / name, args.cell_timeout)
                                for name in ("single", "serial", "parallel"))

    one = next(s.name for s in students if s.kind == "correct")
    single_s = best_autograde_seconds(single, chapter, one, folder / "single.log", args.repeat)
    print(f"  one submission ({one}): {single_s:.1f} s (best of {args.repeat}), {single_s / trivial_s:.2f}x the trivial notebook"
          f"{full_marks_note(single, chapter, one)}")
    serial_s = time_serial(serial, chapter, folder / "serial.log")
    parallel_s, split = time_parallel(parallel, chapter, args.jobs, folder / "parallel.log")
    print(f"  serial / parallel = {serial_s / parallel_s:.2f}x (target >= {TARGET_RATIO}x)")
    confinement = {}
    if args.confinement:  # B again on a copy, every kernel and check unconfined: what confinement costs
        bare = copy_course(prepared, folder / "parallel_unconfined", args.cell_timeout)
        bare_s, _ = time_parallel(bare, chapter, args.jobs, folder / "parallel_unconfined.log", {"COURSE_CONFINE": "0"})
        share = (parallel_s - bare_s) / bare_s
        print(f"  confinement: {parallel_s:.1f} s confined, {bare_s:.1f} s unconfined: {100 * share:+.1f} % (goal <= 3 %)")
        confinement = {"unconfined_s": round(bare_s, 1), "confinement_share": round(share, 3)}

    serial_grades, parallel_grades = read_grades(serial, chapter), read_grades(parallel, chapter)
    found = compare(serial_grades, parallel_grades, {s.name: s.kind for s in students})
    print_comparison(found)
    print_totals(serial_grades, parallel_grades, students)
    return {"chapter": chapter, "submissions": len(students),
            "mix": {kind: sum(s.kind == kind for s in students) for kind in KINDS},
            "students": [dataclasses.asdict(s) for s in students],
            "serial_s": round(serial_s, 1), "parallel_s": round(parallel_s, 1), "ratio": round(serial_s / parallel_s, 2),
            "parallel_breakdown": split, "kernel_identical": not found["kernel_differences"],
            "single_s": round(single_s, 1), "single_over_trivial": round(single_s / trivial_s, 2), **confinement, **found}


def single_only(chapter: str, folder: Path, args, trivial_s: float) -> dict:
    """One correct submission of ``chapter``, autograded alone (best of ``args.repeat``)."""
    root = make_course(folder / "single", chapter, None, args.cell_timeout)
    release = released(root, chapter)
    rng = random.Random(f"{args.seed}:{chapter}")
    hand_in(root, chapter, "correct_00",
            answered(release, chapter, plan_answers("correct", answer_exercises(release), chapter, rng)))
    single_s = best_autograde_seconds(root, chapter, "correct_00", folder / "single.log", args.repeat)
    print(f"  {chapter}: one submission {single_s:.1f} s (best of {args.repeat}), {single_s / trivial_s:.2f}x the trivial notebook"
          f"{full_marks_note(root, chapter, 'correct_00')}", flush=True)
    return {"chapter": chapter, "single_s": round(single_s, 1), "single_over_trivial": round(single_s / trivial_s, 2)}


def measure_trivial(folder: Path, cell_timeout: int, repeat: int = 2) -> float:
    """The trivial notebook's autograde, alone in a course of its own (best of ``repeat``): nbgrader's fixed cost."""
    shutil.rmtree(folder, ignore_errors=True)
    root = make_course(folder, TRIVIAL, trivial_notebook(), cell_timeout)
    hand_in(root, TRIVIAL, "student", released(root, TRIVIAL))
    seconds = best_autograde_seconds(root, TRIVIAL, "student", folder / "autograde.log", repeat)
    if full_marks_note(root, TRIVIAL, "student"):
        raise SystemExit(f"the trivial notebook did not score 1 of 1: see {folder / 'autograde.log'}")
    print(f"trivial notebook (x = 1, then assert x == 1 for 1 point): autograde {seconds:.1f} s (best of {repeat})",
          flush=True)
    return seconds


# --- the report --------------------------------------------------------------------------------------------

def print_table(rows: list[dict], trivial_s: float, trivial_only: bool) -> None:
    print(f"\ntrivial notebook: {trivial_s:.1f} s")
    if trivial_only:
        print(f"{'chapter':20s} {'single s':>9s} {'/ trivial':>9s}")
        for r in rows:
            print(f"{r['chapter']:20s} {r['single_s']:9.1f} {r['single_over_trivial']:8.2f}x")
        return
    print(f"{'chapter':20s} {'subs':>4s} {'serial s':>9s} {'parallel s':>10s} {'ratio':>6s} {'kernel same':>11s} "
          f"{'overrides':>9s} {'single s':>9s} {'/ trivial':>9s}")
    for r in rows:
        print(f"{r['chapter']:20s} {r['submissions']:4d} {r['serial_s']:9.1f} {r['parallel_s']:10.1f} "
              f"{r['ratio']:5.2f}x {'yes' if r['kernel_identical'] else 'NO':>11s} {len(r['record_overrides']):9d} "
              f"{r['single_s']:9.1f} {r['single_over_trivial']:8.2f}x")
    short = [r["chapter"] for r in rows if r["ratio"] < TARGET_RATIO]
    print(f"target serial / parallel >= {TARGET_RATIO}x: " + (f"missed by {', '.join(short)}" if short else "met"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="+", default=CHAPTERS, choices=CHAPTERS, metavar="CHAPTER")
    parser.add_argument("--submissions", type=int, default=24, help="submissions per chapter (at least 5)")
    parser.add_argument("--jobs", type=int, default=2, help="coursekit.classgrade's workers")
    parser.add_argument("--cell-timeout", type=int, default=20,
                        help="seconds before a cell is interrupted, in both runs (a looping answer costs this)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the class's answers")
    parser.add_argument("--keep", type=Path, help="build the courses here and keep them, with results.json")
    parser.add_argument("--repeat", type=int, default=2, help="single autogrades timed (the best counts)")
    parser.add_argument("--confinement", action="store_true",
                        help="run B a second time with COURSE_CONFINE=0 and report confinement's share of its time")
    parser.add_argument("--trivial-only", action="store_true",
                        help="only one submission per chapter against the trivial notebook (no class runs)")
    args = parser.parse_args(argv)
    if args.submissions < len(KINDS):
        parser.error(f"--submissions must be at least {len(KINDS)}: one of each kind")
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="classgrade-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores, Python {platform.python_version()}; courses in {base}; cells interrupted "
          f"after {args.cell_timeout} s in both the serial and the parallel run")
    try:
        trivial_s = measure_trivial(base / "trivial", args.cell_timeout, args.repeat)
        rows = []
        for chapter in args.chapters:
            folder = base / chapter
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            measure = single_only if args.trivial_only else benchmark_chapter
            rows.append(measure(chapter, folder, args, trivial_s))
        print_table(rows, trivial_s, args.trivial_only)
        results = {"cores": os.cpu_count(), "jobs": args.jobs, "cell_timeout_s": args.cell_timeout,
                   "seed": args.seed, "trivial_s": round(trivial_s, 1), "chapters": rows}
        if args.keep:
            (base / "results.json").write_text(json.dumps(results, indent=1))
            print(f"results: {base / 'results.json'}")
        else:
            print(json.dumps(results))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
