"""Helpers every chapter notebook shares: the opening cell, seeding, device choice, quiet progress bars.

Every chapter opens the same way::

    from coursekit import start_chapter
    device = start_chapter("01_tensors")

Plotting helpers live in :mod:`coursekit.plots`.
"""

from __future__ import annotations

import os
import random
import sys
import warnings

import numpy as np
import torch

DEFAULT_SEED = 0


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Seed Python, NumPy and torch (every device) so a notebook prints the same numbers each run."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(requested: str | None = None) -> torch.device:
    """``requested``, else ``$COURSE_DEVICE``, else cuda when available, else cpu (as the graders do)."""
    name = requested or os.environ.get("COURSE_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def under_nbgrader() -> bool:
    """True while nbgrader executes the notebook (autograde or validate)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def progress(iterable, **kwargs):
    """A tqdm progress bar, switched off under nbgrader (tqdm writes to stderr, which scores 0)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=under_nbgrader() or kwargs.pop("disable", False), **kwargs)


def start_chapter(chapter: str, seed: int = DEFAULT_SEED, device: str | None = None) -> torch.device:
    """The opening of every chapter: quiet warnings, fixed seeds, the device, versions recorded."""
    # Library deprecation chatter is not the lesson, and under nbgrader any stderr scores a cell 0.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    chosen = pick_device(device)
    try:
        import matplotlib

        matplotlib.rcParams.update({"figure.dpi": 80, "figure.figsize": (7.5, 3.2), "axes.grid": False})
    except ImportError:  # pragma: no cover - matplotlib is a course dependency
        pass
    python = ".".join(map(str, sys.version_info[:3]))
    print(f"chapter {chapter} | python {python} | torch {torch.__version__.split('+')[0]} | seed {seed} | device: {chosen}")
    return chosen
