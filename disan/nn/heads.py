"""The full text model (word embedding, sentence encoder, head), initialisation and L2 parameter groups.

The head is a dense layer of d_fc with sigma, then the logits, on what the model's kind
(:mod:`disan.data.kinds`) makes of the sentence encodings: the encoding of one sentence, or the pair
features [s_p; s_h; s_p - s_h; s_p * s_h] of a premise and a hypothesis; the kind also says how the
logits are trained and read (classes, or Tai et al.'s distribution over relatedness scores).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from disan.data.kinds import KINDS, kind_of
from disan.data.text import PAD_ID
from disan.nn.baselines import build_encoder
from disan.nn.choices import D_FC
from disan.nn.model import Dense, DiSA, DiSANConfig, DiSANEncoder


@dataclass
class ModelConfig:
    """The whole text model: vocabulary size, head kind and size, encoder name and its configuration."""
    vocab_size: int
    n_classes: int                 # classes, or K score levels for relatedness
    kind: str = "classify"         # a name of disan.data.kinds.KINDS
    encoder: str = "disan"
    d_fc: int = D_FC               # hidden size of the head's fully connected layer
    encoder_cfg: DiSANConfig | None = None  # None: DiSANConfig()
    frozen_vocab: int = 0          # the last rows of the vocabulary: fixed pre-trained vectors (see WordEmbedding)
    out_bias: bool = True          # a bias on the class logits (the authors' SST head has none)

    def __post_init__(self):
        kind_of(self.kind)  # ValueError for an unknown kind
        if isinstance(self.encoder_cfg, dict):
            self.encoder_cfg = DiSANConfig(**self.encoder_cfg)
        if self.encoder_cfg is None:
            self.encoder_cfg = DiSANConfig()
        if self.n_classes < 2:
            raise ValueError("a head needs at least two classes or score levels")
        if not 0 <= self.frozen_vocab <= self.vocab_size - 2:
            raise ValueError(f"frozen_vocab must be in [0, vocab_size - 2], not {self.frozen_vocab}: "
                             f"padding and <unk> are learned rows")


class WordEmbedding(nn.Module):
    """Token ids -> word vectors, from two tables: learned rows, then frozen rows.

    ``weight`` (vocab_size - frozen, d_e) holds padding, <unk> and the training words, initialised
    from GloVe and fine-tuned. ``frozen`` (frozen, d_e), float16, holds the pre-trained vectors of
    words that only dev, test or app text can contain: training never sees them, so they would
    never change, and storing them at half precision lets a checkpoint know 50k extra words in a
    few MB. The float16 values are the ones the model computes with, in training and after.
    """

    def __init__(self, vocab_size: int, d_e: int, frozen: int = 0):
        super().__init__()
        self.learned = vocab_size - frozen
        self.weight = nn.Parameter(torch.zeros(self.learned, d_e))
        if frozen:
            self.register_buffer("frozen", torch.zeros(frozen, d_e, dtype=torch.float16))

    def set_vectors(self, vectors: torch.Tensor) -> None:
        """Copy a (vocab_size, d_e) matrix in: the first rows into ``weight``, the rest, rounded, into ``frozen``."""
        with torch.no_grad():
            self.weight.copy_(vectors[: self.learned])
            if hasattr(self, "frozen"):
                self.frozen.copy_(vectors[self.learned:])

    def append_frozen(self, vectors: torch.Tensor) -> None:
        """Add (k, d_e) frozen rows after the last ones, stored as the others, in float16: ids
        ``vocab_size .. vocab_size + k - 1`` of the grown vocabulary. No rows add nothing: an empty frozen
        table would be indexed all the same (forward reads it at clamped ids, then masks the result)."""
        if not len(vectors):
            return
        rows = vectors.to(torch.float16, copy=True)
        if hasattr(self, "frozen"):
            self.frozen = torch.cat([self.frozen, rows.to(self.frozen.device)])
        else:
            self.register_buffer("frozen", rows.to(self.weight.device))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, n) -> (B, n, d_e); padding (PAD_ID) gets no gradient."""
        if not hasattr(self, "frozen"):
            return F.embedding(ids, self.weight, padding_idx=PAD_ID)
        is_frozen = ids >= self.learned
        learned = F.embedding(ids.masked_fill(is_frozen, PAD_ID), self.weight, padding_idx=PAD_ID)
        fixed = self.frozen[(ids - self.learned).clamp(min=0)].to(self.weight.dtype)
        return torch.where(is_frozen.unsqueeze(-1), fixed, learned)


