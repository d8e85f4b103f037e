"""Compute devices for the torch code paths (neural posteriors, DPVI): ``"cpu"``, ``"cuda"``, ``"auto"``.

``resolve_device("auto")`` is the first CUDA device when torch sees one and the CPU otherwise;
``"cuda"`` (or ``"cuda:1"``) on a machine without that GPU raises
:class:`~dpinfer.errors.DeviceUnavailableError` saying what to use instead, before any work (and
before any privacy budget is charged). The CPU is the default everywhere and what CI tests.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import DeviceUnavailableError

DEVICE_CHOICES = ("cpu", "cuda", "auto")


def resolve_device(device: Any = "cpu") -> torch.device:
    """A ``torch.device`` from ``"cpu"``, ``"cuda"``, ``"cuda:<i>"``, ``"auto"`` or a torch.device.

    Raises
    ------
    DeviceUnavailableError
        For an unknown name or a CUDA device torch cannot use here.
    """
    if device is None:
        device = "cpu"
    if isinstance(device, str) and device.strip().lower() == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    try:
        dev = torch.device(device.strip().lower() if isinstance(device, str) else device)
    except (RuntimeError, TypeError, ValueError):
        raise DeviceUnavailableError(
            f"unknown device {device!r}; use one of {DEVICE_CHOICES} (or 'cuda:<index>')."
        ) from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type != "cuda":
        raise DeviceUnavailableError(
            f"device {device!r} is not supported; use one of {DEVICE_CHOICES} (or 'cuda:<index>')."
        )
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(
            f"device {device!r} was requested but torch {torch.__version__} sees no CUDA GPU here "
            "(a CPU-only build or no driver); use device='cpu' or device='auto'."
        )
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= torch.cuda.device_count():
        raise DeviceUnavailableError(
            f"device {device!r} does not exist: torch sees {torch.cuda.device_count()} CUDA device(s)."
        )
    return torch.device("cuda", index)


__all__ = ["DEVICE_CHOICES", "resolve_device"]
