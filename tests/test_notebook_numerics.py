"""Every committed notebook output reproduces on numerics other than the ones it was built on (issue 31), and
nbval compares every chapter as CI does.

A committed output is compared by nbval with a new run on the learner's machine. Its digits are only worth
committing if every machine prints them: another CPU's vector width (ATen's AVX-512, AVX2 or scalar kernels),
another MKL or oneDNN path, another thread count, another process layout (nbval's kernel or nbclient's) all
change float32 rounding, and a training run can grow that into a different second digit. A newcomer's Xeon
failed 13 cells that the machine which built them reproduced.

So each chapter is executed again under numerics that differ from the build's, and every cell nbval would
fail is listed with its diff (``coursekit.notebooks.reproduce``):

- ``make test``: nbval, with processes started by a forkserver that has imported torch, on AVX2 kernels with two
  threads (another CPU's vector width, another thread count and nbval's layout at once). A forkserver hands a
  process what it runs pickled, as spawn does on macOS and Windows, so a class defined in the notebook fails in a
  DataLoader worker or a rank there too; but its processes start without importing torch again: chapter 04 took
  44 s alone instead of 75 s under spawn (55 CPU-seconds instead of 106) on 2026-12-04. One run per chapter: a
  second one, nbclient on the scalar kernels, summed 189 s of the two workers' time (about 1.5 of `make test`'s
  18 minutes) on a slow machine of this kind on 2026-12-02, and CI's run below has the scalar kernels under nbval;
- CI's full run adds nbclient on AVX2, nbval under spawn itself on ATen's scalar kernels, MKL's compatible path
  and one thread, nbval under spawn on this machine's own numerics, and nbclient as the build ran (that a rebuild
  reproduces itself).

A condition this CPU cannot run (AVX2 on an ARM laptop) is left out of its run, and the run goes on with the
rest. Each chapter is one class, so ``--dist loadscope`` spreads the chapters over the workers; nbval runs in
a process of its own for each chapter (``pytest --nbval``), as part of this one session.
"""

from __future__ import annotations

import os

import nbformat
import pytest

from coursekit import notebooks

CHAPTERS = notebooks.chapters()
# (layout, numerics, start method, whether the graded check cells run)
MAKE_TEST = [("nbval", ("avx2", "2-threads"), "forkserver", True)]
FULL_RUN = [("nbclient", ("avx2",), None, True), ("nbval", ("default", "1-thread"), "spawn", True),
            ("nbval", ("native",), "spawn", True), ("nbclient", ("native",), None, True)]


def _condition(layout, numerics, start_method, checks, marks=()):
    name = (f"{layout}-{'+'.join(numerics)}" + (f"-{start_method}" if start_method else "")
            + ("" if checks else "-no-checks"))
    return pytest.param(layout, numerics, start_method, checks, id=name, marks=marks)


CONDITIONS = ([_condition(*c) for c in MAKE_TEST] + [_condition(*c, marks=pytest.mark.full) for c in FULL_RUN])


def runnable(numerics) -> tuple[str, ...]:
    """The conditions of ``numerics`` that this machine can run (the others are left out, not the whole run)."""
    return tuple(name for name in numerics if notebooks.unavailable(name) is None)


class _ChapterNumerics:
    chapter: str

    @pytest.mark.slow
    @pytest.mark.parametrize("layout, numerics, start_method, checks", CONDITIONS)
    def test_committed_outputs_reproduce(self, layout, numerics, start_method, checks):
        numerics = runnable(numerics)
        differences = notebooks.reproduce(self.chapter, numerics, layout, start_method=start_method, checks=checks)
        assert not differences, (
            f"{len(differences)} cell(s) of {self.chapter} print other outputs under {layout}, "
            f"{' + '.join(numerics) or 'native'} (print only the digits every machine keeps, or the claim they "
            "support: coursekit.claims):\n\n" + "\n\n".join(map(str, differences)))


for _chapter in CHAPTERS:
    _name = f"TestNumerics_{_chapter}"
    globals()[_name] = type(_name, (_ChapterNumerics,), {"chapter": _chapter, "__module__": __name__})


# The machinery itself, on a notebook made to depend on the numerics.
PROBE_CELLS = [
    "import torch\nprint('ATen kernels:', torch.backends.cpu.get_cpu_capability())",
    "print('threads:', torch.get_num_threads())",
    "print('object at', hex(id(object())))",           # sanitized: an address differs in every run
    "print('3 / 7 =', round(3 / 7, 4))",               # the same everywhere
    "print('graded cell, threads:', torch.get_num_threads())",   # made an nbgrader check cell below
]
GRADED = 4


