"""``make lab``: build the student edition, then open JupyterLab on it.

The student edition is nbgrader's release of each chapter (solutions replaced by stubs, hidden tests
removed), written to ``workspace/<chapter>/``. A chapter already in the workspace is never touched,
so a student's work is never overwritten; running this again only adds chapters that are new.
To get a fresh copy of a chapter, rename or delete its folder in the workspace.

    python -m coursekit.lab                  # student edition in workspace/, then JupyterLab
    python -m coursekit.lab --instructor     # JupyterLab on course/ itself (solutions and hidden tests)
    python -m coursekit.lab --build-only     # only (re)build what is missing in workspace/
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "course"
WORKSPACE = ROOT / "workspace"


def course_chapters() -> list[str]:
    return sorted(p.name for p in COURSE.iterdir() if p.is_dir() and p.name[:2].isdigit() and p.name[2] == "_")


def _tool_env() -> dict[str, str]:
    # nbgrader runs the `alembic` command by name: this environment's bin/ must come first on PATH.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def release_chapters(chapters: list[str], destination: Path) -> None:
    """nbgrader generate_assignment for ``chapters``, in a scratch course, copied to ``destination``.

    One process releases every chapter through nbgrader's API (`nbgrader generate_assignment` once per
    chapter would pay nbgrader's start-up, about 2.5 s, for each one)."""
    if not chapters:
        return
    with tempfile.TemporaryDirectory(prefix="course-release-") as scratch:
        scratch_dir = Path(scratch)
        shutil.copy(ROOT / "nbgrader_config.py", scratch_dir / "nbgrader_config.py")
        for chapter in chapters:
            shutil.copytree(COURSE / chapter, scratch_dir / "course" / chapter,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        command = f"from coursekit.lab import _generate_here; _generate_here({chapters!r})"
        result = subprocess.run([sys.executable, "-c", command], cwd=scratch_dir, capture_output=True, text=True,
                                env=_tool_env())
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment failed:\n{result.stdout}\n{result.stderr}")
        for chapter in chapters:
            shutil.copytree(scratch_dir / "release" / chapter, destination / chapter)


def _generate_here(chapters: list[str]) -> None:
    """In a scratch course (the current directory): nbgrader generate_assignment for each chapter, with the
    course's nbgrader_config.py, in this one process. Exits 1 with nbgrader's log when one fails."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config()
    path = os.path.abspath("nbgrader_config.py")
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), {"c": config, "get_config": lambda: config, "__file__": path})
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    for chapter in chapters:
        result = api.generate_assignment(chapter, force=True)
        if not result["success"]:
            print(f"{chapter}:\n{result.get('log', '')}\n{result.get('error', '')}", file=sys.stderr)
            sys.exit(1)


def build_student_edition(workspace: Path = WORKSPACE) -> tuple[list[str], list[str]]:
    """Add each chapter missing from ``workspace``; returns (added, kept as they were)."""
    workspace.mkdir(parents=True, exist_ok=True)
    chapters = course_chapters()
    kept = [c for c in chapters if (workspace / c).exists()]
    added = [c for c in chapters if c not in kept]
    if added:
        release_chapters(added, workspace)
    return added, kept


def lab_command(root: Path, *, port: int | None = None, open_browser: bool = True, token: str | None = None) -> list[str]:
    """The JupyterLab command ``make lab`` runs (the tests start the server with this very command)."""
    command = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root}"]
    if port is not None:
        command += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not open_browser:
        command.append("--no-browser")
    if token is not None:
        command.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and CI machines often run as root; Jupyter refuses otherwise
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.lab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--instructor", action="store_true", help="open course/ (solutions, hidden tests) instead")
    parser.add_argument("--build-only", action="store_true", help="build the student edition, do not start JupyterLab")
    parser.add_argument("--workspace", type=Path, default=WORKSPACE)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)

    if args.instructor:
        root = COURSE
        print(f"Instructor view: {COURSE} (solutions and hidden tests included)")
    else:
        root = args.workspace
        added, kept = build_student_edition(root)
        for chapter in added:
            print(f"added   {root / chapter}")
        for chapter in kept:
            print(f"kept    {root / chapter} (already there: your work is never overwritten)")
        if kept:
            print("To start a chapter afresh, rename or delete its folder in the workspace and run `make lab` again.")
        if args.build_only:
            return 0
    command = lab_command(root, port=args.port, open_browser=not args.no_browser)
    os.execv(command[0], command)  # hand the terminal to JupyterLab (Ctrl-C stops it)
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
