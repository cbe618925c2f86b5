"""Shared test fixtures: the device every grader test runs on, and the student-submission cases.

``device`` runs a test on cpu and on cuda. The cuda case is skipped, with the reason shown, where no
GPU exists; with ``COURSE_DEVICE=cuda`` a missing GPU is an error instead, so a GPU run can never
pass by skipping.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning, module="jupyter_client")
# Tests never download: chapter 04's notebook (run by nbgrader and JupyterLab tests) then uses its offline data.
os.environ.setdefault("COURSE_OFFLINE", "1")


def _cuda_param():
    marks = [pytest.mark.cuda]
    if not torch.cuda.is_available() and os.environ.get("COURSE_DEVICE") != "cuda":
        marks.append(pytest.mark.skip(reason="no CUDA GPU on this machine (set COURSE_DEVICE=cuda on a GPU machine)"))
    return pytest.param("cuda", marks=marks, id="cuda")


@pytest.fixture(params=[pytest.param("cpu", id="cpu"), _cuda_param()])
def device(request) -> str:
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.fail("COURSE_DEVICE=cuda, but torch.cuda.is_available() is False")
    return request.param


# The longest units of work first. `make test` hands whole scopes (a class, else a module) to its xdist workers
# in collection order (``--no-loadscope-reorder``; xdist's own order, by number of tests, counts the skipped cuda
# cases and put a 110 s module among the last): longest first, no worker is left running one long unit alone at
# the end. Seconds summed by scope in `make test` on a 2-core AMD EPYC, 2026-12-03 (1273 s in all); a scope not
# listed takes under 20 s and keeps its place after these. Only the order depends on them.
SCOPE_SECONDS = {
    "tests/test_judge_server.py": 110, "tests/test_isolation.py": 91, "tests/test_cli.py": 85,
    "tests/test_notebook_numerics.py::TestNumerics_04_data": 82,
    "tests/test_submissions.py::TestExercise_average_gradients": 65,
    "tests/test_submissions.py::TestExercise_ddp_accumulation": 55,
    "tests/test_notebook_numerics.py::TestNumerics_08_ddp": 51,
    "tests/test_submissions.py::TestExercise_range_stream": 40,
    "tests/test_notebook_numerics.py::TestNumerics_03_modules": 34,
    "tests/test_nbgrader_roundtrip.py::TestRoundTrip_01_tensors": 31,
    "tests/test_notebook_numerics.py": 28, "tests/test_classgrade.py": 27,
    "tests/test_notebook_numerics.py::TestNumerics_02_autograd": 25,
    "tests/test_notebook_numerics.py::TestNumerics_07_checkpointing": 23, "tests/test_notebooks.py": 23,
    "tests/test_notebook_numerics.py::TestNumerics_06_amp": 22,
    "tests/test_notebook_numerics.py::TestNumerics_05_devices": 21,
    "tests/test_nbgrader_roundtrip.py::TestRoundTrip_08_ddp": 20,
}


def scope_of(nodeid: str) -> str:
    """The unit ``--dist loadscope`` keeps on one worker: ``file::Class`` for a method, else the file."""
    parts = nodeid.split("::")
    return "::".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_collection_modifyitems(config, items):
    """The longest scopes first (``SCOPE_SECONDS``). Then ``@pytest.mark.full``: too slow for `make test`'s
    10-minute budget, run by CI's full run (``COURSE_EVERY_CHECK=1``, as .ci/run sets); skipped here with that
    reason shown, never silently."""
    items.sort(key=lambda item: -SCOPE_SECONDS.get(scope_of(item.nodeid), 0))  # stable: the rest keep their order
    if os.environ.get("COURSE_EVERY_CHECK") == "1":
        return
    skip = pytest.mark.skip(reason="a full-run test (CI: COURSE_EVERY_CHECK=1 make test, as .ci/run does)")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)
