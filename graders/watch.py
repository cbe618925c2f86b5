"""See which torch functions student code calls (to check "must not call X" rules at run time).

A runtime watch is used rather than reading the student's source, so a comment or a docstring that
mentions ``unfold`` is never mistaken for a call, and a call made through an alias is still seen.

Limitation: PyTorch does not carry function modes into the autograd engine, so code run by
``loss.backward()`` (a custom Function's ``backward``) is not seen; call ``grad_fn.apply(grad)``
directly inside the watch to observe a backward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.overrides import TorchFunctionMode


class _Recorder(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.created_tensors: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", repr(func))
        self.names.append(name)
        try:
            result = func(*args, **(kwargs or {}))
        except BaseException:
            # A call that failed (say, torch.empty of a shape too large to allocate) still tried.
            self._created(name)
            raise
        if isinstance(result, torch.Tensor):
            self._created(name)
        return result

    def _created(self, name: str) -> None:
        if name not in self.created_tensors:
            self.created_tensors.append(name)

    def describe(self) -> str:
        shown = self.created_tensors or self.names
        return ", ".join(f"torch {n}" for n in shown[:4])


@contextlib.contextmanager
def torch_calls() -> Iterator[_Recorder]:
    """Record the names of the torch functions and tensor methods called inside the block."""
    recorder = _Recorder()
    with recorder:
        yield recorder
