"""Meters for what autograd keeps alive: the bytes of tensors saved for backward, and the memory in use.

``SavedTensorMeter`` counts, while it is active (``with SavedTensorMeter(model) as meter:``), every tensor an
operation saves for backward, through ``torch.autograd.graph.saved_tensors_hooks``: the pack hook wraps each
saved tensor in a small box and the meter keeps only a *weak* reference to the box. The graph holds the box, so
the box (and the meter's count) disappears exactly when the graph that saved it is freed: by ``backward()``, or
when the last tensor that leads to the graph goes away. Nothing is copied; the saved tensors are the ones
autograd would have kept anyway.

While saved-tensor hooks are active, autograd does not check the version counters of what it saved (it holds
only what the pack hook returned). The meter makes that check itself, so that an in-place edit of a saved
tensor raises the same RuntimeError with and without the meter (tests/test_meters.py).

``memory_in_use`` reads the memory the tensors of a device live in: the CUDA caching allocator's count on a
GPU, the whole process's resident memory on the CPU.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import NamedTuple

import torch

__all__ = ["SavedStorage", "SavedTensorMeter", "memory_in_use"]


class SavedStorage(NamedTuple):
    """One block of memory that tensors saved for backward point into (a storage), as
    :meth:`SavedTensorMeter.breakdown` lists it."""

    shape: tuple[int, ...]  # the shape of the first saved tensor seen in this storage
    nbytes: int             # the storage's size in bytes
    saves: int              # how many saves (by one node or several) point into it
    excluded: bool          # True for a parameter (or another excluded tensor): not counted in held_bytes


class _Box:
    """What the graph holds in place of a saved tensor. The graph holds the only strong reference to it, so it
    dies with the graph; a weak reference to the tensor itself would not, since that tensor may live on elsewhere
    (a layer's output is also the next layer's input)."""

    __slots__ = ("tensor", "version", "__weakref__")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor
        self.version = tensor._version  # a detached tensor shares the version counter of the one saved


def _storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    storage = tensor.untyped_storage()
    return str(tensor.device), storage.data_ptr()


class SavedTensorMeter:
    """Bytes of tensors saved for backward that some graph still holds, counted while the meter is active.

    ``exclude`` is a module or an iterable of tensors (usually the model's parameters): saves that point into
    their storage are listed by :meth:`breakdown` but not counted, since those tensors live on anyway. A storage
    saved several times (a ReLU's output, saved by the ReLU and by the next layer) counts once, and a saved view
    counts its whole storage, which it keeps alive.

    Only what is saved inside the ``with`` block is seen; it is counted as long as its graph is alive, also
    after the block ends. Under ``torch.no_grad()`` nothing is saved, so nothing is counted.
    """

    def __init__(self, exclude: torch.nn.Module | Iterable[torch.Tensor] = ()):
        tensors = exclude.parameters() if isinstance(exclude, torch.nn.Module) else exclude
        self._excluded = {_storage_key(t) for t in tensors}
        self._boxes: weakref.WeakSet[_Box] = weakref.WeakSet()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    # The two hooks autograd calls: pack when a node saves a tensor, unpack when backward needs it back.
    def _pack(self, tensor: torch.Tensor) -> _Box:
        box = _Box(tensor.detach())  # detach(): the box must not point back into the graph that holds it
        self._boxes.add(box)
        return box

    @staticmethod
    def _unpack(box: _Box) -> torch.Tensor:
        if box.tensor._version != box.version:  # autograd's own check, which the hooks switch off
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{box.tensor.type()} {list(box.tensor.shape)}] is at version {box.tensor._version}; expected "
                f"version {box.version} instead (checked by SavedTensorMeter: autograd does not check while "
                "saved-tensor hooks are active)")
        return box.tensor

    def __enter__(self) -> SavedTensorMeter:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    def saved_tensors(self) -> list[torch.Tensor]:
        """Every saved tensor still held by a graph, one entry per save (the same tensor may appear twice)."""
        return [box.tensor for box in list(self._boxes)]

    def breakdown(self) -> list[SavedStorage]:
        """The storages the held saves point into, largest first (then by shape)."""
        found: dict[tuple[str, int], SavedStorage] = {}
        for tensor in self.saved_tensors():
            key = _storage_key(tensor)
            if key in found:
                found[key] = found[key]._replace(saves=found[key].saves + 1)
            else:
                found[key] = SavedStorage(tuple(tensor.shape), tensor.untyped_storage().nbytes(), 1,
                                          key in self._excluded)
        return sorted(found.values(), key=lambda s: (-s.nbytes, s.shape, s.saves, s.excluded))

    def held_bytes(self) -> int:
        """Bytes of the distinct storages that held saves point into, excluded tensors left out."""
        return sum(s.nbytes for s in self.breakdown() if not s.excluded)

    def held_kib(self) -> float:
        """:meth:`held_bytes` in KiB (1024 bytes)."""
        return self.held_bytes() / 1024


def memory_in_use(device: torch.device | str | None = None) -> int:
    """Bytes in use where ``device``'s tensors live: on a CUDA device, what PyTorch's allocator has handed out
    (``torch.cuda.memory_allocated``); anywhere else (the CPU), the resident memory of the whole process
    (psutil), which also moves with everything else the process does: compare two readings, do not read one."""
    device = torch.device(device if device is not None else "cpu")
    if device.type == "cuda":
        return int(torch.cuda.memory_allocated(device))
    import psutil  # installed with Jupyter's kernel (ipykernel depends on it)

    return int(psutil.Process().memory_info().rss)
