"""Helpers every chapter notebook shares: the opening cell, seeding, device choice, quiet progress bars.

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
import warnings
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
    return method


def start_chapter(chapter: str, seed: int = DEFAULT_SEED, device: str | None = None) -> torch.device:
    """The opening of every chapter: quiet warnings, fixed seeds, the device, versions recorded.

    With the environment variable ``COURSE_START_METHOD`` set to ``fork``, ``spawn`` or ``forkserver``, every
    process the notebook starts afterwards (DataLoader workers, ``multiprocessing``) starts that way:
    ``COURSE_START_METHOD=spawn`` runs a notebook on Linux as macOS and Windows run it. The banner does not
    show the method, so that a notebook prints the same under every method.
    """
    import torch

    # Library deprecation chatter is not the lesson, and under nbgrader any stderr scores a cell 0.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    apply_start_method()
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    chosen = pick_device(device)
    try:
        import matplotlib

        matplotlib.rcParams.update({"figure.dpi": 110, "figure.figsize": (7.5, 3.2), "axes.grid": False})
    except ImportError:  # pragma: no cover - matplotlib is a course dependency
        pass
    python = ".".join(map(str, sys.version_info[:3]))
    print(f"chapter {chapter} | python {python} | torch {torch.__version__.split('+')[0]} | seed {seed} | device: {chosen}")
    return chosen
