"""The public entry point: ``disan.load(path)`` -> a pipeline that predicts and traces raw text."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from disan.data.batching import pad
from disan.data.text import MAX_CHARS, MAX_TOKENS, check_text  # noqa: F401 (the app and tests read the limits here)
from disan.nn import checkpoint
from disan.nn.heads import relatedness_score
from disan.nn.model import EncoderTrace


@dataclass
class Prediction:
    label: str                  # the predicted class (relatedness: the rounded score)
    probs: dict[str, float]     # class (or score level) -> probability
    score: float | None = None  # relatedness only: the expected score


@dataclass
class SentenceTrace:
    text: str
    tokens: list[str]           # as typed (original spelling)
    ids: list[int]              # vocabulary ids; 1 = unknown word
    trace: EncoderTrace         # one sentence: probs (n, n, d_h) [j, i, k], gates (n, d_h), ...
    model: str = ""             # the name of the model that traced it (its checkpoint directory)

    @property
    def unknown(self) -> list[str]:
        return [t for t, i in zip(self.tokens, self.ids) if i == 1]


@dataclass
class TraceResult:
    prediction: Prediction
    sentence: SentenceTrace | None = None      # single-sentence models
    premise: SentenceTrace | None = None       # sentence-pair models
    hypothesis: SentenceTrace | None = None

    @property
    def sentences(self) -> list[SentenceTrace]:
        return [s for s in (self.sentence, self.premise, self.hypothesis) if s is not None]

    @property
    def unknown(self) -> list[str]:
        """The words of the input that the vocabulary lacks (embedded as <unk>), sorted, each once."""
        return sorted({t for s in self.sentences for t in s.unknown})


class Pipeline:
    """A loaded checkpoint: ``predict`` and ``trace`` on raw text. The model is never modified."""

    def __init__(self, model, vocab, config: dict, metrics: dict, path: Path | None = None):
        self.model, self.vocab, self.config, self.metrics, self.path = model, vocab, config, metrics, path
        self.kind: str = model.cfg.kind
        self.labels: list[str] = list(config.get("labels") or [str(i) for i in range(model.cfg.n_classes)])
        self.task: str = config.get("task", "?")
        # what figures name the model by: the checkpoint directory (an interrupted save's ".prev" left out)
        self.name: str = path.name.removesuffix(".prev") if path is not None else self.task

    @property
    def is_pair(self) -> bool:
        return self.kind in ("pair", "relatedness")

    def _inputs(self, texts) -> tuple[list, ...]:
        """Token lists of every input; a pair model takes (premise, hypothesis) tuples."""
        if isinstance(texts, (str, tuple)):
            raise ValueError("predict takes a list of inputs; use trace() for one input")
        columns = ([], []) if self.is_pair else ([],)
        for item in texts:
            if self.is_pair:
                if not (isinstance(item, (tuple, list)) and len(item) == 2):
                    raise ValueError("this is a sentence-pair model: give (premise, hypothesis) tuples")
                columns[0].append(check_text(item[0]))
                columns[1].append(check_text(item[1]))
            else:
                columns[0].append(check_text(item))
        return columns

    def _ids(self, token_lists) -> torch.Tensor:
        return pad([self.vocab.encode(t) for t in token_lists])

    def _prediction(self, logits: torch.Tensor) -> Prediction:
        probs = logits.softmax(dim=-1).tolist()
        if self.kind == "relatedness":
            score = float(relatedness_score(logits[None])[0])
            return Prediction(f"{score:.2f}", dict(zip(self.labels, probs)), score)
        return Prediction(self.labels[int(logits.argmax())], dict(zip(self.labels, probs)))

    @torch.no_grad()
    def predict(self, texts, batch_size: int = 64) -> list[Prediction]:
        columns = self._inputs(texts)
        out = []
        for start in range(0, len(columns[0]), batch_size):
            ids = [self._ids(c[start:start + batch_size]) for c in columns]
            out += [self._prediction(row) for row in self.model(*ids)]
        return out

    @torch.no_grad()
    def trace_sentence(self, text: str) -> SentenceTrace:
        """The encoder's trace of one sentence, whatever the head (pair models share one encoder)."""
        tokens = check_text(text)
        ids = self._ids([tokens])
        _, tr = self.model.encode(ids, trace=True)
        return SentenceTrace(text, tokens, ids[0].tolist(), tr[0], self.name)

    @torch.no_grad()
    def trace(self, text) -> TraceResult:
        """Prediction and every attention internal of one input (a text, or a (premise, hypothesis) pair)."""
        texts = list(text) if self.is_pair and isinstance(text, (tuple, list)) else [text]
        if self.is_pair and len(texts) != 2:
            raise ValueError("this is a sentence-pair model: give a (premise, hypothesis) pair")
        sentences = [self.trace_sentence(t) for t in texts]
        logits = self.model.head(*(s.trace.encoding[None] for s in sentences))[0]
        pred = self._prediction(logits)
        if self.is_pair:
            return TraceResult(pred, premise=sentences[0], hypothesis=sentences[1])
        return TraceResult(pred, sentence=sentences[0])


def load(path: str | Path, attention: str | None = None) -> Pipeline:
    """Load a checkpoint directory; raises :class:`disan.nn.checkpoint.CheckpointError` (a ValueError) with the reason."""
    model, vocab, config, metrics = checkpoint.load(path, attention)
    return Pipeline(model, vocab, config, metrics, checkpoint.resolve(path))
