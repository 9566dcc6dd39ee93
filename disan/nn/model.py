"""DiSAN: directional self-attention (DiSA) blocks and multi-dimensional source2token attention.

Shapes: B batch, n tokens, d_e word vectors, d_h hidden features.
Attention probabilities are (B, n_query j, n_key i, d): rows = the query token j,
columns = the attended token i (see :mod:`disan.nn.masks`).

The comments beside the lines of :meth:`DiSA.compute`, :meth:`Source2Token.compute` and
:meth:`DiSANEncoder.forward` give the paper's equation each line computes (Shen et al., AAAI 2018:
§3.1 multi-dimensional attention and its source2token form, §3.3 directional self-attention, §4
the DiSAN sentence encoder), written in this code's names.

Every intermediate passes through a hook point (:mod:`disan.nn.hooks`): in a DiSA block ``hook_h``,
``hook_mask``, ``hook_attention`` (P), ``hook_s``, ``hook_gate`` (F) and ``hook_u``; in source2token
``hook_attention``; on the encoder ``hook_encoding``. A trace is what they output.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from disan.nn.attention import (
    C_SCALE,
    source2token_probs,
    token2token_probs,
    token2token_uniform,
    uniform_probs,
    weighted_sum,
)
from disan.nn.choices import ACTIVATION, D_H, DROPOUT
from disan.nn.hooks import HookPoint, recorded
from disan.nn.kernels import KERNELS, token2token
from disan.nn.masks import attention_mask

ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}
# What P of token2token attention is: learned (the paper's), or frozen to uniform over each query's valid keys
# (Wiegreffe & Pinter's baseline: the same parameters, W1, W2 and b1 then unused).
T2T_ATTENTION = ("learned", "uniform")


@dataclass
class DiSANConfig:
    """The DiSAN encoder's sizes and settings; the defaults are the paper's (d_e = d_h = 300, ELU, c = 5)."""
    d_e: int = 300              # word-vector size
    d_h: int = D_H              # hidden size of each DiSA block
    activation: str = ACTIVATION  # sigma_h, and sigma in source2token
    dropout: float = DROPOUT    # on the inputs of dense layers (keep prob 0.75)
    c: float = C_SCALE          # scale of the tanh in the token2token logits
    directions: tuple[str, str] = ("forward", "backward")  # ("diag", "diag"): DiSAN without directions
    kernel: str = "auto"        # token2token path: "auto", "cpp", "triton", "eager" or "dense" (see disan.nn.kernels)
    t2t_attention: str = "learned"  # one of T2T_ATTENTION

    def __post_init__(self):
        self.directions = tuple(self.directions)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, not {self.activation!r}")
        if self.t2t_attention not in T2T_ATTENTION:
            raise ValueError(f"t2t_attention must be one of {T2T_ATTENTION}, not {self.t2t_attention!r}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, not {self.kernel!r}")
        if not (isinstance(self.c, (int, float)) and math.isfinite(self.c) and self.c > 0):
            raise ValueError(f"c (the tanh scale of the token2token logits) must be a finite number > 0, "
                             f"not {self.c!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {self.dropout}")
        if min(self.d_e, self.d_h) < 1:
            raise ValueError("d_e and d_h must be positive")


def shapes_repr(trace) -> str:
    """A trace as a notebook or a console shows it: each tensor by its shape, and its dtype where it is not
    float32 ("h=Tensor(5, 300)", "mask=Tensor(5, 5, bool)"), the other fields as ``repr`` writes them. The
    numbers themselves would run to thousands of lines (a block of a 5-token sentence: 3,000 characters)."""
    parts = []
    for f in fields(trace):
        value = getattr(trace, f.name)
        if isinstance(value, torch.Tensor):
            dtype = [] if value.dtype == torch.float32 else [str(value.dtype).removeprefix("torch.")]
            value = f"Tensor({', '.join(map(str, [*value.shape, *dtype]))})"
        else:
            value = repr(value)
        parts.append(f"{f.name}={value}")
    return f"{type(trace).__name__}({', '.join(parts)})"


@dataclass
class DirectionTrace:
    """What one DiSA block computed. Batched (B, ...) from the encoder; one sentence after ``[b]``."""
    name: str            # the block's name in its encoder: "forward", "backward", "diag 1", ...
    direction: str       # the kind of its mask: "forward", "backward" or "diag"
    h: torch.Tensor      # (B, n, d_h)      h = sigma(W_h x + b_h)
    probs: torch.Tensor | None  # (B, n, n, d_h) P[j, i, k]: query j, attended token i, feature k;
    #                             None in a trace of the per-token intermediates only (trace="tokens")
    s: torch.Tensor      # (B, n, d_h)      s_j = sum_i P[j, i] * h_i
    gate: torch.Tensor   # (B, n, d_h)      fusion gate F
    u: torch.Tensor      # (B, n, d_h)      u = F * h + (1 - F) * s
    mask: torch.Tensor   # (B, n, n) bool   mask[j, i]: query j may attend token i (padding included)

    __repr__ = shapes_repr


@dataclass
class Source2TokenTrace:
    """What source2token attention computed."""
    probs: torch.Tensor  # (B, n, d): per-feature probability of every token

    __repr__ = shapes_repr


@dataclass
class EncoderTrace:
    """Intermediates of an encoder: its DiSA blocks in order (none for the baselines), source2token, encoding."""
    blocks: tuple[DirectionTrace, ...]
    source2token: Source2TokenTrace | None
    encoding: torch.Tensor  # (B, d_out)
    lengths: torch.Tensor   # (B,)

    __repr__ = shapes_repr

    @property
    def forward(self) -> DirectionTrace | None:
        """The block with the forward mask, or None (DiSAN without directions, the baselines)."""
        return self._masked("forward")

    @property
    def backward(self) -> DirectionTrace | None:
        """The block with the backward mask, or None (DiSAN without directions, the baselines)."""
        return self._masked("backward")

    def _masked(self, direction: str) -> DirectionTrace | None:
        return next((t for t in self.blocks if t.direction == direction), None)

    def __getitem__(self, b: int) -> "EncoderTrace":
        """The trace of sentence ``b``, cut to its length and without the batch axis."""
        n = int(self.lengths[b])

        def cut(x, axes):
            return x[(b,) + (slice(0, n),) * axes]

        blocks = tuple(replace(t, h=cut(t.h, 1), probs=None if t.probs is None else cut(t.probs, 2), s=cut(t.s, 1),
                               gate=cut(t.gate, 1),
                               u=cut(t.u, 1), mask=cut(t.mask, 2)) for t in self.blocks)
        s2t = None if self.source2token is None else Source2TokenTrace(cut(self.source2token.probs, 1))
        return EncoderTrace(blocks, s2t, self.encoding[b], self.lengths[b:b + 1])


class Dropout(nn.Module):
    """Inverted dropout, as nn.Dropout, with the mask drawn by ``rand_like``.

    On CPU nn.Dropout's bernoulli_ runs on one thread and costs about twice as much; with
    dropout on the input of every dense layer this is a visible share of a training step.
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        """x with each element zeroed with probability p and the rest scaled by 1 / (1 - p); x in eval mode."""
        if not self.training or self.p == 0:
            return x
        return x * (torch.rand_like(x) >= self.p) * (1.0 / (1.0 - self.p))


