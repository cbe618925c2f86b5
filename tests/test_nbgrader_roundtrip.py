"""The instructor's round trip through nbgrader, for every chapter, in a temporary course directory.

generate_assignment → four submissions → autograde → generate_feedback, with the repository's own
nbgrader_config.py. The submissions:

- ``instructor``: the source notebook itself (solutions in place), every cell of it — full marks;
- ``untouched``: the student release as handed out — 0, without crashing;
- ``partial``: the release with only the first exercise answered — a partial score;
- ``noisy``: correct answers that also print to stderr and raise warnings — still full marks;
- ``wrong`` (chapter 01): a sliding_window that copies instead of returning a view, nothing else
  written — its feedback and ``nbgrader validate`` say why, and that the rest is not written yet.

Only the ``instructor`` submission executes the chapter's demonstrations: it proves that a whole chapter
autogrades, within nbgrader's time limit, to full marks. The other submissions keep the opening cell,
every markdown cell and every nbgrader cell (answers, graded tests, read-only text) and drop the
demonstration code cells in between, which cannot change a score (graded cells call the graders on the
answers only) and which nbval already executes, under spawn. Why: each full execution costs the
chapter's whole run time (20-40 s here), four times per chapter; with 8 chapters that alone would take
`make test` past its 10 minutes (issue 9).

The instructor's answers import the reference solutions, which only the instructor may do while
grading: these round trips run with ``COURSE_INSTRUCTOR=1``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.name for p in (ROOT / "course").iterdir() if p.is_dir() and re.match(r"\d\d_", p.name))
NBGRADER = [sys.executable, "-m", "nbgrader"]

pytestmark = pytest.mark.slow


def _nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # nbgrader runs the `alembic` command by name: the environment's bin/ must come first on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "OMP_NUM_THREADS": "1", "COURSE_INSTRUCTOR": "1"}
    result = subprocess.run([*NBGRADER, *args], cwd=course, capture_output=True, text=True, timeout=900, env=env)
    if not check:
        return result
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _solution_cells(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def _graded_points(nb) -> dict[str, float]:
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


NOISE = "print('debugging: inside my answer', file=_sys.stderr); _warnings.warn('my own leftover warning')"


def _with_noise(source: str) -> str:
    """Make a correct answer print to stderr and warn while the checks run it.

    Inside a function's body the noise goes right after ``### BEGIN SOLUTION``. A class answer (a
    top-level region that imports it) is replaced by a noisy subclass: an ``autograd.Function`` makes
    noise in ``forward``, any other class in ``__init__``.
    """
    out, imported = [], []
    for line in source.splitlines():
        out.append(line)
        if "### BEGIN SOLUTION" in line:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}import sys as _sys, warnings as _warnings")
            if indent:
                out.append(f"{indent}{NOISE}")
        found = re.match(r"from solutions\.\w+ import (\w+)$", line.strip())
        if found and not line.startswith(" "):
            imported.append(found.group(1))
    for name in imported:
        out += [
            f"if isinstance({name}, type):",
            f"    _Answer = {name}",
            "    if issubclass(_Answer, torch.autograd.Function):",
            f"        class {name}(_Answer):",
            "            @staticmethod",
            "            def forward(*args, **kwargs):",
            f"                {NOISE}",
            "                return _Answer.forward(*args, **kwargs)",
            "    else:",
            f"        class {name}(_Answer):",
            "            def __init__(self, *args, **kwargs):",
            f"                {NOISE}",
            "                super().__init__(*args, **kwargs)",
        ]
    return "\n".join(out)


def _graded_part(nb):
    """``nb`` without its demonstration code: the first code cell (the chapter's opening), every markdown
    cell and every nbgrader cell stay, in order."""
    kept, opening_seen = [], False
    for cell in nb.cells:
        marked = bool(cell.metadata.get("nbgrader"))
        if cell.cell_type == "code" and not marked:
            if opening_seen:
                continue
            opening_seen = True
        kept.append(cell)
    graded = nbformat.from_dict(nb)
    graded.cells = [nbformat.from_dict(c) for c in kept]
    return graded


def _first_exercise_cells(nb) -> tuple[str, list[str]]:
    """The first solution cell's grade_id and the graded cells that follow it up to the next solution."""
    first, graded = None, []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            if first is not None:
                break
            first = meta["grade_id"]
        elif meta.get("grade") and first is not None:
            graded.append(meta["grade_id"])
    return first, graded


def _round_trip(chapter: str, course: Path) -> dict:
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(ROOT / "course" / chapter, course / "course" / chapter)
    _nbgrader(course, "generate_assignment", chapter, "--force")

    name = f"{chapter}.ipynb"
    source = nbformat.read(course / "course" / chapter / name, as_version=4)
    release = nbformat.read(course / "release" / chapter / name, as_version=4)

    graded_release = _graded_part(release)
    partial = nbformat.from_dict(graded_release)
    first_id, first_graded = _first_exercise_cells(source)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in _solution_cells(source)}
    for cell in _solution_cells(partial):
        if cell.metadata["nbgrader"]["grade_id"] == first_id:
            cell.source = answers[first_id]

    noisy = _graded_part(source)
    for cell in _solution_cells(noisy):
        cell.source = _with_noise(cell.source)

    submissions = {"instructor": source, "untouched": graded_release, "partial": partial, "noisy": noisy}
    if chapter == "01_tensors":
        submissions["wrong"] = _wrong_sliding_window(graded_release)
    for student, nb in submissions.items():
        folder = course / "submitted" / student / chapter
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)

    _nbgrader(course, "autograde", chapter, "--create")
    _nbgrader(course, "generate_feedback", chapter)
    validated = None
    if "wrong" in submissions:
        validated = _nbgrader(course, "validate", str(course / "submitted" / "wrong" / chapter / name), check=False)

    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in submissions:
            submission = gradebook.find_submission(chapter, student)
            scores[student] = (submission.score, submission.max_score)
    return {
        "chapter": chapter,
        "course": course,
        "scores": scores,
        "points": _graded_points(source),
        "first_graded": first_graded,
        "source": source,
        "validated": validated,
    }