class TextModel(nn.Module):
    """Word embeddings -> sentence encoder -> head. Inputs are token ids (B, n) with 0 = padding."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        ecfg = cfg.encoder_cfg
        self.embed = WordEmbedding(cfg.vocab_size, ecfg.d_e, cfg.frozen_vocab)
        self.encoder = build_encoder(cfg.encoder, ecfg)
        d_in = self.encoder.out_dim * self.kind.width
        self.fc = Dense(d_in, cfg.d_fc, ecfg.activation, ecfg.dropout)
        self.out = Dense(cfg.d_fc, cfg.n_classes, None, ecfg.dropout, bias=cfg.out_bias)
        init_weights(self)

    @property
    def kind(self):
        """The entry of the model's kind (:data:`disan.data.kinds.KINDS`)."""
        return KINDS[self.cfg.kind]

    def encode(self, ids: torch.Tensor, trace: bool | str = False, t2t_mask=None):
        """ids (B, n) -> (B, d_out) [, EncoderTrace]. ``trace``: False, True (every intermediate) or
        ``"tokens"`` (the per-token ones, without the n² probabilities), as
        :meth:`disan.nn.model.DiSANEncoder.forward` says. ``t2t_mask`` forbids token2token edges of a DiSAN
        encoder; other encoders have none to forbid."""
        if t2t_mask is None:
            return self.encoder(self.embed(ids), ids != PAD_ID, trace)
        if not isinstance(self.encoder, DiSANEncoder):
            raise ValueError(f"the {self.cfg.encoder} encoder has no token2token attention to mask")
        return self.encoder(self.embed(ids), ids != PAD_ID, trace, t2t_mask)

    def head(self, *encodings: torch.Tensor) -> torch.Tensor:
        """Sentence encoding(s) (B, d_out) -> logits (B, n_classes)."""
        return self.out(self.fc(self.kind.features(*encodings)))

    def forward(self, *ids: torch.Tensor) -> torch.Tensor:
        """Logits (B, n_classes) of token ids (B, n): one sentence's, or a pair kind's premise and hypothesis ids."""
        if len(ids) != self.kind.texts:
            raise ValueError(f"a {self.kind.name} model takes {self.kind.texts} inputs, not {len(ids)}")
        return self.head(*(self.encode(x) for x in ids))


def init_weights(model: nn.Module) -> None:
    """Glorot-uniform weight matrices, zero biases; embeddings are set by the caller (word vectors)."""
    for name, p in model.named_parameters():
        if name.startswith("embed."):
            continue
        if p.dim() >= 2:
            nn.init.xavier_uniform_(p)
        else:
            nn.init.zeros_(p)


def param_groups(model: nn.Module, weight_decay: float, attention: bool = True) -> list[dict]:
    """L2 on the weight matrices of encoder and head only; biases and embeddings go without, as the original code.

    ``attention=False`` also leaves out the token2token logits' W1 and W2 of every DiSA block, as the
    authors' code does (their dense, fusion, source2token and head matrices are the decayed ones).
    """
    undecayed = set() if attention else {id(w) for m in model.modules() if isinstance(m, DiSA)
                                         for w in (m.w1.weight, m.w2.weight)}
    decay, plain = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 and not name.startswith("embed.") and id(p) not in undecayed else plain).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def count_parameters(module: nn.Module) -> int:
    """Number of scalars in the module's parameters."""
    return sum(p.numel() for p in module.parameters())


def paper_parameters(model: TextModel) -> int:
    """The model's parameters without its word embeddings, as the paper counts them."""
    return count_parameters(model) - count_parameters(model.embed)
