"""Chapter notebooks: built from readable sources, with their nbgrader metadata, then executed.

A chapter is written as ``course_src/NN_slug.py`` in "percent" form: cells start at ``# %%`` lines,
and markdown cells have every line commented. A cell's header line carries its role::

    # %% [markdown]                                  a markdown cell
    # %%                                             a code cell
    # %% tags=nbval-ignore-output                    output varies (timings): nbval does not compare it
    # %% nbgrader=solution id=sliding_window         the student's answer cell (### BEGIN/END SOLUTION)
    # %% nbgrader=test id=sliding_window_basics points=2    a graded check cell
    # %% [markdown] nbgrader=readonly id=ex_sliding  a locked instruction cell

``python -m coursekit.notebooks build [CHAPTER ...]`` writes ``course/NN_slug/NN_slug.ipynb`` and
executes it so its outputs are committed (nbval compares against them); ``--no-execute`` skips that.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "course_src"
COURSE = ROOT / "course"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
HEADER = re.compile(r"^# %%(?P<rest>.*)$")


def chapters() -> list[str]:
    return sorted(p.stem for p in SOURCES.glob("[0-9][0-9]_*.py"))


def notebook_path(chapter: str) -> Path:
    return COURSE / chapter / f"{chapter}.ipynb"


def _parse_header(rest: str) -> tuple[bool, dict[str, str]]:
    markdown = "[markdown]" in rest
    options = dict(token.split("=", 1) for token in rest.replace("[markdown]", "").split() if "=" in token)
    return markdown, options


def _nbgrader_metadata(options: dict[str, str], markdown: bool) -> dict | None:
    role = options.get("nbgrader")
    if role is None:
        return None
    if "id" not in options:
        raise ValueError(f"an nbgrader cell needs id=...: {options}")
    meta = {"grade": False, "grade_id": options["id"], "locked": False, "schema_version": 3,
            "solution": False, "task": False}
    if role == "solution":
        meta["solution"] = True
    elif role == "test":
        meta.update(grade=True, locked=True, points=int(options["points"]))
    elif role == "readonly":
        meta["locked"] = True
    else:
        raise ValueError(f"unknown nbgrader role {role!r}")
    return meta


def parse_source(text: str) -> list[nbformat.NotebookNode]:
    """Split a percent-format chapter source into notebook cells (without outputs)."""
    cells: list[nbformat.NotebookNode] = []
    header, body = None, []

    def flush():
        if header is None:
            return
        markdown, options = _parse_header(header)
        while body and not body[-1].strip():
            body.pop()
        if markdown:
            lines = [re.sub(r"^# ?", "", line) for line in body]
            cell = nbformat.v4.new_markdown_cell("\n".join(lines))
        else:
            cell = nbformat.v4.new_code_cell("\n".join(body))
        meta = _nbgrader_metadata(options, markdown)
        if meta:
            cell.metadata["nbgrader"] = meta
        if "tags" in options:
            cell.metadata["tags"] = options["tags"].split(",")
        cell.id = options.get("id") or f"cell-{len(cells):03d}"
        cells.append(cell)

    for line in text.splitlines():
        match = HEADER.match(line)
        if match:
            flush()
            header, body = match.group("rest"), []
        elif header is not None:
            body.append(line)
    flush()
    return cells


def build(chapter: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = parse_source((SOURCES / f"{chapter}.py").read_text())
    nb.metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    return nb


def execute(nb: nbformat.NotebookNode, chapter: str, timeout: int = 300) -> float:
    from nbclient import NotebookClient

    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook_path(chapter).parent)}}).execute()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.notebooks")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("build", help="build (and execute) chapter notebooks from course_src/")
    run.add_argument("chapters", nargs="*", help="default: every chapter")
    run.add_argument("--no-execute", action="store_true")
    args = parser.parse_args(argv)
    for chapter in args.chapters or chapters():
        nb = build(chapter)
        path = notebook_path(chapter)
        path.parent.mkdir(parents=True, exist_ok=True)
        seconds = 0.0 if args.no_execute else execute(nb, chapter)
        nbformat.write(nb, path)
        print(f"{path.relative_to(ROOT)}: {len(nb.cells)} cells" + ("" if args.no_execute else f", executed in {seconds:.1f} s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
