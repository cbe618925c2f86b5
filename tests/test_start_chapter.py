"""coursekit.start_chapter: the same opening everywhere, no warning silenced, and a record of what the numbers
depend on (versions, seed, device, start method, the determinism switches)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

import coursekit


def _in_a_fresh_interpreter(code: str, **env) -> str:
    import os

    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def test_no_warning_is_silenced_for_the_learner():
    """The chapters used to ignore every DeprecationWarning and FutureWarning. A learner's own deprecated call
    must now be shown, as it would be outside the course."""
    out = _in_a_fresh_interpreter("""
        import warnings
        from coursekit import start_chapter
        start_chapter("00_test", device="cpu")
        warnings.warn("a FutureWarning the learner caused", FutureWarning)
        warnings.warn("a DeprecationWarning raised in __main__, as a notebook cell's code is", DeprecationWarning)
    """)
    assert "a FutureWarning the learner caused" in out
    assert "a DeprecationWarning raised in __main__" in out


def test_the_run_record_says_what_the_numbers_depend_on(capsys):
    device = coursekit.start_chapter("00_test", seed=7, device="cpu")
    banner = capsys.readouterr().out
    record = coursekit.run_record()
    assert device == torch.device("cpu") and record["device"] == "cpu" and record["seed"] == 7
    assert record["versions"]["torch"] == torch.__version__.split("+")[0] in banner
    assert {"python", "torch", "numpy"} <= set(record["versions"])
    assert record["determinism"]["use_deterministic_algorithms"] is False
    assert record["determinism"]["intra-op threads"] == torch.get_num_threads()


def test_deterministic_mode_sets_every_switch_and_gives_them_back(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        settings = coursekit.set_deterministic(True)
        assert settings["use_deterministic_algorithms"] is True and torch.are_deterministic_algorithms_enabled()
        assert settings["cudnn.deterministic"] is True and settings["cudnn.benchmark"] is False
        assert settings["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        settings = coursekit.set_deterministic(False)
    assert settings["use_deterministic_algorithms"] is False and settings["cudnn.deterministic"] is False


def test_start_chapter_turns_deterministic_mode_off_unless_asked(capsys):
    try:
        coursekit.start_chapter("00_test", device="cpu", deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
        coursekit.start_chapter("00_test", device="cpu")
        assert not torch.are_deterministic_algorithms_enabled()  # a re-run opening starts from the same state
    finally:
        coursekit.set_deterministic(False)


def test_figures_get_the_course_style_except_while_autograding():
    """Autograding runs no demonstration cell, so nothing is drawn: the opening does not import matplotlib then
    (0.1 s of every submission's kernel). Validating runs every cell, plots included, in the course's style."""
    code = """
        import sys
        from coursekit import start_chapter
        start_chapter("00_test", device="cpu")
        if "matplotlib" in sys.modules:
            import matplotlib
            print("dpi", matplotlib.rcParams["figure.dpi"])
        else:
            print("no matplotlib")
    """
    assert "no matplotlib" in _in_a_fresh_interpreter(code, NBGRADER_EXECUTION="autograde")
    assert "dpi 110" in _in_a_fresh_interpreter(code, NBGRADER_EXECUTION="validate")
    assert "dpi 110" in _in_a_fresh_interpreter(code)
