"""The instructor's round trip through nbgrader, for every chapter, in a temporary course directory (chapters
01 and 08 in `make test`, every chapter in CI's full run: ``IN_MAKE_TEST`` below).

generate_assignment → one submission (four in chapter 01) → autograde → generate_feedback, with the repository's
own nbgrader_config.py. The submissions:

- ``instructor``: the source notebook (solutions in place), its graded part, with the first exercise's answer
  made noisy (it prints to stderr and raises warnings while it is checked) — full marks: noise costs nothing
  and is reported on stdout, never on stderr (any stderr in a graded cell would score it 0);
- ``noisy_partial`` (chapter 01): the release with only the first exercise answered, by that noisy answer —
  exactly that exercise's points (partial work earns partial points);
- ``untouched`` (chapter 01): the student release as handed out — 0, without
  crashing (tests/test_notebooks.py runs every chapter's released answer cells against the graders: 0 points);
- ``wrong`` (chapter 01): a sliding_window that copies instead of returning a view, nothing else
  written — its feedback and ``nbgrader validate`` say why, and that the rest is not written yet.

Submissions are whole notebooks: autograde runs only their graded part (the opening cell, the answers and the
tests; ``coursekit/autograde.py``), so a chapter's demonstration cells cost nothing here. Chapter 01's partial
submission proves it: one of its demonstration cells would kill the kernel if it ran, and its opening cell was
edited to disarm ``check`` (autograde restores the locked opening cell, so the unanswered exercises still score
0). The wrong answer, handed to ``nbgrader validate`` (which runs every cell), is the graded part only.
For the same reason (every nbgrader command costs seconds; issue 9) the noise rides on the instructor's
submission, and partial work is handed in once: nbgrader's handling of partial scores does not depend on the
chapter. The first exercises of the chapters answer with a function (01, 04, 05, 06), an
``autograd.Function`` (02) and an ``nn.Module`` (03), so every way of making noise is still covered.

Each chapter's tests are one class, so that `make test` (``--dist loadscope``) runs a chapter's round trip
once, on one worker, while other chapters' round trips and other test files run on the other workers.

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
WITH_PARTIAL_UNTOUCHED_AND_WRONG = "01_tensors"  # the chapter whose round trip also hands in partial, untouched and wrong work
# `make test` round-trips 01 (every kind of submission) and 08 (checks that start ranks, under nbgrader); CI's full
# run round-trips every chapter. The other six cost 105 s of a 2-core machine's make test, which had to make room
# for executing every chapter under other numerics (tests/test_notebook_numerics.py runs each chapter's graded
# cells there, twice, so a check that fails in a chapter still fails make test).
IN_MAKE_TEST = {WITH_PARTIAL_UNTOUCHED_AND_WRONG, "08_ddp"}

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


def _with_a_fatal_demonstration_and_check_disarmed(nb):
    """A demonstration cell that would kill the kernel, and an opening cell that disarms ``check``: neither may
    count while autograding (the first is not run, the second is restored)."""
    nb = nbformat.from_dict(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata["nbgrader"]["locked"], "the opening cell is a locked nbgrader cell"
    code[0].source += "\n\n\ndef check(*args, **kwargs):  # every test cell passes\n    pass\n"
    demonstration = next(c for c in code[1:] if not c.metadata.get("nbgrader"))
    demonstration.source = "import os\nos._exit(1)"
    return nb


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
    first_id, first_graded = _first_exercise_cells(source)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in _solution_cells(source)}

    def with_noisy_first_answer(nb):
        nb = nbformat.from_dict(nb)
        for cell in _solution_cells(nb):
            if cell.metadata["nbgrader"]["grade_id"] == first_id:
                cell.source = _with_noise(answers[first_id])
        return nb

    submissions = {"instructor": with_noisy_first_answer(source)}
    if chapter == WITH_PARTIAL_UNTOUCHED_AND_WRONG:
        submissions["noisy_partial"] = _with_a_fatal_demonstration_and_check_disarmed(with_noisy_first_answer(release))
        submissions["untouched"] = release
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


# One chapter's round trip runs once per test process, the first time one of its tests asks for it.
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


class _ChapterRoundTrip:
    """The round-trip tests of one chapter (``chapter`` is set by each subclass below)."""

    chapter: str

    @pytest.fixture
    def round_trip(self, tmp_path_factory) -> dict:
        return _chapter_round_trip(self.chapter, tmp_path_factory)

    def test_instructor_version_scores_full_marks(self, round_trip):
        """Every answer in place, the first one noisy: full marks, and the noise reported on stdout."""
        score, max_score = round_trip["scores"]["instructor"]
        assert max_score == sum(round_trip["points"].values()) > 0
        assert score == max_score
        _assert_noise_reported_on_stdout(round_trip, "instructor")

    def test_feedback_does_not_show_hidden_tests(self, round_trip):
        chapter = round_trip["chapter"]
        hidden_code = []
        for cell in round_trip["source"].cells:
            found = re.search(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S)
            if found:
                hidden_code += [line.strip() for line in found.group(1).splitlines() if line.strip()]
        assert hidden_code, "every chapter has hidden tests"
        for student in round_trip["scores"]:
            html = (round_trip["course"] / "feedback" / student / chapter / f"{chapter}.html").read_text()
            assert "BEGIN HIDDEN TESTS" not in html
            for line in hidden_code:
                # HTML escapes quotes; compare on the words of the call
                words = re.sub(r"[^\w]+", " ", line).strip()
                assert words not in re.sub(r"<[^>]+>|&[#\w]+;|[^\w]+", " ", html), f"feedback shows hidden code: {line}"


def _assert_noise_reported_on_stdout(round_trip: dict, student: str) -> None:
    chapter = round_trip["chapter"]
    autograded = round_trip["course"] / "autograded" / student / chapter / f"{chapter}.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
              and c.metadata["nbgrader"]["grade_id"] in round_trip["first_graded"]]
    assert graded
    notes = "".join(o.get("text", "") for c in graded for o in c.outputs)
    assert "wrote to stderr" in notes and "warned" in notes  # reported on stdout instead, not lost silently
    assert not any(o.get("name") == "stderr" for c in graded for o in c.outputs)


class _PartialUntouchedAndWrongTests:
    """Chapter 01's round trip also hands in partial work, the untouched release and a wrong sliding_window: what
    they score, and what nbgrader's Validate and the feedback page say (in the chapter's own class, so that its
    round trip still runs once)."""

    def test_partial_noisy_work_earns_its_points(self, round_trip):
        """Only the first exercise answered, correctly but noisily: exactly its points, noise reported on stdout."""
        score, max_score = round_trip["scores"]["noisy_partial"]
        expected = sum(round_trip["points"][g] for g in round_trip["first_graded"])
        assert 0 < score < max_score
        assert score == expected
        _assert_noise_reported_on_stdout(round_trip, "noisy_partial")

    def test_autograde_ran_no_demonstration_and_restored_the_opening_cell(self, round_trip):
        from coursekit.autograde import NOT_RUN

        chapter = round_trip["chapter"]
        nb = nbformat.read(round_trip["course"] / "autograded" / "noisy_partial" / chapter / f"{chapter}.ipynb",
                           as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "def check" not in code[0].source and code[0].execution_count
        fatal = [c for c in code if c.source == "import os\nos._exit(1)"]
        assert len(fatal) == 1 and [o.get("text") for o in fatal[0].outputs] == [NOT_RUN]

    def test_untouched_release_scores_zero(self, round_trip):
        assert round_trip["scores"]["untouched"] == (0, round_trip["scores"]["instructor"][1])

    def test_a_wrong_answer_is_explained_by_validate(self, round_trip):
        """nbgrader's Validate shows only each failed cell's error: it must carry the diagnosis, not grader internals."""
        validated = round_trip["validated"]
        text = validated.stdout + validated.stderr
        assert "is_a_view" in text and "copy, not a view" in text, text
        assert "not written yet" in text, text
        assert "graders/" not in text and "Traceback" not in text, text

    def test_a_wrong_answer_is_explained_in_the_feedback(self, round_trip):
        chapter = round_trip["chapter"]
        html = (round_trip["course"] / "feedback" / "wrong" / chapter / f"{chapter}.html").read_text()
        words = re.sub(r"<[^>]+>|&[#\w]+;", " ", html)
        assert "copy, not a view" in words and "not written yet" in words
        assert "graders/__init__.py" not in words and "judge_server" not in words
        score, max_score = round_trip["scores"]["wrong"]
        assert score == 0 < max_score  # a cell scores all or nothing, and each sliding_window cell has a view check


for _chapter in CHAPTERS:
    _name = f"TestRoundTrip_{_chapter}"
    _bases = ((_ChapterRoundTrip, _PartialUntouchedAndWrongTests) if _chapter == WITH_PARTIAL_UNTOUCHED_AND_WRONG
              else (_ChapterRoundTrip,))
    _marks = [] if _chapter in IN_MAKE_TEST else [pytest.mark.full]
    globals()[_name] = type(_name, _bases, {"chapter": _chapter, "__module__": __name__, "pytestmark": _marks})