class Dense(nn.Module):
    """Dropout on the input, then an affine map and an optional activation (the original code's dense layer)."""

    def __init__(self, d_in: int, d_out: int, activation: str | None, dropout: float, bias: bool = True):
        super().__init__()
        self.drop = Dropout(dropout)
        self.linear = nn.Linear(d_in, d_out, bias=bias)
        self.act = ACTIVATIONS[activation]() if activation else nn.Identity()

    def forward(self, x):
        """activation(W dropout(x) + b)."""
        return self.act(self.linear(self.drop(x)))


class DiSA(nn.Module):
    """Directional self-attention block: x (B, n, d_e) -> u (B, n, d_h).

    ``direction`` is the kind of its mask; ``name`` is what its trace calls it (default: the direction).
    The parameters follow the original code, whose count the paper reports
    (451.5k for d_e = d_h = 300): both fusion projections carry a bias next to b_f.
    """

    def __init__(self, cfg: DiSANConfig, direction: str, name: str | None = None):
        super().__init__()
        self.direction, self.c, self.kernel = direction, cfg.c, cfg.kernel
        self.uniform = cfg.t2t_attention == "uniform"
        d = cfg.d_h
        self.fc_h = Dense(cfg.d_e, d, cfg.activation, cfg.dropout)           # W_h, b_h
        self.drop = Dropout(cfg.dropout)
        self.w1 = nn.Linear(d, d, bias=False)                                   # W1 on the attended token h_i
        self.w2 = nn.Linear(d, d, bias=False)                                   # W2 on the query token h_j
        self.b1 = nn.Parameter(torch.zeros(d))
        self.fuse_s = Dense(d, d, None, cfg.dropout)                            # W_f1 on s
        self.fuse_h = Dense(d, d, None, cfg.dropout)                            # W_f2 on h
        self.b_f = nn.Parameter(torch.zeros(d))
        self.hook_h, self.hook_mask, self.hook_attention = HookPoint(), HookPoint(), HookPoint()
        self.hook_s, self.hook_gate, self.hook_u = HookPoint(), HookPoint(), HookPoint()
        self.name = name or direction  # what the trace calls the block

    def forward(self, x, pad_mask, trace: bool | str = False, t2t_mask=None):
        """x (B, n, d_e), pad_mask (B, n) bool -> u (B, n, d_h) and, with ``trace``, a :class:`DirectionTrace`
        of what the hook points output (``trace="tokens"``: without the probabilities, which the fast path
        then never makes).

        ``t2t_mask``: an optional bool (n, n) or (B, n, n) [j, i] that forbids more edges than the block's
        own mask (False: j may not attend i).
        """
        if not trace:
            return self.compute(x, pad_mask, t2t_mask), None
        points = {"h": self.hook_h, "probs": self.hook_attention, "s": self.hook_s, "gate": self.hook_gate,
                  "u": self.hook_u, "mask": self.hook_mask}
        if trace == "tokens":
            del points["probs"]
        with recorded(points) as seen:
            u = self.compute(x, pad_mask, t2t_mask)
        return u, DirectionTrace(self.name, self.direction, probs=seen.pop("probs", None), **seen)

    def compute(self, x, pad_mask, t2t_mask=None):
        """u (B, n, d_h) of x (B, n, d_e), every intermediate through its hook point."""
        # §3.3: h = σ_h(W^(h) x + b^(h))
        h = self.hook_h(self.fc_h(x))                                # (B, n, d)
        # §3.3: the positional mask M (0 where j may attend i, -inf elsewhere), padding and t2t_mask included
        mask = self.hook_mask(attention_mask(pad_mask, self.direction, t2t_mask))  # (B, n, n) bool [j, i]
        h_dp = self.drop(h)
        # §3.3: f(h_i, h_j) = c·tanh([W^(1) h_i + W^(2) h_j + b^(1)] / c) + M_ij, per feature k;
        # key = W^(1) h_i (the attended token), query = W^(2) h_j + b^(1) (the query token)
        # both projections read the same h_dp: one matmul with [W^(1); W^(2)] (a wider matmul runs faster)
        key, query = nn.functional.linear(h_dp, torch.cat([self.w1.weight, self.w2.weight])).split(self.b1.shape[0], dim=-1)
        query = query + self.b1                                      # key, query: (B, n, d)
        # §3.1 (token2token): P^j = softmax_i f(h_i, h_j) per feature, s_j = Σ_i P^j_i ⊙ h_i
        # P (B, n, n, d) is made only for someone who reads or replaces it; otherwise a kernel computes s
        # without it (uniform: P frozen to 1 / (valid keys of j), and key and query reach nothing)
        if self.hook_attention.hooked:
            probs = (uniform_probs(mask, h.dtype)[..., None].expand(*mask.shape, h.shape[-1]) if self.uniform
                     else token2token_probs(key, query, mask, self.c))
            s = weighted_sum(self.hook_attention(probs), h)
        elif self.uniform:
            s = token2token_uniform(h, mask)
        else:
            s = token2token(key, query, h, mask, self.c, self.kernel)
        s = self.hook_s(s)                                           # (B, n, d)
        # §3.3 fusion gate: F = sigmoid(W^(f1) s + W^(f2) h + b^(f))
        gate = self.hook_gate(torch.sigmoid(self.fuse_s(s) + self.fuse_h(h) + self.b_f))
        # §3.3: u = F ⊙ h + (1 − F) ⊙ s = s + F ⊙ (h − s); padded tokens output 0
        return self.hook_u(torch.lerp(s, h, gate) * pad_mask[..., None])


