"""Measure the course's time budgets on this machine (a script, not a test: timings vary by machine).

    python benchmarks/budgets.py              # every exercise's checks, every notebook, one autograde
    python benchmarks/budgets.py --checks     # only the exercise checks

Budgets (2-core CPU): a chapter notebook executes in <= 60 s; one exercise's checks in <= 2 s
(range_stream's worker runs <= 10 s); autograde of one submission is reported.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure_checks() -> None:
    import graders

    print("exercise checks on the reference solution (cpu, seconds, best of 3):")
    for exercise in graders.exercises():
        reference = importlib.import_module(f"solutions.ch{exercise.chapter}")
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            report = graders.check_namespace(exercise.id, vars(reference), device="cpu", instructor=True)
            best = min(best, time.perf_counter() - start)
            assert report.passed, report.as_text()
        print(f"  {exercise.id:22s} {best:6.2f} s  ({len(exercise.checks)} checks)")


def measure_notebooks() -> None:
    import nbformat

    from coursekit import notebooks

    print("chapter notebooks, executed from scratch (seconds, kernel start included):")
    for chapter in notebooks.chapters():
        nb = nbformat.read(notebooks.notebook_path(chapter), as_version=4)
        start = time.perf_counter()
        notebooks.execute(nb, chapter)
        print(f"  {chapter:14s} {time.perf_counter() - start:6.1f} s")


def measure_autograde() -> None:
    from coursekit import notebooks

    print("nbgrader autograde of one submission (the instructor version), seconds:")
    env_path = f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}"
    for chapter in notebooks.chapters():
        with tempfile.TemporaryDirectory() as scratch:
            course = Path(scratch)
            shutil.copy(ROOT / "nbgrader_config.py", course)
            shutil.copytree(ROOT / "course" / chapter, course / "course" / chapter)
            run = lambda *a: subprocess.run([sys.executable, "-m", "nbgrader", *a], cwd=course, check=True,
                                            capture_output=True, env={"PATH": env_path, "HOME": scratch})
            run("generate_assignment", chapter, "--force")
            (course / "submitted" / "student" / chapter).mkdir(parents=True)
            shutil.copy(course / "course" / chapter / f"{chapter}.ipynb", course / "submitted" / "student" / chapter)
            start = time.perf_counter()
            run("autograde", chapter, "--create")
            print(f"  {chapter:14s} {time.perf_counter() - start:6.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", action="store_true")
    args = parser.parse_args()
    measure_checks()
    if not args.checks:
        measure_notebooks()
        measure_autograde()
