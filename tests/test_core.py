"""The grader core's promises, on a small exercise made for these tests."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import graders
from graders.core import CheckFailed, Exercise, StudentCodeError, Submission, run_checks

DEMO = Exercise("demo_double", chapter="00_demo", names=("double",))


@DEMO.check(points=2)
def doubles_values(student: Submission, device: torch.device) -> None:
    """double(x) returns 2 * x and leaves the grader's x alone."""
    x = torch.arange(4.0, device=device)
    expected = x * 2  # computed before the student's code runs
    got = student.call("double", x)
    if not torch.equal(got, expected):
        raise CheckFailed(f"expected {expected.tolist()}, got {got.tolist()}")
    if not torch.equal(x, torch.arange(4.0, device=device)):
        raise CheckFailed("the grader's input changed")


def grade(source: str, timeout: float = 1.0):
    namespace: dict = {}
    exec(compile(source, "<student>", "exec"), namespace)
    return run_checks(DEMO, Submission(namespace, timeout=timeout), torch.device("cpu"))


def test_correct_answer_passes():
    report = grade("def double(x):\n    return x + x\n")
    assert report.passed and report.score == 2 == report.max_score


def test_student_gets_a_copy_and_cannot_change_what_is_compared():
    report = grade("def double(x):\n    x.mul_(2)\n    return x\n")
    assert report.passed, report.as_text()  # mutating its own copy does not change the grader's x


def test_copies_keep_the_layout_of_strided_inputs():
    from graders.core import _copy_value

    base = torch.arange(20.0)
    x = base[3::2]
    copy = _copy_value(x)
    assert copy.stride() == x.stride() and copy.storage_offset() == x.storage_offset()
    assert torch.equal(copy, x) and copy.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


@pytest.mark.parametrize("body", [
    "while True:\n        pass",
    "while True:\n        try:\n            time.sleep(1)\n        except Exception:\n            pass",
    "while True:\n        try:\n            pass\n        except:\n            pass",
])
def test_infinite_loops_are_stopped(body):
    start = time.perf_counter()
    report = grade(f"import time\ndef double(x):\n    {body}\n", timeout=0.5)
    assert time.perf_counter() - start < 5
    assert not report.passed
    assert "did not finish within 0.5 s" in report.results[0].message


def test_timeout_also_works_off_the_main_thread():
    box = {}
    before = threading.active_count()
    worker = threading.Thread(target=lambda: box.setdefault("r", grade("def double(x):\n    while True: pass\n", 0.5)))
    worker.start()
    worker.join(10)
    assert "did not finish" in box["r"].results[0].message
    time.sleep(0.3)
    assert threading.active_count() == before, "the student's endless loop was left running in a thread"


def test_student_stderr_and_warnings_are_reported_not_written(capfd):
    report = grade(
        "import sys, warnings\n"
        "def double(x):\n"
        "    print('debug', file=sys.stderr)\n"
        "    warnings.warn('careful')\n"
        "    return 2 * x\n"
    )
    assert report.passed
    captured = capfd.readouterr()
    assert captured.err == ""
    assert any("wrote to stderr: debug" in n for n in report.notes)
    assert any("UserWarning: careful" in n for n in report.notes)


def test_student_exception_shows_the_students_line(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("def double(x):\n    y = x * 2\n    return y[100]\n")
    DEMO_ID = "demo_double"
    graders.core.REGISTRY[DEMO_ID] = DEMO
    try:
        report = graders.check_file(DEMO_ID, str(path), device="cpu")
    finally:
        del graders.core.REGISTRY[DEMO_ID]
    message = report.results[0].message
    assert "IndexError" in message and "answer.py, line 3" in message and "return y[100]" in message
    assert "core.py" not in message and "ch01" not in message


def test_not_implemented_is_explained():
    report = grade("def double(x):\n    raise NotImplementedError()\n")
    assert "not written yet" in report.results[0].message


def test_missing_name_says_what_to_define():
    report = graders.check_namespace("sliding_window", {}, device="cpu")
    assert not report.passed and all("define `sliding_window`" in r.message for r in report.results)


def test_notebook_check_raises_on_failure_and_prints(capsys):
    with pytest.raises(AssertionError):
        graders.check("sliding_window", {"sliding_window": lambda x, size, step=1: x}, "contiguous_input")
    assert "FAIL  sliding_window: contiguous_input" in capsys.readouterr().out


def test_notebook_check_returns_nothing_on_success(capsys):
    from solutions import ch01_tensors

    assert graders.check("is_contiguous", vars(ch01_tensors), "contiguous_layouts") is None
    assert "PASS  is_contiguous: contiguous_layouts" in capsys.readouterr().out


def test_each_check_is_seeded_the_same_way_wherever_it_runs():
    seen = []
    exercise = Exercise("demo_seed", chapter="00_demo", names=())

    @exercise.check()
    def draws(student, device):
        seen.append(torch.rand(3).tolist())

    run_checks(exercise, Submission({}), torch.device("cpu"))
    torch.manual_seed(12345)
    run_checks(exercise, Submission({}), torch.device("cpu"))
    assert seen[0] == seen[1]


def test_unknown_exercise_and_check_are_usage_errors():
    with pytest.raises(graders.UsageError, match="known exercises: .*sliding_window"):
        graders.check_namespace("no_such_exercise", {}, device="cpu")
    with pytest.raises(graders.UsageError, match="its checks are"):
        graders.check_namespace("sliding_window", {}, ["no_such_check"], device="cpu")


def test_cuda_without_a_gpu_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(graders.UsageError, match="no CUDA GPU"):
        graders.core.resolve_device("cuda")


def test_device_default_follows_course_device(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert graders.core.resolve_device(None).type == "cpu"
    monkeypatch.delenv("COURSE_DEVICE")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert graders.core.resolve_device(None).type == expected


def test_student_error_carries_the_original_exception():
    sub = Submission({"f": lambda: int("x")})
    with pytest.raises(StudentCodeError) as info:
        sub.call("f")
    assert isinstance(info.value.exception, ValueError)


def test_every_chapter_grader_module_loads():
    graders.load_all_chapters()
    assert graders.LOAD_ERRORS == {}


def test_per_call_timeout_overrides_the_submission_limit():
    sub = Submission({"spin": lambda: [None for _ in iter(int, 1)]}, timeout=30)
    start = time.perf_counter()
    with pytest.raises(StudentCodeError, match="within 0.3 s"):
        sub.run(sub.get("spin"), _timeout=0.3)
    assert time.perf_counter() - start < 5 and sub.timeout == 30