class Source2Token(nn.Module):
    """Multi-dimensional source2token attention: x (B, n, d) -> (B, d).

    f(x_i) = W sigma(W1 x_i + b1) + b; softmax over tokens i for every feature.
    """

    def __init__(self, d: int, activation: str, dropout: float):
        super().__init__()
        self.fc1 = Dense(d, d, activation, dropout)
        self.fc2 = Dense(d, d, None, dropout)
        self.hook_attention = HookPoint()

    def forward(self, x, pad_mask, trace: bool | str = False):
        """x (B, n, d), pad_mask (B, n) bool -> (B, d) and, with ``trace`` (True or "tokens"), a
        :class:`Source2TokenTrace` of what its hook point outputs."""
        if not trace:
            return self.compute(x, pad_mask), None
        with recorded({"probs": self.hook_attention}) as seen:
            out = self.compute(x, pad_mask)
        return out, Source2TokenTrace(**seen)

    def compute(self, x, pad_mask):
        """The encoding (B, d) of x (B, n, d)."""
        # §3.1 (source2token): f(x_i) = W^T σ(W^(1) x_i + b^(1)) + b; P = softmax over tokens i, per feature
        probs = self.hook_attention(source2token_probs(self.fc2(self.fc1(x)), pad_mask))  # (B, n, d)
        # §3.1: s = Σ_i P_i ⊙ x_i
        return (probs * x).sum(dim=1)                                 # (B, d)


