"""Hook points: identity modules at the model's intermediates, named ``hook_*`` (TransformerLens's convention).

A forward hook on a hook point sees the tensor and may return a replacement, from which the model goes
on: ``model.encoder.fw.hook_gate.register_forward_hook(fn)`` reads or rewrites F, and nothing of the
model's equations has to be written again outside :mod:`disan.nn`. The trace of
:meth:`disan.nn.model.DiSANEncoder.forward` is what the hook points output (:func:`recorded`).

What costs something to make is made only for someone who looks: P (B, n, n, d) is computed when its
hook point is :attr:`HookPoint.hooked`, and otherwise the fast kernels run without it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import nn


class HookPoint(nn.Module):
    """The identity, at one intermediate of the model: where forward hooks read and replace it."""

    def __init__(self):
        super().__init__()
        self.active = False  # computed as if hooked: for tools that read it some other way

    @property
    def hooked(self) -> bool:
        """Whether someone reads this point: a forward hook, :attr:`active`, or a tool that instruments
        the module by replacing its ``forward`` on the instance instead of adding a hook (nnsight does)."""
        return self.active or bool(self._forward_hooks) or "forward" in vars(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x, unchanged."""
        return x


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Every hook point of ``model`` by its name in it ("encoder.fw.hook_attention", ...), in module order."""
    return {name: module for name, module in model.named_modules() if isinstance(module, HookPoint)}


def this_thread(fn: Callable) -> Callable:
    """``fn`` as a forward hook that acts in the thread that made it only. A model may be shared by threads (the
    app's sessions trace one cached model at once): what one thread hooks to read or replace an intermediate
    must neither see nor change another thread's forward pass meanwhile, which only finds the point hooked (and
    computes P, to the same values)."""
    owner = threading.get_ident()

    def hook(module, args, output):
        return fn(module, args, output) if threading.get_ident() == owner else None
    return hook


@contextmanager
def recorded(points: Mapping[str, HookPoint]) -> Iterator[dict[str, torch.Tensor]]:
    """A dict filled, while the context is open, with what each of ``points`` outputs in this thread, under its
    key: the tensor the model went on from, after any replacement by hooks registered before."""
    seen: dict[str, torch.Tensor] = {}

    def keep(key):
        return lambda module, args, output: seen.__setitem__(key, output)

    handles = [point.register_forward_hook(this_thread(keep(key))) for key, point in points.items()]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()