@pytest.fixture
def probe(tmp_path):
    """A notebook whose first two cells print the numerics they ran under, executed natively (on three threads, so
    that one thread differs even on a one-core machine) and saved."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in PROBE_CELLS]
    nb.cells[GRADED].metadata["nbgrader"] = {"grade": True, "grade_id": "probe_check", "points": 1, "locked": True,
                                             "solution": False, "schema_version": 3, "task": False}
    nb.metadata = {"kernelspec": dict(notebooks.KERNEL)}
    path = tmp_path / "probe.ipynb"
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=120, kernel_name="python3").execute(env={**os.environ, "OMP_NUM_THREADS": "3"})
    nbformat.write(nb, path)
    return path, nb


@pytest.mark.slow
@pytest.mark.parametrize("layout", notebooks.LAYOUTS)
def test_reproduce_names_each_cell_that_depends_on_the_numerics_and_no_other(probe, layout):
    path, built = probe
    native = built.cells[0].outputs[0].text
    if "DEFAULT" in native:
        pytest.skip("this machine's own kernels are ATen's scalar ones: the probe cannot tell them apart")
    differences = notebooks.reproduce_notebook(path, ("default", "1-thread"), layout)
    assert [d.cell for d in differences] == [0, 1, GRADED], "\n".join(map(str, differences))
    assert "DEFAULT" in differences[0].diff and "threads: 1" in differences[1].diff


@pytest.mark.slow
def test_without_checks_the_graded_cells_are_neither_run_nor_compared(probe):
    path, _ = probe
    differences = notebooks.reproduce_notebook(path, ("1-thread",), "nbclient", checks=False)
    assert [d.cell for d in differences] == [1], "\n".join(map(str, differences))
    with pytest.raises(ValueError, match="nbclient"):
        notebooks.reproduce_notebook(path, (), "nbval", checks=False)


def test_compare_outputs_is_nbvals_comparison():
    """Streams are merged before comparing (a cell may print in several chunks), sanitizers apply, images and
    cells tagged nbval-ignore-output are not compared, and a changed digit is found with its diff."""
    def cell(outputs, tags=()):
        c = nbformat.v4.new_code_cell("x")
        c.outputs = [nbformat.from_dict(o) for o in outputs]
        if tags:
            c.metadata["tags"] = list(tags)
        return c

    def stream(text):
        return {"output_type": "stream", "name": "stdout", "text": text}

    picture = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "AAAA", "text/plain": "<Figure>"}}
    committed, executed = nbformat.v4.new_notebook(), nbformat.v4.new_notebook()
    committed.cells = [cell([stream("loss 0.0035\n")]), cell([stream("a\nb\n")]), cell([stream("at 0x7f00\n")]),
                       cell([picture]), cell([stream("took 3.1 s\n")], tags=[notebooks.IGNORE_OUTPUT])]
    executed.cells = [cell([stream("loss 0.0036\n")]), cell([stream("a\n"), stream("b\n")]), cell([stream("at 0x5e11\n")]),
                      cell([{**picture, "data": {"image/png": "BBBB", "text/plain": "<Figure>"}}]),
                      cell([stream("took 9.9 s\n")], tags=[notebooks.IGNORE_OUTPUT])]
    differences = notebooks.compare_outputs(committed, executed, "probe")
    assert [d.cell for d in differences] == [0]
    assert "-stdout: loss 0.0035" in differences[0].diff and "+stdout: loss 0.0036" in differences[0].diff


def test_numerics_that_this_machine_cannot_run_are_refused_with_the_reason(monkeypatch):
    import torch

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    assert "not AVX2" in notebooks.unavailable("avx2")
    assert notebooks.unavailable("default") is None and notebooks.unavailable("1-thread") is None
    with pytest.raises(ValueError, match="cannot run here"):
        notebooks.reproduce("01_tensors", ("avx2",))
    with pytest.raises(ValueError, match="unknown numerics"):
        notebooks.numerics_env(["avx3"])


@pytest.mark.parametrize("printed, masked", [
    ("chapter 01_tensors | python 3.11.7 | torch 2.14.1", "chapter 01_tensors | python 3.11.x | torch 2.14.1"),
    ("versions: python 3.11.9, torch 2.14.1+cu130", "versions: python 3.11.x, torch 2.14.1"),
    ("python 3.12.1", "python 3.12.x"),           # the minor version stays: the lock is for 3.11
    ("took 3.4 ms per step", "took TIME per step"),
    ("object at 0x7f3a2c", "object at 0xADDRESS"),
])
def test_sanitizers_mask_what_machines_may_print_differently(printed, masked):
    """tests/nbval_sanitize.cfg: a Python patch release, a CUDA build suffix, a timing, an address."""
    import re

    text = printed
    for regex, replace in notebooks._sanitize_patterns():
        text = re.sub(regex, replace, text)
    assert text == masked


@pytest.mark.parametrize("printed", [
    "final loss 0.0036 | grad norm 3.07e-02",     # what a cell measures is compared as printed
    "test accuracy 0.949", "running_var 9.224", "5192 weights",
])
def test_sanitizers_leave_what_a_cell_teaches(printed):
    import re

    text = printed
    for regex, replace in notebooks._sanitize_patterns():
        text = re.sub(regex, replace, text)
    assert text == printed