SHORT = {"forward": "fw", "backward": "bw"}  # submodule names of the directional blocks


def name_blocks(directions) -> list[tuple[str, str]]:
    """(submodule, trace name) of each DiSA block, named after its mask.

    A mask used once names its block: fw / "forward", bw / "backward" (the shipped checkpoints'
    ``encoder.fw.*`` keys). A mask used more than once is numbered: diag1 / "diag 1", diag2 / "diag 2".
    """
    total, seen, out = Counter(directions), Counter(), []
    for direction in directions:
        short = SHORT.get(direction, direction)
        if total[direction] == 1:
            out.append((short, direction))
        else:
            seen[direction] += 1
            out.append((f"{short}{seen[direction]}", f"{direction} {seen[direction]}"))
    return out


def _per_block(t2t_mask, blocks: list[DiSA]) -> list:
    """The custom mask of each block: one tensor (or None) for all, or a mapping's entry by block name."""
    if not isinstance(t2t_mask, Mapping):
        return [t2t_mask] * len(blocks)
    names = [block.name for block in blocks]
    unknown = sorted(set(t2t_mask) - set(names))
    if unknown:
        raise ValueError(f"no DiSA block is named {unknown[0]!r}; the blocks are {names}")
    return [t2t_mask.get(name) for name in names]


class DiSANEncoder(nn.Module):
    """Two DiSA blocks (untied; forward and backward) -> concatenation -> source2token: (B, n, d_e) -> (B, 2 d_h)."""

    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.cfg = cfg
        names = name_blocks(cfg.directions)
        for (module, name), direction in zip(names, cfg.directions):
            self.add_module(module, DiSA(cfg, direction, name))
        self.block_modules = tuple(module for module, _ in names)
        self.out_dim = len(names) * cfg.d_h
        self.s2t = Source2Token(self.out_dim, cfg.activation, cfg.dropout)
        self.hook_encoding = HookPoint()

    @property
    def blocks(self) -> list[DiSA]:
        """The DiSA blocks in order; their outputs are concatenated in this order."""
        return [getattr(self, module) for module in self.block_modules]

    def forward(self, x, pad_mask, trace: bool | str = False, t2t_mask=None):
        """x (B, n, d_e) float, pad_mask (B, n) bool -> (B, 2 d_h) [, EncoderTrace].

        ``trace``: False, the encoding alone; True, also an :class:`EncoderTrace` of every intermediate,
        the (B, n, n, d_h) attention probabilities included (the dense path); ``"tokens"``, an
        :class:`EncoderTrace` of the per-token intermediates only (h, s, gates, u, source2token
        probabilities, masks; ``probs`` None), computed on the fast path without any n² tensor: what
        analyses over many sentences read.

        ``t2t_mask`` removes token2token edges (an attention knockout): a bool (n, n) or (B, n, n) [j, i]
        for every block, or a mapping from block names to such masks (blocks not named keep theirs).
        It is combined with each block's directional mask and the padding, never adding an edge.
        """
        # §4: u^fw = DiSA^fw(x), u^bw = DiSA^bw(x), untied
        blocks = self.blocks
        outputs = [block(x, pad_mask, trace, m) for block, m in zip(blocks, _per_block(t2t_mask, blocks))]
        # §4: the sentence encoding is source2token attention over [u^fw; u^bw]
        out, t_s2t = self.s2t(torch.cat([u for u, _ in outputs], dim=-1), pad_mask, trace)
        out = self.hook_encoding(out)                                                       # (B, 2 d_h)
        if not trace:
            return out
        return out, EncoderTrace(tuple(t for _, t in outputs), t_s2t, out, pad_mask.sum(dim=1))
