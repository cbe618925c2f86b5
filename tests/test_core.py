"""The grader core's promises (judge, runner, outcomes, reports), on a small exercise made for these tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

import graders
from graders.devices import resolve_device
from graders.isolation import Limits, StudentSource
from graders.judge import run_checks
from graders.outcomes import GRADER_ERROR, SKIPPED, STUDENT_ERROR, skip
from graders.registry import Exercise
from graders.student import Submission

DEMO = Exercise("demo_double", chapter="00_demo", names=("double",))


@DEMO.check(points=2)
def doubles_values(student: Submission, device: torch.device) -> None:
    """double(x) returns 2 * x and leaves the grader's x alone."""
    x = torch.arange(4.0, device=device)
    expected = x * 2  # computed before the student's code runs
    got = student.call("double", x)
    if not isinstance(got, torch.Tensor) or not torch.equal(got, expected):
        graders.outcomes.fail(f"expected {expected.tolist()}, got {got!r}")
    if not torch.equal(x, torch.arange(4.0, device=device)):
        graders.outcomes.fail("the grader's input changed")


def grade(source: str, timeout: float = 2.0, exercise: Exercise = DEMO):
    namespace: dict = {}
    exec(compile(source, "/tmp/ipykernel_0/demo.py", "exec"), namespace)
    return run_checks(exercise, StudentSource.from_namespace(namespace, exercise.names), torch.device("cpu"),
                      limits=Limits(timeout=timeout))


def test_correct_answer_passes():
    report = grade("def double(x):\n    return x + x\n")
    assert report.passed and report.score == 2 == report.max_score


def test_student_gets_a_copy_and_cannot_change_what_is_compared():
    report = grade("def double(x):\n    x.mul_(2)\n    return x\n")
    assert report.passed, report.as_text()  # mutating its own copy does not change the grader's x


def test_call_with_inputs_keeps_views_and_mutations():
    from graders.ch01_tensors.sliding_window import SLIDING_WINDOW  # noqa: F401 - any loaded exercise

    namespace = {"view": lambda x: x[1:].view(2, 2)}
    source = StudentSource.from_namespace(namespace, ["view"])
    from graders.isolation import Runner

    runner = Runner(source, seed=0, device="cpu", limits=Limits(timeout=5))
    try:
        result, (x,), _ = Submission(runner).call_with_inputs("view", torch.arange(5.0))
    finally:
        runner.close()
    result[0, 0] = -1.0
    assert x[1].item() == -1.0 and x.untyped_storage().data_ptr() == result.untyped_storage().data_ptr()


@pytest.mark.parametrize("body", [
    "while True:\n        pass",
    "while True:\n        try:\n            time.sleep(1)\n        except BaseException:\n            pass",
    "import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass",
])
def test_infinite_loops_are_stopped(body):
    start = time.perf_counter()
    report = grade(f"import time\ndef double(x):\n    {body}\n", timeout=0.5)
    assert time.perf_counter() - start < 10
    assert not report.passed
    assert "did not finish within 0.5 s" in report.results[0].message


def test_student_stderr_and_warnings_are_reported_not_written(capfd):
    report = grade("import sys, warnings\ndef double(x):\n    print('debug', file=sys.stderr)\n"
                   "    warnings.warn('careful')\n    return 2 * x\n")
    assert report.passed
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert any("wrote to stderr: debug" in n for n in report.notes), report.notes
    assert any("UserWarning: careful" in n for n in report.notes), report.notes