COPYING_WINDOW = ("return torch.stack([x[i * step:i * step + size] "
                  "for i in range((len(x) - size) // step + 1)])")


def _wrong_sliding_window(release):
    """The release with only sliding_window answered, wrongly: a copy (torch.stack) instead of a view."""
    wrong = nbformat.from_dict(release)
    for cell in _solution_cells(wrong):
        if "def sliding_window" in cell.source:
            cell.source = cell.source.replace("raise NotImplementedError()", COPYING_WINDOW)
            break
    else:
        raise AssertionError("no sliding_window answer cell in chapter 01")
    return wrong


# One chapter's round trip runs once per test process, the first time one of its tests asks for it. Under
# pytest-xdist (`make test` runs `-n auto --dist loadgroup`) all of a chapter's tests share one group, so
# the chapters' round trips run side by side on different workers, each once.
_ROUND_TRIPS: dict[str, dict | BaseException] = {}


def _chapter_round_trip(chapter: str, tmp_path_factory) -> dict:
    if chapter not in _ROUND_TRIPS:
        try:
            _ROUND_TRIPS[chapter] = _round_trip(chapter, tmp_path_factory.mktemp(f"course_{chapter}"))
        except BaseException as exc:  # noqa: BLE001 - every test of the chapter reports it, without a rerun
            _ROUND_TRIPS[chapter] = exc
    result = _ROUND_TRIPS[chapter]
    if isinstance(result, BaseException):
        raise result
    return result


def _in_group(chapter: str):
    return pytest.mark.xdist_group(f"round_trip_{chapter}")


