"""``python -m graders``: the grader command line (the contract is in EXERCISES.md).

Exit status: 0 every check passed; 1 a check did not pass (failed, the student's code raised, timed out,
crashed or lacks a name, or the grader broke); 2 the command was misused (unknown exercise, unreadable
path, cuda asked for but missing). With ``--json`` stdout holds exactly one JSON object, whatever the
student's code prints: it runs in another process whose output is captured.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from pathlib import Path

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    from graders.isolation import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_TIMEOUT_S

    parser = argparse.ArgumentParser(prog="python -m graders", description="Check course exercises.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list every exercise with its chapter and the names it expects")
    run = commands.add_parser("check", help="check a student's Python file against one exercise")
    run.add_argument("exercise_id")
    run.add_argument("path")
    run.add_argument("--device", choices=["cpu", "cuda"], default=None,
                     help="default: $COURSE_DEVICE, else cuda when available, else cpu")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                     help=f"seconds each call of student code may take (default {DEFAULT_TIMEOUT_S:g})")
    run.add_argument("--memory-limit", type=int, default=None, metavar="MIB",
                     help="memory the student's code may use beyond its start, in MiB (default "
                          f"$COURSE_MEMORY_LIMIT_MB or {DEFAULT_MEMORY_LIMIT_MB}; 0: no cap)")
    run.add_argument("--instructor", action="store_true",
                     help="allow the answer to import the course's reference solutions (the instructor's own files)")
    run.add_argument("--require-confinement", action="store_true",
                     help="refuse to run the answer unless the operating system can confine it (Linux with Landlock)")
    return parser


def _usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the options of a ``check`` command (told at once, without importing torch)."""
    if args.timeout is not None and args.timeout <= 0:
        return "--timeout must be a positive number of seconds"
    if args.memory_limit is not None and args.memory_limit < 0:
        return "--memory-limit must be 0 (no cap) or a positive number of MiB"
    return None


def _worth_a_runner(args: argparse.Namespace) -> bool:
    """True unless the path cannot be read, the exercise does not exist or cuda is asked for without a GPU
    (check_file then says why): only then is the process that runs student code started early. Each exercise lives in graders/chNN_<slug>/<id>.py
    (tests/test_structure.py), so an unknown id has no file."""
    if not os.access(args.path, os.R_OK) or os.path.isdir(args.path) or args.exercise_id.startswith("_"):
        return False
    root = Path(__file__).resolve().parent
    if not any(root.glob(f"ch[0-9][0-9]_*/{glob.escape(args.exercise_id)}.py")):
        return False
    if (args.device or os.environ.get("COURSE_DEVICE")) == "cuda":  # refused at once where there is no GPU
        import torch

        return torch.cuda.is_available()
    return True


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from graders.isolation import warm_up

    if args.command == "check":
        error = _usage_error(args)
        if error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
        if args.require_confinement:
            from graders import confine
            from graders.isolation import REQUIRE_CONFINEMENT_ENV

            found = confine.support()
            if not found.available:
                print(f"error: --require-confinement: student code cannot be confined here ({found.reason})",
                      file=sys.stderr)
                return EXIT_USAGE
            os.environ[REQUIRE_CONFINEMENT_ENV] = "1"  # every runner refuses to start unconfined too
        if _worth_a_runner(args):
            warm_up(args.exercise_id)  # the runners' forkserver, started before this process computes anything
    from graders import check_file, exercises
    from graders.outcomes import UsageError

    if args.command == "list":
        rows = [(e.id, e.chapter, ", ".join(e.names)) for e in exercises()]
        width = max(len(r[0]) for r in rows)
        print(f"{'exercise'.ljust(width)}  chapter     names")
        for exercise_id, chapter, names in rows:
            print(f"{exercise_id.ljust(width)}  {chapter.ljust(10)}  {names}")
        return EXIT_PASSED
    try:
        report = check_file(args.exercise_id, args.path, device=args.device, timeout=args.timeout,
                            instructor=args.instructor, memory_mb=args.memory_limit)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from graders.isolation import unconfined_reason

    unconfined = unconfined_reason()
    if args.json:
        print(json.dumps({**report.as_json(), "confined": unconfined is None}, indent=2))
    else:
        print(report.as_text())
        print(f"{report.exercise} on {report.device}: {report.score}/{report.max_score} points")
        if unconfined:
            print(f"note: the answer ran without the operating system's confinement ({unconfined})")
    return EXIT_PASSED if report.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
