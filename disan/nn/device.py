"""Where a model runs: the ``--device`` names of the command line, resolved to a :class:`torch.device`."""
from __future__ import annotations

import torch

from disan.nn.choices import DEVICES


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """``auto`` (CUDA when a GPU is visible, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``, or a torch.device.

    Asking for CUDA where there is none raises ValueError with a one-line reason, not torch's error
    at the first tensor moved there.
    """
    if isinstance(name, torch.device):
        device = name
    elif name == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            device = torch.device(name)
        except RuntimeError:
            raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}") from None
        if device.type not in DEVICES:
            raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no GPU is visible"
            raise ValueError(f"device {str(name)!r} was asked for but CUDA is not available ({why}); "
                             f"use --device cpu or auto")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(name)!r} was asked for but only {torch.cuda.device_count()} GPU(s) "
                             f"are visible")
    return device


def describe(device: torch.device) -> str:
    """The device as the model card names it: ``cpu``, or ``cuda:0 (NVIDIA H100 …)``."""
    if device.type != "cuda":
        return device.type
    return f"{device} ({torch.cuda.get_device_name(device)})"


def device_of(model: torch.nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))
