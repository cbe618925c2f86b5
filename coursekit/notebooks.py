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

``python -m coursekit.notebooks reproduce [CHAPTER ...] [--numerics NAME ...] [--layout nbclient|nbval]
[--start-method spawn]`` executes the committed notebooks again under conditions that change the numerics
of a CPU (another instruction set for ATen, oneDNN and MKL, another thread count), in another process
layout, and with processes started another way, and lists every cell whose output then differs from the
committed one as nbval compares it (nbval itself in its layout; the same sanitizers and tags in nbclient's).
A committed output must reproduce under all of them: a newcomer's machine is one of them
(tests/test_notebook_numerics.py runs them).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "course_src"
COURSE = ROOT / "course"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
HEADER = re.compile(r"^# %%(?P<rest>.*)$")
SANITIZERS = ROOT / "tests" / "nbval_sanitize.cfg"
IGNORE_OUTPUT = "nbval-ignore-output"

# Conditions under which a committed output must still reproduce. Each names the switch of every library that
# picks a CPU code path on its own: ATen's vectorised kernels (ATEN_CPU_CAPABILITY), oneDNN's
# (ONEDNN_MAX_CPU_ISA) and MKL's BLAS (MKL_CBWR), so that one machine runs the paths of another CPU; and the
# intra-op thread count, which splits reductions differently. An AVX-512/AMX Xeon, an AVX2 laptop and a
# one-core container differ in exactly these ways (issue 31: a committed 2.69e-02 read 3.07e-02 on a Xeon).
NUMERICS: dict[str, dict[str, str]] = {
    "native": {},
    "default": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"},
    "1-thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "2-threads": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
}
LAYOUTS = ("nbclient", "nbval")


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
    # No per-cell timestamps in the committed notebook: they change at every build and say nothing.
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(notebook_path(chapter).parent)}}).execute()
    return time.perf_counter() - start


