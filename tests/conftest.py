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


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.full``: too slow for `make test`'s 10-minute budget, run by CI's full run
    (``COURSE_EVERY_CHECK=1``, as .ci/run sets); skipped here with that reason shown, never silently."""
    if os.environ.get("COURSE_EVERY_CHECK") == "1":
        return
    skip = pytest.mark.skip(reason="a full-run test (CI: COURSE_EVERY_CHECK=1 make test, as .ci/run does)")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)
