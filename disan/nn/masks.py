"""Attention masks.

Axis convention, used by every tensor in this package: an attention mask or a
probability tensor is indexed ``[b, j, i]`` (or ``[j, i]`` without a batch), where
rows ``j`` are the *query* tokens and columns ``i`` the *attended* tokens.
``mask[b, j, i] is True`` means query ``j`` may attend to token ``i``.
"""
from __future__ import annotations

import torch

DIRECTIONS = ("forward", "backward", "diag")


def forward_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) bool: query j attends only to earlier tokens i < j."""
    idx = torch.arange(n, device=device)
    return idx[:, None] > idx[None, :]


def backward_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) bool: query j attends only to later tokens i > j."""
    idx = torch.arange(n, device=device)
    return idx[:, None] < idx[None, :]


def diag_disabled_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) bool: query j attends to every token but itself ("DiSAN without directions")."""
    return ~torch.eye(n, dtype=torch.bool, device=device)


def subsequent_mask(n: int, direction: str, device=None) -> torch.Tensor:
    """The (n, n) mask of a named direction: ``forward``, ``backward`` or ``diag``."""
    builders = {"forward": forward_mask, "backward": backward_mask, "diag": diag_disabled_mask}
    if direction not in builders:
        raise ValueError(f"unknown direction {direction!r}; expected one of {DIRECTIONS}")
    return builders[direction](n, device)


def _check(mask: torch.Tensor, n: int) -> None:
    if mask.dtype != torch.bool:
        raise TypeError("a token2token mask must be a bool tensor")
    if mask.shape[-2:] != (n, n):
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not fit {n} tokens")


def attention_mask(pad_mask: torch.Tensor, structure: torch.Tensor | str,
                   allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Combine a padding mask with a token2token structure and, optionally, a custom mask.

    pad_mask: (B, n) bool, True for real tokens.
    structure: a direction name, or a bool mask (n, n) or (B, n, n) indexed [j, i].
    allowed: None, or a bool mask (n, n) or (B, n, n) [j, i] that removes more edges (False: j may not
    attend i, e.g. an attention knockout); it never adds an edge that the structure forbids.
    Returns (B, n, n) bool: padded keys are never attended and padded queries attend to nothing.
    """
    B, n = pad_mask.shape
    if isinstance(structure, str):
        structure = subsequent_mask(n, structure, pad_mask.device)
    _check(structure, n)
    if allowed is not None:
        _check(allowed, n)
        structure = structure & allowed
    return structure & pad_mask[:, :, None] & pad_mask[:, None, :]  # (B, n, n)
