"""Helpers every chapter notebook shares: the opening cell, seeding, device choice, determinism, progress bars.

Every chapter opens the same way::

    from coursekit import start_chapter
    device = start_chapter("01_tensors")

Plotting helpers live in :mod:`coursekit.plots`.

``COURSE_START_METHOD`` (``fork``, ``spawn`` or ``forkserver``), when set, is the start method for every process
a notebook starts (DataLoader workers, ``multiprocessing``): ``make test`` sets ``spawn`` so that Linux runs
the notebooks the way macOS and Windows do. Unset, the platform's default stays.
"""

from __future__ import annotations

import os
import random
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# torch and numpy are imported where they are used: nbgrader imports coursekit.autograde for every autograde
# (and make grade's processes import coursekit), and importing torch there cost 1.5 s each time.

DEFAULT_SEED = 0
START_METHOD_ENV = "COURSE_START_METHOD"


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Seed Python, NumPy and torch (every device) so a notebook prints the same numbers each run."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(requested: str | None = None) -> torch.device:
    """``requested``, else ``$COURSE_DEVICE``, else cuda when available, else cpu (as the graders do)."""
    import torch

    name = requested or os.environ.get("COURSE_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def under_nbgrader() -> bool:
    """True while nbgrader executes the notebook (autograde or validate)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def progress(iterable, **kwargs):
    """A tqdm progress bar, switched off under nbgrader (tqdm writes to stderr, which scores 0)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=under_nbgrader() or kwargs.pop("disable", False), **kwargs)


def apply_start_method() -> str | None:
    """Make ``$COURSE_START_METHOD`` (fork, spawn or forkserver) the default start method of this process's
    ``multiprocessing`` (and so of every DataLoader without a ``multiprocessing_context``); None when unset."""
    method = os.environ.get(START_METHOD_ENV, "").strip()
    if not method:
        return None
    import multiprocessing

    offered = multiprocessing.get_all_start_methods()
    if method not in offered:
        raise ValueError(f"{START_METHOD_ENV}={method!r}: this platform offers {', '.join(offered)}")
    multiprocessing.set_start_method(method, force=True)
    if method == "forkserver":
        # The server imports torch once and every process it forks starts with it; a spawned process imports it
        # itself (2-4 s of CPU on a 2-core laptop). What a process is handed is pickled as under spawn.
        multiprocessing.set_forkserver_preload(["torch"])
    return method


START_CHAPTER_IMPORTS = ("matplotlib",)
"""What :func:`start_chapter` imports beyond torch: a process that will run chapter openings (a grading worker's
kernel zygote, the forkserver of its grade-of-record checks) imports these once, first."""

RUN_RECORD: dict[str, object] = {}
"""What :func:`start_chapter` set up, for a learner to print or a report to keep (:func:`run_record`)."""

CUBLAS_WORKSPACE_ENV = "CUBLAS_WORKSPACE_CONFIG"


def _library_versions() -> dict[str, str]:
    """Versions of the libraries a chapter's numbers depend on (those installed)."""
    from importlib import metadata

    versions = {"python": ".".join(map(str, sys.version_info[:3]))}
    for name in ("torch", "torchvision", "numpy", "matplotlib"):
        try:
            versions[name] = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            pass
    return versions


def set_deterministic(on: bool = True) -> dict[str, object]:
    """Ask every layer for bit-for-bit repeatable results, or give that back; return the settings now in force.

    Seeds alone do not make a run repeatable: some kernels (on CUDA: atomics in ``index_add_``, scatter, some
    convolution algorithms) add in whatever order threads finish. ``torch.use_deterministic_algorithms`` makes
    those raise instead of answering differently; cuDNN is told to pick deterministic algorithms and not to
    benchmark (the fastest algorithm can change between runs); cuBLAS needs ``CUBLAS_WORKSPACE_CONFIG`` set
    before CUDA starts, so it is set here when unset. The cost is speed, and an error for ops that have no
    deterministic version.
    """
    import torch

    if torch.are_deterministic_algorithms_enabled() != on:
        # Only a change: the call imports torch's compiler stack (about 0.9 s on a laptop), which every chapter's
        # opening (and every autograded submission) paid for setting the default again.
        torch.use_deterministic_algorithms(on)
    torch.backends.cudnn.deterministic = on
    torch.backends.cudnn.benchmark = False if on else torch.backends.cudnn.benchmark
    if on:
        os.environ.setdefault(CUBLAS_WORKSPACE_ENV, ":4096:8")
    return determinism_settings()


def determinism_settings() -> dict[str, object]:
    """The switches that decide whether a run repeats bit for bit, as they are now."""
    import torch

    return {
        "use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        CUBLAS_WORKSPACE_ENV: os.environ.get(CUBLAS_WORKSPACE_ENV, "(unset)"),
        "intra-op threads": torch.get_num_threads(),
    }


def run_record() -> dict[str, object]:
    """What this chapter runs on: library versions, seed, device, start method and the determinism switches
    (refreshed: a notebook may have changed them since :func:`start_chapter`)."""
    record = dict(RUN_RECORD)
    if record:
        record["determinism"] = determinism_settings()
    return record


def start_chapter(chapter: str, seed: int = DEFAULT_SEED, device: str | None = None, *,
                  deterministic: bool = False) -> torch.device:
    """The opening of every chapter: fixed seeds, the device, versions and determinism switches recorded.

    ``deterministic=True`` also turns on :func:`set_deterministic`. :func:`run_record` returns what was set
    up; the banner prints the short form.

    With the environment variable ``COURSE_START_METHOD`` set to ``fork``, ``spawn`` or ``forkserver``, every
    process the notebook starts afterwards (DataLoader workers, ``multiprocessing``) starts that way:
    ``COURSE_START_METHOD=spawn`` runs a notebook on Linux as macOS and Windows run it. The banner does not
    show the method, so that a notebook prints the same under every method.
    """
    import torch

    # No warning is silenced here: all eight chapters were executed without any filter and none printed a warning,
    # so a warning a learner sees is one their own code raised. Where a demonstration triggers one on purpose,
    # that cell catches it (warnings.catch_warnings) and prints what it says.
    method = apply_start_method()
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    chosen = pick_device(device)
    set_deterministic(deterministic)
    # Autograding runs no demonstration cell (coursekit.autograde), so nothing is drawn, and importing matplotlib
    # costs 0.1 s of every submission's kernel and of every check process of its grade of record.
    if os.environ.get("NBGRADER_EXECUTION") != "autograde":
        try:
            import matplotlib

            matplotlib.rcParams.update({"figure.dpi": 110, "figure.figsize": (7.5, 3.2), "axes.grid": False})
        except ImportError:  # pragma: no cover - matplotlib is a course dependency
            pass
    versions = _library_versions()
    RUN_RECORD.clear()
    RUN_RECORD.update(chapter=chapter, seed=seed, device=str(chosen), start_method=method or "platform default",
                      versions=versions)
    print(f"chapter {chapter} | python {versions['python']} | torch {versions['torch']} | seed {seed} | device: {chosen}")
    return chosen
