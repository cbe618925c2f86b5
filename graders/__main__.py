"""``python -m graders``: the grader command line (the contract is in EXERCISES.md).

Exit status: 0 every check passed; 1 a check failed, or the student code raised, timed out or lacks
a name; 2 the command was misused (unknown exercise, unreadable path, cuda asked for but missing).
"""

from __future__ import annotations

import argparse
import json
import sys

from graders import check_file, exercises
from graders.core import DEFAULT_TIMEOUT_S, UsageError

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        rows = [(e.id, e.chapter, ", ".join(e.names)) for e in exercises()]
        width = max(len(r[0]) for r in rows)
        print(f"{'exercise'.ljust(width)}  chapter     names")
        for exercise_id, chapter, names in rows:
            print(f"{exercise_id.ljust(width)}  {chapter.ljust(10)}  {names}")
        return EXIT_PASSED
    if args.timeout is not None and args.timeout <= 0:
        print("error: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = check_file(args.exercise_id, args.path, device=args.device, timeout=args.timeout)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(report.as_text())
        print(f"{report.exercise} on {report.device}: {report.score}/{report.max_score} points")
    return EXIT_PASSED if report.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
