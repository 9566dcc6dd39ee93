"""The other sentence encoders of the paper's Table 1, behind DiSANEncoder's interface:
``encoder(x (B, n, d_e), pad_mask (B, n) bool, trace=False) -> (B, out_dim)``, with DiSANEncoder's hook
points where they have the part: ``s2t.hook_attention`` (``hook_attention`` for the additive attention, and
the multi-head self-attention's (B, n, n, heads) [j, i, h], its heads where DiSA has features) and
``hook_encoding``.
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from disan.nn.attention import masked_softmax
from disan.nn.hooks import HookPoint, recorded
from disan.nn.model import (
    Dense,
    DiSANConfig,
    DiSANEncoder,
    Dropout,
    EncoderTrace,
    Source2Token,
    Source2TokenTrace,
)


class _SentenceEncoder(nn.Module):
    """Token features -> source2token pooling, with the encoding's hook point and the shared trace plumbing."""

    def __init__(self):
        super().__init__()
        self.hook_encoding = HookPoint()

    def pool(self, x, pad_mask, trace):
        out, t = self.s2t(x, pad_mask, trace)
        out = self.hook_encoding(out)
        if not trace:
            return out
        return out, EncoderTrace((), t, out, pad_mask.sum(dim=1))


class AdditiveAttentionEncoder(nn.Module):
    """Word embedding + additive attention: one scalar weight per token, f(x_i) = w^T sigma(W1 x_i + b1) + b."""

    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.fc1 = Dense(cfg.d_e, cfg.d_e, cfg.activation, cfg.dropout)
        self.fc2 = Dense(cfg.d_e, 1, None, cfg.dropout)
        self.hook_attention, self.hook_encoding = HookPoint(), HookPoint()
        self.out_dim = cfg.d_e

    def forward(self, x, pad_mask, trace: bool = False):
        """x (B, n, d_e), pad_mask (B, n) bool -> (B, out_dim) and, with ``trace``, an EncoderTrace without DiSA
        blocks, its attention read at ``hook_attention``."""
        with recorded({"probs": self.hook_attention} if trace else {}) as seen:
            probs = self.hook_attention(masked_softmax(self.fc2(self.fc1(x)), pad_mask[..., None], dim=1))  # (B, n, 1)
            out = self.hook_encoding((probs * x).sum(dim=1))                                                # (B, d_e)
        if not trace:
            return out
        return out, EncoderTrace((), Source2TokenTrace(**seen), out, pad_mask.sum(dim=1))


class Source2TokenEncoder(_SentenceEncoder):
    """Word embedding + multi-dimensional source2token attention."""

    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.s2t = Source2Token(cfg.d_e, cfg.activation, cfg.dropout)
        self.out_dim = cfg.d_e

    def forward(self, x, pad_mask, trace: bool = False):
        """x (B, n, d_e), pad_mask (B, n) bool -> (B, out_dim) and, with ``trace``, an EncoderTrace without DiSA blocks."""
        return self.pool(x, pad_mask, trace)


def sinusoidal_positions(n: int, d: int, device=None) -> torch.Tensor:
    """(n, d) sinusoidal positional encoding of Vaswani et al. (2017)."""
    pos = torch.arange(n, device=device, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, device=device)
    pe[:, 0::2] = torch.sin(pos * rate)
    pe[:, 1::2] = torch.cos(pos * rate[: d // 2])
    return pe


class MultiHeadEncoder(_SentenceEncoder):
    """Multi-head scaled dot-product self-attention (8 heads x 75 = 600 for d_h = 300) + source2token."""

    heads = 8

    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        width = 2 * cfg.d_h
        if width % self.heads:
            raise ValueError(f"2 * d_h = {width} is not divisible by {self.heads} heads")
        self.drop = Dropout(cfg.dropout)
        self.qkv = nn.Linear(cfg.d_e, 3 * width, bias=False)
        self.hook_attention = HookPoint()
        self.s2t = Source2Token(width, cfg.activation, cfg.dropout)
        self.out_dim = width

    def forward(self, x, pad_mask, trace: bool = False):
        """x (B, n, d_e), pad_mask (B, n) bool -> (B, out_dim) and, with ``trace``, an EncoderTrace without DiSA blocks."""
        B, n, d_e = x.shape
        x = x + sinusoidal_positions(n, d_e, x.device).to(x.dtype)
        q, k, v = self.qkv(self.drop(x)).view(B, n, 3, self.heads, -1).unbind(dim=2)  # (B, n, H, dk)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                               # (B, H, n, dk)
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])                      # (B, H, n_query, n_key)
        mask = (pad_mask[:, None, :, None] & pad_mask[:, None, None, :])
        probs = masked_softmax(logits, mask, dim=-1)                                   # (B, H, n_query, n_key)
        if self.hook_attention.hooked:  # the project's axes, heads last as DiSA's features: (B, n, n, H) [j, i, h]
            probs = self.hook_attention(probs.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        y = (probs @ v).transpose(1, 2).reshape(B, n, -1)                              # (B, n, 2 d_h)
        return self.pool(y, pad_mask, trace)


class BiLSTMEncoder(_SentenceEncoder):
    """Bi-LSTM (d_h + d_h) + source2token."""

    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.drop = Dropout(cfg.dropout)
        self.lstm = nn.LSTM(cfg.d_e, cfg.d_h, batch_first=True, bidirectional=True)
        self.s2t = Source2Token(2 * cfg.d_h, cfg.activation, cfg.dropout)
        self.out_dim = 2 * cfg.d_h

    def forward(self, x, pad_mask, trace: bool = False):
        """x (B, n, d_e), pad_mask (B, n) bool -> (B, out_dim) and, with ``trace``, an EncoderTrace without DiSA blocks."""
        lengths = pad_mask.sum(dim=1).clamp_min(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.drop(x), lengths, batch_first=True, enforce_sorted=False)
        y, _ = self.lstm(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return self.pool(y * pad_mask[..., None], pad_mask, trace)


ENCODERS = {
    "disan": DiSANEncoder,
    "disan-nodir": lambda cfg: DiSANEncoder(_nodir(cfg)),
    # Wiegreffe & Pinter's baseline: DiSAN with P frozen to uniform over each block's valid keys
    "disan-uniform": lambda cfg: DiSANEncoder(replace(cfg, t2t_attention="uniform")),
    "bilstm": BiLSTMEncoder,
    "multihead": MultiHeadEncoder,
    "s2t": Source2TokenEncoder,
    "additive": AdditiveAttentionEncoder,
}


def _nodir(cfg: DiSANConfig) -> DiSANConfig:
    return replace(cfg, directions=("diag", "diag"))


def build_encoder(name: str, cfg: DiSANConfig) -> nn.Module:
    """The Table 1 encoder called ``name`` (a key of :data:`ENCODERS`); ValueError for any other name."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose one of {', '.join(ENCODERS)}")
    return ENCODERS[name](cfg)
