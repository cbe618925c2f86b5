"""Bug: the temporary file is path.with_suffix('.tmp'): for a path that already ends in .tmp the 'temporary' file IS path, so it is written in place (not atomic, and removed on failure)."""
from __future__ import annotations
EXPECT_FAIL = {"saves_through_a_temporary_file": "path itself"}

import os
import pathlib
import random
import re
import tempfile
from typing import Any

import numpy as np
import torch


def _rng_states() -> dict[str, Any]:
    """Every global RNG's state as tensors, numbers, strings and plain containers (``weights_only``-safe)."""
    numpy_state = np.random.get_state(legacy=False)  # a dict; its key array becomes a tensor
    return {
        "python": random.getstate(),  # (version, tuple of 625 ints, float or None): plain already
        "numpy": {"bit_generator": numpy_state["bit_generator"],
                  "key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64)),
                  "pos": int(numpy_state["state"]["pos"]),
                  "has_gauss": int(numpy_state["has_gauss"]), "gauss": float(numpy_state["gauss"])},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _set_rng_states(states: dict[str, Any]) -> None:
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))
    numpy_state = states["numpy"]
    np.random.set_state({"bit_generator": numpy_state["bit_generator"],
                         "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
                         "has_gauss": numpy_state["has_gauss"], "gauss": numpy_state["gauss"]})
    # RNG states must be CPU byte tensors, whatever map_location moved them to.
    torch.set_rng_state(states["torch"].cpu())
    # Devices this machine lacks are ignored: a checkpoint from 8 GPUs resumes on 1, or on none.
    for index, state in enumerate(states["cuda"][:torch.cuda.device_count()]):
        torch.cuda.set_rng_state(state.cpu(), index)


def save_checkpoint(path: str | os.PathLike, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int,
                    scheduler: Any = None, scaler: Any = None, generator: torch.Generator | None = None) -> None:
    """Write everything an exact resume needs to ``path``, atomically: ``path`` holds either the previous
    checkpoint or the new one, never a part of one."""
    state: dict[str, Any] = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step),
                             "rng": _rng_states()}
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        state["scaler"] = scaler.state_dict()
    if generator is not None:
        state["generator"] = generator.get_state()

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory, so os.replace is a rename within one filesystem: atomic.
    temporary = path.with_suffix(".tmp")
    try:
        with open(temporary, "wb") as file:
            torch.save(state, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:  # KeyboardInterrupt too: never leave the temporary file behind
        os.unlink(temporary)
        raise


def load_checkpoint(path: str | os.PathLike, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler: Any = None, scaler: Any = None, generator: torch.Generator | None = None,
                    map_location: Any = "cpu") -> int:
    """Restore a checkpoint written by :func:`save_checkpoint` into the objects given and every RNG;
    return the step it was saved at."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    # Check before restoring anything, so a KeyError leaves every object as it was.
    for name, given in (("scheduler", scheduler), ("scaler", scaler), ("generator", generator)):
        if given is not None and name not in state:
            raise KeyError(f"a {name} was passed but the checkpoint {os.fspath(path)!r} holds no {name} state")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(state["scaler"])
    if generator is not None:
        generator.set_state(state["generator"].cpu())
    _set_rng_states(state["rng"])
    return state["step"]


_CHECKPOINT_NAME = re.compile(r"step_([0-9]+)\.pt")  # [0-9], not \d: \d also matches other scripts' digits


def _checkpoints_oldest_first(directory: str | os.PathLike) -> list[pathlib.Path]:
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _CHECKPOINT_NAME.fullmatch(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry.name, entry))
    return [entry for _, _, entry in sorted(found)]


def latest_checkpoint(directory: str | os.PathLike) -> pathlib.Path | None:
    """The ``step_<N>.pt`` file in ``directory`` with the largest N (by number: step_10 after step_9)."""
    checkpoints = _checkpoints_oldest_first(directory)
    return checkpoints[-1] if checkpoints else None


def rotate_checkpoints(directory: str | os.PathLike, keep: int) -> list[pathlib.Path]:
    """Delete all but the ``keep`` newest ``step_<N>.pt`` files; return the deleted paths, oldest first."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1 (the newest checkpoint is never deleted), got {keep}")
    deleted = _checkpoints_oldest_first(directory)[:-keep]
    for checkpoint in deleted:
        checkpoint.unlink()
    return deleted
