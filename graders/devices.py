"""Which device the checks run on."""

from __future__ import annotations

import os

import torch

from graders.outcomes import UsageError


def resolve_device(requested: str | torch.device | None = None) -> torch.device:
    """``requested``, else ``$COURSE_DEVICE``, else cuda when available, else cpu."""
    if requested is None:
        requested = os.environ.get("COURSE_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise UsageError(f"unknown device {str(requested)!r}; use cpu or cuda") from None
    if device.type not in ("cpu", "cuda"):
        raise UsageError(f"unsupported device {str(requested)!r}; use cpu or cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("cuda was asked for, but no CUDA GPU is available here; use --device cpu")
    return device