def test_student_exception_shows_the_students_line(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("def double(x):\n    y = x * 2\n    return y[100]\n")
    report = run_checks(DEMO, StudentSource.from_file(str(path), DEMO.names), torch.device("cpu"))
    result = report.results[0]
    assert result.status == STUDENT_ERROR and result.error.exception_type == "IndexError"
    assert "answer.py, line 3" in result.message and "return y[100]" in result.message
    assert "graders" not in result.message


def test_not_written_yet_is_said_once():
    report = grade("def double(x):\n    raise NotImplementedError()\n")
    assert report.not_written
    assert report.as_text().count("not written yet") == 1
    assert "not written yet" in report.summary()


def test_missing_name_says_what_to_define():
    report = graders.check_namespace("sliding_window", {}, device="cpu")
    assert not report.passed and all("define `sliding_window`" in r.message for r in report.results)


def test_a_grader_bug_is_reported_as_such_and_never_blamed_on_the_student():
    broken = Exercise("demo_broken", chapter="00_demo", names=("double",))

    @broken.check()
    def crashes(student, device):
        student.call("double", torch.ones(2))
        raise KeyError("grader bug")

    report = grade("def double(x):\n    return 2 * x\n", exercise=broken)
    result = report.results[0]
    assert result.status == GRADER_ERROR and report.grader_errors == [result]
    assert "not your fault" in result.message and "KeyError" in result.message


def test_a_skipped_check_is_never_counted_as_passed():
    needs_gpu = Exercise("demo_gpu", chapter="00_demo", names=("double",))

    @needs_gpu.check(points=3)
    def on_two_gpus(student, device):
        skip("needs two GPUs")

    report = grade("def double(x):\n    return 2 * x\n", exercise=needs_gpu)
    assert report.results[0].status == SKIPPED and report.score == 0 and not report.passed


def test_notebook_check_prints_and_raises_a_short_error(capsys):
    with pytest.raises(graders.ExerciseNotPassed) as info:
        graders.check("sliding_window", {"sliding_window": lambda x, size, step=1: x}, "contiguous_input")
    out = capsys.readouterr().out
    assert "FAIL  sliding_window: contiguous_input" in out
    assert "contiguous_input" in str(info.value)  # Validate and the feedback page show the diagnosis
    rendered = info.value._render_traceback_()
    assert len(rendered) == 1 and "FAIL lines above" in rendered[0]


def test_under_nbgrader_the_error_itself_carries_the_diagnosis(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(graders.ExerciseNotPassed) as info:
        graders.check("sliding_window", {"sliding_window": lambda x, size, step=1: x}, "contiguous_input")
    rendered = "\n".join(info.value._render_traceback_())
    assert "[contiguous_input]" in rendered and "must return a tensor" not in rendered or "returned" in rendered


def test_notebook_check_returns_nothing_on_success(capsys):
    from solutions import ch01_tensors

    assert graders.check_namespace("is_contiguous", vars(ch01_tensors), ["contiguous_layouts"],
                                   instructor=True).passed
    namespace = {"is_contiguous": ch01_tensors.is_contiguous}
    with pytest.raises(graders.ExerciseNotPassed, match="answers must be your own code"):
        graders.check("is_contiguous", namespace, "contiguous_layouts")


def test_each_check_is_seeded_the_same_way_wherever_it_runs():
    seen = []
    seeded = Exercise("demo_seed", chapter="00_demo", names=("double",))

    @seeded.check()
    def draws(student, device):
        seen.append(torch.rand(3).tolist())
        seen.append(student.call("double", None))

    source = "import torch\ndef double(x):\n    return torch.rand(2).tolist()\n"
    grade(source, exercise=seeded)
    torch.manual_seed(12345)
    grade(source, exercise=seeded)
    assert seen[0] == seen[2] and seen[1] == seen[3]


def test_unknown_exercise_and_check_are_usage_errors():
    with pytest.raises(graders.UsageError, match="known exercises: .*sliding_window"):
        graders.check_namespace("no_such_exercise", {}, device="cpu")
    with pytest.raises(graders.UsageError, match="its checks are"):
        graders.check_namespace("sliding_window", {}, ["no_such_check"], device="cpu")


def test_cuda_without_a_gpu_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(graders.UsageError, match="no CUDA GPU"):
        resolve_device("cuda")


def test_device_default_follows_course_device(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert resolve_device(None).type == "cpu"
    monkeypatch.delenv("COURSE_DEVICE")
    assert resolve_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_student_error_carries_facts_not_just_text():
    report = grade("def double(x):\n    return int('x')\n")
    error = report.results[0].error
    assert error.kind == "raised" and error.exception_type == "ValueError" and error.is_instance(ValueError)
    assert error.is_instance(Exception) and not error.is_instance(TypeError)


def test_every_chapter_grader_module_loads():
    graders.load_all_chapters()
    assert graders.LOAD_ERRORS == {}


def test_every_exercise_lives_in_a_module_named_after_it():
    """get_exercise imports an exercise's own module first (a kernel's first check cell no longer imports every
    chapter's graders); that needs graders/chNN_<slug>/<exercise_id>.py."""
    misplaced = {e.id: e.module for e in graders.exercises() if e.module.rsplit(".", 1)[-1] != e.id}
    assert misplaced == {}


def test_finding_an_exercise_imports_its_own_module_only():
    import subprocess
    import sys

    shown = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "from graders.registry import UsageError, get_exercise\n"
        "assert get_exercise('ddp_accumulation').names == ('ddp_accumulation_step',)\n"
        "print(sorted(m for m in sys.modules if m.count('.') == 2 and m.startswith('graders.ch')))\n"
        "try:\n"
        "    get_exercise('no_such_exercise')\n"
        "except UsageError as error:\n"
        "    print('contiguous_strides' in str(error))\n")], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["['graders.ch08_ddp.ddp_accumulation']", "True"]  # an unknown one: all


@pytest.mark.parametrize("got, expected, any_nonfinite, same", [
    (1.0 + 1e-6, 1.0, False, True), (1.0 + 1e-4, 1.0, False, False),
    (float("nan"), float("nan"), False, True), (float("inf"), float("inf"), False, True),
    (float("nan"), float("inf"), False, False), (float("-inf"), float("inf"), False, False),
    (float("nan"), float("inf"), True, True), (5.0, float("inf"), True, False), (float("nan"), 5.0, True, False),
])
def test_close_number_treats_non_finite_values_as_told(got, expected, any_nonfinite, same):
    from graders.compare import close_number

    assert close_number(got, expected, rtol=1e-5, any_nonfinite=any_nonfinite) is same


def test_a_singledispatch_answer_from_a_notebook_is_copied_with_its_registrations():
    """functools.singledispatch keeps a weak-reference cache that pickle refuses; a notebook answer written
    with it must still reach the grading process, its handlers calling it by name."""
    import cloudpickle

    from graders.isolation import _pickle_answers

    namespace = {"__name__": "__main__"}
    exec(compile("import functools\n\n@functools.singledispatch\ndef size(x):\n    return 1\n\n"
                 "@size.register\ndef _(x: list):\n    return sum(size(v) for v in x)\n",
                 "/tmp/ipykernel_1/1.py", "exec"), namespace)
    copied = cloudpickle.loads(_pickle_answers({"size": namespace["size"]}))["size"]
    assert copied([1, [2, 3], []]) == 3 and copied("a") == 1


def test_a_judges_next_request_on_the_same_answer_reuses_its_runner_loaded_afresh(monkeypatch):
    """A notebook's check cells send the same answer one after another: the judge server keeps the runner, and
    loads the answer afresh in it for the next request (a counter the answer keeps starts again), while another
    answer gets a runner of its own. Each check cell the kernel runs adds its own text to the notebook's cells
    (linecache) between the requests: the answer is the same, so its runner is too, told the cells as they are."""
    import linecache

    from graders import judge
    from tests.processes import ended

    started: list = []

    class Counting(judge.Runner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self.process.pid)

    monkeypatch.setattr(judge, "Runner", Counting)
    counting = "calls = []\n\ndef double(x):\n    calls.append(1)\n    return x * 2 * len(calls)\n"
    namespace: dict = {}
    cells = [f"/tmp/ipykernel_0/{name}.py" for name in ("counting", "check_1", "check_2")]
    monkeypatch.setitem(linecache.cache, cells[0], (len(counting), None, counting.splitlines(True), cells[0]))
    exec(compile(counting, cells[0], "exec"), namespace)
    keep = judge.KeptRunner()
    try:
        for cell in cells:
            if cell != cells[0]:  # the kernel ran this check cell before sending the answer again
                monkeypatch.setitem(linecache.cache, cell, (10, None, ['check("demo", globals())\n'], cell))
            source = StudentSource.from_namespace(namespace, DEMO.names)
            report = run_checks(DEMO, source, torch.device("cpu"), limits=Limits(timeout=5), keep=keep)
            assert report.passed, report.as_text()  # a second call (leaked state) would return 4 * x
            assert keep._runner is not None and cell in keep._runner.source.lines
        assert len(started) == 1, "the same answer's requests were served by one runner, whatever cells came between"
        other: dict = {}
        exec(compile("def double(x):\n    return x + x\n", "/tmp/ipykernel_0/other.py", "exec"), other)
        assert run_checks(DEMO, StudentSource.from_namespace(other, DEMO.names), torch.device("cpu"),
                          limits=Limits(timeout=5), keep=keep).passed
        assert len(started) == 2 and ended(started[0]), "another answer: the kept runner ends"
    finally:
        keep.close()
    assert ended(started[1])


def test_an_exercise_outline_is_what_a_check_cell_needs_of_it_and_nothing_of_its_checks(tmp_path, monkeypatch):
    """A confined kernel reads no checks: its check cells send their answer with the exercise's outline, from the
    committed graders/outlines.json (graders.registry.outline): the same names, checks and points, no check's code."""
    import json

    from coursekit import kernel_sandbox
    from graders import registry

    path = Path(kernel_sandbox._outlines())  # what the grading kernels get: committed, so it must be the registry's
    assert json.loads(path.read_text()) == json.loads(json.dumps(registry.outlines())), (
        "graders/outlines.json is stale: python -c \"from graders.registry import write_outlines; "
        "write_outlines('graders/outlines.json')\"")
    monkeypatch.setenv(registry.OUTLINES_ENV, str(path))
    for exercise in registry.exercises():
        outline = registry.outline(exercise.id)
        assert (outline.id, outline.chapter, outline.names) == (exercise.id, exercise.chapter, exercise.names)
        assert [(c.name, c.points) for c in outline.select(None)] == [(c.name, c.points) for c in exercise.checks]
        assert all(c.function is registry._unjudgeable for c in outline.checks)
    with pytest.raises(registry.UsageError, match="unknown exercise 'nope'"):
        registry.outline("nope")
    with pytest.raises(registry.UsageError, match="has no check named"):
        registry.outline(exercise.id).select(["nope"])