def numerics_env(names: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The environment variables of the named :data:`NUMERICS` conditions, merged (later names win)."""
    env: dict[str, str] = {}
    for name in names:
        if name not in NUMERICS:
            raise ValueError(f"unknown numerics {name!r}; expected one of {', '.join(NUMERICS)}")
        env.update(NUMERICS[name])
    return env


def unavailable(name: str) -> str | None:
    """Why the :data:`NUMERICS` condition ``name`` cannot run on this machine, or None when it can.

    ``avx2`` needs an x86-64 CPU with AVX2: ATen trusts ``ATEN_CPU_CAPABILITY`` without asking the CPU, so
    elsewhere the kernel would die of an illegal instruction (or, on ARM, warn on stderr at ``import torch``)."""
    if name != "avx2":
        return None
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in ("AVX2", "AVX512"):
        return f"this CPU runs ATen's {capability} kernels, not AVX2"
    return None


def _sanitize_patterns() -> list[tuple[str, str]]:
    from nbval.plugin import get_sanitize_patterns

    return get_sanitize_patterns(SANITIZERS.read_text())


def _comparable(outputs: list, patterns: list[tuple[str, str]]) -> dict[str, list]:
    """A cell's outputs as nbval compares them: streams merged per name, each output's keys flattened (the
    mime types of ``data`` included), what nbval skips left out (metadata, images, ...), every string
    sanitized with the course's patterns."""
    import copy

    from nbval.plugin import coalesce_streams, transform_streams_for_comparison

    skip = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
            "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}

    def clean(value):
        if not isinstance(value, str):
            return value
        for regex, replace in patterns:
            value = re.sub(regex, replace, value)
        return value

    flat: dict[str, list] = {}
    for output in transform_streams_for_comparison(coalesce_streams(copy.deepcopy(list(outputs)))):
        for key, value in output.items():
            if key in skip:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in skip:
                        flat.setdefault(mime, []).append(clean(data))
            else:
                flat.setdefault(key, []).append(clean(value))
    return flat


@dataclass
class CellDifference:
    """One code cell whose output under some conditions is not the committed one (nbval would fail it)."""

    chapter: str
    cell: int  # nbval's number: the code cells counted from 0
    cell_id: str
    diff: str

    def __str__(self) -> str:
        return f"{self.chapter} cell {self.cell} ({self.cell_id}):\n{self.diff}"


def _graded(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("grade"))


def compare_outputs(committed: nbformat.NotebookNode, executed: nbformat.NotebookNode,
                    chapter: str = "", checks: bool = True) -> list[CellDifference]:
    """Every code cell whose outputs differ as nbval compares them (cells tagged nbval-ignore-output aside, and
    the graded check cells too with ``checks=False``)."""
    patterns = _sanitize_patterns()
    code = [(c, e) for c, e in zip(committed.cells, executed.cells) if c.cell_type == "code"]
    differences = []
    for number, (want, got) in enumerate(code):
        if IGNORE_OUTPUT in want.metadata.get("tags", []) or not checks and _graded(want):
            continue
        a, b = _comparable(want.outputs, patterns), _comparable(got.outputs, patterns)
        if a != b:
            lines = lambda flat: [f"{k}: {line}" for k in sorted(flat) for v in flat[k] for line in str(v).splitlines()]
            diff = "\n".join(difflib.unified_diff(lines(a), lines(b), "committed", "executed", n=0, lineterm=""))
            differences.append(CellDifference(chapter, number, want.get("id", "?"), diff))
    return differences


def reproduce(chapter: str, numerics: list[str] | tuple[str, ...] = (), layout: str = "nbclient",
              timeout: int = 300, start_method: str | None = None, checks: bool = True) -> list[CellDifference]:
    """Execute the committed notebook of ``chapter`` again under the named :data:`NUMERICS` conditions and
    ``layout`` (nbclient, as ``build`` executes it; or nbval, as CI compares it), and return the cells whose
    outputs differ from the committed ones. The kernel inherits the conditions' variables; ``start_method``
    (``spawn``: as macOS and Windows start processes) becomes the notebook's ``COURSE_START_METHOD``.
    ``checks=False`` (nbclient's layout only) runs every cell but the graded check cells, and compares the rest."""
    return reproduce_notebook(notebook_path(chapter), numerics, layout, timeout, label=chapter,
                              start_method=start_method, checks=checks)


def reproduce_notebook(path: Path, numerics: list[str] | tuple[str, ...] = (), layout: str = "nbclient",
                       timeout: int = 300, label: str = "", start_method: str | None = None,
                       checks: bool = True) -> list[CellDifference]:
    """:func:`reproduce` for the notebook at ``path`` (executed in its own folder)."""
    for name in numerics:
        reason = unavailable(name)
        if reason:
            raise ValueError(f"numerics {name} cannot run here: {reason}")
    path = Path(path).resolve()
    label = label or path.stem
    committed = nbformat.read(path, as_version=4)
    # As `make notebooks` built it: the instructor's edition (answers import the reference), offline data.
    env = {"COURSE_INSTRUCTOR": "1", "COURSE_OFFLINE": "1", **os.environ, **numerics_env(numerics)}
    if start_method:
        env["COURSE_START_METHOD"] = start_method
    if layout == "nbclient":
        from nbclient import NotebookClient

        executed = nbformat.from_dict(committed)
        if not checks:
            for cell in executed.cells:
                if _graded(cell):
                    cell.source = ""        # runs nothing: a check cell only calls check(...)
        NotebookClient(executed, timeout=timeout, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute(env=env)
        return compare_outputs(committed, executed, label, checks=checks)
    if layout != "nbval":
        raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    if not checks:
        raise ValueError("nbval runs every cell: checks=False is for nbclient's layout")
    # nbval compares as it runs (its own comparison, the course's sanitizers); its report is read back.
    with tempfile.TemporaryDirectory(prefix=f"course-{label[:2]}-nbval-") as scratch:
        report = Path(scratch) / "report.xml"
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval", str(path), "--nbval-sanitize-with", str(SANITIZERS),
             "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-vv", f"--junitxml={report}",
             f"--nbval-cell-timeout={timeout}", f"--rootdir={path.parent}"],
            cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout * 4)
        if not report.exists():
            raise RuntimeError(f"nbval did not run {label}: {run.stdout[-2000:]}{run.stderr[-2000:]}")
        import xml.etree.ElementTree as ET

        ids = [c.get("id", "?") for c in committed.cells if c.cell_type == "code"]
        differences = []
        for case in ET.parse(report).getroot().iter("testcase"):
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            if failure is None:
                continue
            number = int(re.search(r"Cell (\d+)", case.get("name", "")).group(1))
            text = re.sub(r"(?:\x1b|#x1B)\[[0-9;]*m", "", failure.text or failure.get("message", ""))
            text = text.split("Traceback:", 1)[-1].strip()          # nbval repeats the cell's source first
            # 8000: enough for a cell's whole output (a failed job's error lines come last), short enough to read
            differences.append(CellDifference(label, number, ids[number], text[-8000:]))
        return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.notebooks")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("build", help="build (and execute) chapter notebooks from course_src/")
    run.add_argument("chapters", nargs="*", help="default: every chapter")
    run.add_argument("--no-execute", action="store_true")
    again = sub.add_parser("reproduce", help="execute committed notebooks under other numerics; list differing cells")
    again.add_argument("chapters", nargs="*", help="default: every chapter")
    again.add_argument("--numerics", nargs="*", default=[], choices=list(NUMERICS),
                       help="conditions applied together (default: none, this machine's own)")
    again.add_argument("--layout", choices=LAYOUTS, default="nbclient")
    again.add_argument("--start-method", choices=("fork", "spawn", "forkserver"),
                       help="how the notebook starts processes (COURSE_START_METHOD); spawn as on macOS and Windows")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        failed = 0
        for chapter in args.chapters or chapters():
            start = time.perf_counter()
            differences = reproduce(chapter, args.numerics, args.layout, start_method=args.start_method)
            failed += len(differences)
            print(f"{chapter} [{args.layout}, {'+'.join(args.numerics) or 'native'}]: "
                  f"{len(differences)} cell(s) differ, {time.perf_counter() - start:.1f} s", flush=True)
            for difference in differences:
                print(textwrap.indent(str(difference), "    "), flush=True)
        return 1 if failed else 0
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
