"""What isolation costs: runner start, one round trip, and every exercise's checks on its reference.

    python benchmarks/isolation.py                # student code confined by the operating system (graders.confine)
    python benchmarks/isolation.py --unconfined   # the same without it (COURSE_CONFINE=0): run both to compare

A script, not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import graders
from graders.isolation import Limits, Runner, StudentSource, warm_up


def best(function, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    if "--unconfined" in sys.argv:
        os.environ["COURSE_CONFINE"] = "0"  # before the forkserver starts: every runner inherits it
    from graders import confine

    print("student code", "unconfined (COURSE_CONFINE=0)" if "--unconfined" in sys.argv else
          f"confined (Landlock ABI {confine.support().abi or 'none: ' + confine.support().reason})")
    warm_up()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "answer.py"
        path.write_text("def f(x):\n    return x\n")
        source = StudentSource.from_file(str(path), ["f"])

        def start_and_call() -> None:
            runner = Runner(source, seed=0, device="cpu", limits=Limits(timeout=30))
            runner.request(("call", "f", (1,), {}, False))
            runner.close()

        def start_and_call_unconfined() -> None:
            runner = Runner(source, seed=0, device="cpu", limits=Limits(timeout=30), env={"COURSE_CONFINE": "0"})
            runner.request(("call", "f", (1,), {}, False))
            runner.close()

        start_and_call()  # the forkserver's first fork
        confined, unconfined = best(start_and_call, 9), best(start_and_call_unconfined, 9)
        print(f"runner start + one call + close: {1000 * confined:.1f} ms as graded, {1000 * unconfined:.1f} ms "
              f"with COURSE_CONFINE=0 (best of 9 each; confinement: {1000 * (confined - unconfined):+.1f} ms)")
        runner = Runner(source, seed=0, device="cpu", limits=Limits(timeout=30))
        runner.ready()
        calls = [best(lambda: runner.request(("call", "f", (1,), {}, False)), 50)]
        resets = [best(lambda: runner.reset(1), 20)]
        runner.close()
        print(f"one call round trip: {1000 * statistics.median(calls):.2f} ms; reset between checks: "
              f"{1000 * statistics.median(resets):.2f} ms")
    for exercise in graders.exercises():
        reference = importlib.import_module(f"solutions.ch{exercise.chapter}")
        graders.check_namespace(exercise.id, vars(reference), device="cpu", instructor=True)  # warm
        seconds = best(lambda: graders.check_namespace(exercise.id, vars(reference), device="cpu", instructor=True), 3)
        print(f"{exercise.id:22s} {len(exercise.checks):2d} checks: {seconds:5.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
