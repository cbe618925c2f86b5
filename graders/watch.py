"""See what student code calls: torch functions ("must not call X" rules) and file syncs and renames.

A runtime watch is used rather than reading the student's source, so a comment or a docstring that
mentions ``unfold`` is never mistaken for a call, and a call made through an alias is still seen.

Limitation: PyTorch does not carry function modes into the autograd engine, so code run by
``loss.backward()`` (a custom Function's ``backward``) is not seen; call ``grad_fn.apply(grad)``
directly inside the watch to observe a backward.
"""

from __future__ import annotations

import contextlib
import os
import sys
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


# ==================================================================================================
# File events: os.fsync / os.fdatasync, os.replace / os.rename (Path.replace and shutil.move use them),
# os.remove / os.unlink (Path.unlink uses them)
# ==================================================================================================
_file_events: list[tuple] | None = None  # a list while a file_events() block records


def install_file_event_recorder() -> None:
    """In the runner, before the student's code is loaded: wrap os.fsync, os.fdatasync, os.replace, os.rename.

    Installed before loading, so ``from os import fsync`` in the student's code gets the wrapper too (a
    notebook's pickled reference to ``posix.fsync`` is resolved after this as well). A sync is recorded by
    the file it reached (device and inode): after ``os.replace(tmp, path)``, ``path`` has the inode the
    temporary file had when it was synced. A rename is recorded with its function's name and absolute
    source and target, so ``os.replace`` (which overwrites on every platform) is told from ``os.rename``
    (which refuses to overwrite on Windows).
    """
    platform_module = sys.modules.get(os.name)
    for name, describe in (("fsync", _describe_sync), ("fdatasync", _describe_sync),
                           ("replace", _describe_rename), ("rename", _describe_rename),
                           ("remove", _describe_removal), ("unlink", _describe_removal)):
        real = getattr(os, name, None)
        if real is None or getattr(real, "__course_recorder__", False):
            continue
        wrapper = _recording(real, name, describe)
        setattr(os, name, wrapper)
        if platform_module is not None and getattr(platform_module, name, None) is real:
            setattr(platform_module, name, wrapper)


def _describe_sync(fd, *args, **kwargs) -> tuple:
    status = os.fstat(fd if isinstance(fd, int) else fd.fileno())
    return status.st_dev, status.st_ino


def _describe_rename(source, target, *args, **kwargs) -> tuple:
    return os.path.abspath(os.fsdecode(source)), os.path.abspath(os.fsdecode(target))


def _describe_removal(path, *args, **kwargs) -> tuple:
    return (os.path.abspath(os.fsdecode(path)),)


def _recording(real, name: str, describe):
    def recorded(*args, **kwargs):
        facts = None
        if _file_events is not None:
            with contextlib.suppress(Exception):
                facts = describe(*args, **kwargs)  # before the call: a renamed file has no old name afterwards
        result = real(*args, **kwargs)
        if facts is not None and _file_events is not None:
            _file_events.append((name, *facts))
        return result

    recorded.__name__ = recorded.__qualname__ = name
    recorded.__doc__ = real.__doc__
    recorded.__course_recorder__ = True
    return recorded


@contextlib.contextmanager
def file_events() -> Iterator[list[tuple]]:
    """Record, inside the block, ``("fsync" | "fdatasync", st_dev, st_ino)``, ``("replace" | "rename", source,
    target)`` and ``("remove" | "unlink", path)``, in the order they happened."""
    global _file_events
    _file_events = events = []
    try:
        yield events
    finally:
        _file_events = None