def pytest_generate_tests(metafunc):
    # Parametrized here rather than by fixture params: xdist's loadgroup reads the marks of the test
    # items, and marks given to a fixture's params do not reach them (measured: each chapter's round trip
    # then ran on both workers).
    if "round_trip_chapter" in metafunc.fixturenames:
        metafunc.parametrize("round_trip_chapter", [pytest.param(c, id=c, marks=_in_group(c)) for c in CHAPTERS])


@pytest.fixture
def round_trip(round_trip_chapter, tmp_path_factory) -> dict:
    return _chapter_round_trip(round_trip_chapter, tmp_path_factory)


def test_instructor_version_scores_full_marks(round_trip):
    score, max_score = round_trip["scores"]["instructor"]
    assert max_score == sum(round_trip["points"].values()) > 0
    assert score == max_score


def test_untouched_release_scores_zero(round_trip):
    assert round_trip["scores"]["untouched"] == (0, round_trip["scores"]["instructor"][1])


def test_partial_submission_scores_partially(round_trip):
    score, max_score = round_trip["scores"]["partial"]
    expected = sum(round_trip["points"][g] for g in round_trip["first_graded"])
    assert 0 < score < max_score
    assert score == expected


def test_correct_answer_with_stderr_and_warnings_scores_full_marks(round_trip):
    score, max_score = round_trip["scores"]["noisy"]
    assert score == max_score
    autograded = round_trip["course"] / "autograded" / "noisy" / round_trip["chapter"] / f"{round_trip['chapter']}.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    notes = "".join(o.get("text", "") for c in graded for o in c.outputs)
    assert "wrote to stderr" in notes and "warned" in notes  # reported on stdout instead, not lost silently
    assert not any(o.get("name") == "stderr" for c in graded for o in c.outputs)


def test_feedback_does_not_show_hidden_tests(round_trip):
    chapter = round_trip["chapter"]
    hidden_code = []
    for cell in round_trip["source"].cells:
        found = re.search(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S)
        if found:
            hidden_code += [line.strip() for line in found.group(1).splitlines() if line.strip()]
    assert hidden_code, "every chapter has hidden tests"
    for student in ("instructor", "untouched", "partial"):
        html = (round_trip["course"] / "feedback" / student / chapter / f"{chapter}.html").read_text()
        assert "BEGIN HIDDEN TESTS" not in html
        for line in hidden_code:
            # HTML escapes quotes; compare on the words of the call
            words = re.sub(r"[^\w]+", " ", line).strip()
            assert words not in re.sub(r"<[^>]+>|&[#\w]+;|[^\w]+", " ", html), f"feedback shows hidden code: {line}"


@pytest.fixture
def wrong_round_trip(tmp_path_factory) -> dict:
    return _chapter_round_trip("01_tensors", tmp_path_factory)


@_in_group("01_tensors")
def test_a_wrong_answer_is_explained_by_validate(wrong_round_trip):
    """nbgrader's Validate shows only each failed cell's error: it must carry the diagnosis, not grader internals."""
    validated = wrong_round_trip["validated"]
    text = validated.stdout + validated.stderr
    assert "is_a_view" in text and "copy, not a view" in text, text
    assert "not written yet" in text, text
    assert "graders/" not in text and "Traceback" not in text, text


@_in_group("01_tensors")
def test_a_wrong_answer_is_explained_in_the_feedback(wrong_round_trip):
    chapter = wrong_round_trip["chapter"]
    html = (wrong_round_trip["course"] / "feedback" / "wrong" / chapter / f"{chapter}.html").read_text()
    words = re.sub(r"<[^>]+>|&[#\w]+;", " ", html)
    assert "copy, not a view" in words and "not written yet" in words
    assert "graders/__init__.py" not in words and "judge_server" not in words
    score, max_score = wrong_round_trip["scores"]["wrong"]
    assert score == 0 < max_score  # a cell scores all or nothing, and each sliding_window cell has a view check
