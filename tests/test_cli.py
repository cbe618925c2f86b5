"""``python -m graders``: the stable command-line contract (names, arguments, output, exit codes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "solutions" / "ch01_tensors.py"
BUG = ROOT / "tests" / "submissions" / "ch01_tensors" / "sliding_window" / "bug_offset_zero.py"


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    # From a directory outside the repository: the graders must work as an installed package.
    return subprocess.run([sys.executable, "-m", "graders", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture
def elsewhere(tmp_path):
    return tmp_path


def test_list(elsewhere):
    result = run("list", cwd=elsewhere)
    assert result.returncode == 0
    rows = [line.split() for line in result.stdout.splitlines()]  # columns padded to the longest id
    assert rows[0] == ["exercise", "chapter", "names"]
    for row in (["contiguous_strides", "01_tensors", "contiguous_strides"], ["sliding_window", "01_tensors", "sliding_window"],
                ["positional_encoding", "05_devices", "PositionalEncoding"]):
        assert row in rows


def test_check_passes_with_exit_0(elsewhere):
    result = run("check", "sliding_window", str(REFERENCE), "--device", "cpu", "--instructor", cwd=elsewhere)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  sliding_window: is_a_view" in result.stdout
    assert "sliding_window on cpu: 8/8 points" in result.stdout
    assert result.stderr == ""


def test_check_fails_with_exit_1_and_says_why(elsewhere):
    result = run("check", "sliding_window", str(BUG), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1
    assert "FAIL  sliding_window: storage_offset" in result.stdout
    assert "storage offset was ignored" in result.stdout


def test_json_output(elsewhere):
    result = run("check", "sliding_window", str(BUG), "--json", "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert {"exercise", "device", "passed", "score", "max_score", "checks"} <= set(report)
    assert report["exercise"] == "sliding_window" and report["device"] == "cpu" and report["passed"] is False
    assert 0 < report["score"] < report["max_score"]
    assert all({"name", "passed", "points", "message", "status"} <= set(c) for c in report["checks"])
    assert {c["status"] for c in report["checks"]} == {"passed", "failed"}
    assert report["score"] == sum(c["points"] for c in report["checks"])


def test_json_says_whether_the_answer_ran_confined_and_confinement_can_be_required(elsewhere):
    from graders import confine

    result = run("check", "sliding_window", str(BUG), "--json", "--device", "cpu", "--require-confinement",
                 cwd=elsewhere)
    if not confine.support().available:  # refused before anything runs
        assert result.returncode == 2 and "cannot be confined here" in result.stderr, result.stderr
        return
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["confined"] is True


def test_required_confinement_where_there_is_none_is_refused_before_anything_runs(monkeypatch, capsys):
    from graders import __main__ as cli, confine

    monkeypatch.setattr(confine, "support", lambda: confine.Support(0, "this test's kernel has no Landlock"))
    monkeypatch.setattr(cli, "_worth_a_runner", lambda args: pytest.fail("a runner was started"))
    assert cli.main(["check", "is_contiguous", str(REFERENCE), "--require-confinement"]) == 2
    assert "cannot be confined here (this test's kernel has no Landlock)" in capsys.readouterr().err


def test_unknown_exercise_exits_2_and_lists_known_ids(elsewhere):
    result = run("check", "sliding_windows", str(REFERENCE), cwd=elsewhere)
    assert result.returncode == 2
    assert "unknown exercise 'sliding_windows'" in result.stderr and "sliding_window" in result.stderr


def test_unreadable_path_exits_2(elsewhere):
    result = run("check", "sliding_window", str(elsewhere / "missing.py"), cwd=elsewhere)
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_misused_arguments_exit_2(elsewhere):
    assert run("check", "sliding_window", cwd=elsewhere).returncode == 2
    assert run("check", "sliding_window", str(REFERENCE), "--device", "tpu", cwd=elsewhere).returncode == 2
    assert run("check", "sliding_window", str(REFERENCE), "--timeout", "0", cwd=elsewhere).returncode == 2


def test_syntax_error_shows_the_line_and_exits_1(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("def sliding_window(x, size, step=1):\n    return x.as_strided((1, size), (1, 1)\n")
    result = run("check", "sliding_window", str(path), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1
    assert "answer.py has a syntax error on line 2" in result.stdout
    assert "return x.as_strided((1, size), (1, 1)" in result.stdout


@pytest.mark.full  # (make test has the other ways an answer fails to load: a syntax error, an import that raises)
def test_missing_name_exits_1(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("def sliding_windows(x, size, step=1):\n    return x\n")
    result = run("check", "sliding_window", str(path), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1 and "define `sliding_window`" in result.stdout


def test_student_exception_shows_the_students_line_and_exits_1(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("import torch\n\ndef sliding_window(x, size, step=1):\n    rows = len(x) // 0\n    return rows\n")
    result = run("check", "sliding_window", str(path), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1
    assert "ZeroDivisionError" in result.stdout and "answer.py, line 4" in result.stdout
    assert "rows = len(x) // 0" in result.stdout and "graders/core.py" not in result.stdout


def test_code_that_raises_on_import_exits_1(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("import torch\nundefined_name\n")
    result = run("check", "is_contiguous", str(path), cwd=elsewhere)
    assert result.returncode == 1 and "NameError" in result.stdout and "line 2" in result.stdout


def test_infinite_loop_is_stopped_at_the_timeout(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("def is_contiguous(shape, strides):\n    while True:\n        pass\n")
    result = run("check", "is_contiguous", str(path), "--timeout", "0.3", "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1 and "did not finish within 0.3 s" in result.stdout


@pytest.mark.full  # (make test stops a loop in a check: the test above; this one loops as the file loads)
def test_module_level_infinite_loop_is_stopped(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("while True:\n    pass\n")
    result = run("check", "is_contiguous", str(path), "--timeout", "0.5", cwd=elsewhere)
    assert result.returncode == 1 and "did not finish" in result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the machine without a GPU")
def test_cuda_without_a_gpu_exits_2(elsewhere):
    result = run("check", "sliding_window", str(REFERENCE), "--device", "cuda", cwd=elsewhere)
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr
    result = run("check", "sliding_window", str(REFERENCE), cwd=elsewhere, env={"COURSE_DEVICE": "cuda"})
    assert result.returncode == 2


def test_course_device_sets_the_default(elsewhere):
    result = run("check", "is_contiguous", str(REFERENCE), "--json", "--instructor", cwd=elsewhere,
                 env={"COURSE_DEVICE": "cpu"})
    assert json.loads(result.stdout)["device"] == "cpu"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_default_device_is_cuda_when_available(elsewhere):
    env = {k: v for k, v in os.environ.items() if k != "COURSE_DEVICE"}
    result = subprocess.run([sys.executable, "-m", "graders", "check", "is_contiguous", str(REFERENCE), "--json",
                             "--instructor"],
                            cwd=elsewhere, capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(result.stdout)["device"] == "cuda"


def test_the_reference_file_is_refused_without_instructor(elsewhere):
    result = run("check", "is_contiguous", str(REFERENCE), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1 and "answers must be your own code" in result.stdout


def test_a_student_that_prints_keeps_json_parseable(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("import sys\nprint('{not json')\ndef is_contiguous(shape, strides):\n"
                    "    print('noise'); print('more', file=sys.stderr)\n    return True\n")
    result = run("check", "is_contiguous", str(path), "--json", "--device", "cpu", cwd=elsewhere)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["passed"] is False and result.stderr == ""
    assert any("printed: {not json" in note for note in report["notes"])


def test_keyboard_interrupt_in_student_code_is_a_failure_not_exit_130(elsewhere):
    path = elsewhere / "answer.py"
    path.write_text("def is_contiguous(shape, strides):\n    raise KeyboardInterrupt\n")
    result = run("check", "is_contiguous", str(path), "--device", "cpu", cwd=elsewhere)
    assert result.returncode == 1 and "raised KeyboardInterrupt" in result.stdout
