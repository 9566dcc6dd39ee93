"""The public entry point: ``disan.load(path)`` -> a pipeline that predicts and traces raw text."""
from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from disan.data.batching import length_batches, pad
from disan.data.text import UNK_ID, check_text
from disan.inspect.senses import vector_kinds
from disan.nn import checkpoint
from disan.nn.device import device_of
from disan.nn.heads import TextModel, paper_parameters
from disan.nn.hooks import HookPoint, hook_points, this_thread
from disan.nn.model import EncoderTrace

SHOWN_LABELS = 8  # the classes a Pipeline's or a Prediction's repr names

# How a prediction, a list of them or a trace shows itself in Jupyter: {class: function returning HTML}. The
# figures and tables live above this layer, so disan.viz fills it in when it is imported (disan.load imports it).
NOTEBOOK_HTML: dict[type, Callable[[object], str]] = {}


def notebook_html(value) -> str | None:
    """The HTML Jupyter shows for ``value``, or None (its plain repr) when no view is registered for its class."""
    view = NOTEBOOK_HTML.get(type(value))
    return view(value) if view else None


@dataclass
class Prediction:
    """What a model predicts for one input; in Jupyter, the class probabilities as a bar chart."""
    label: str                  # the predicted class (relatedness: the rounded score)
    probs: dict[str, float]     # class (or score level) -> probability
    score: float | None = None  # relatedness only: the expected score

    def __repr__(self) -> str:
        """The label, the probabilities to 4 decimals (of the first :data:`SHOWN_LABELS` classes; a user's
        own data may have many) and the score."""
        shown = [f"{label!r}: {p:.4f}" for label, p in list(self.probs.items())[:SHOWN_LABELS]]
        more = [f"… {len(self.probs) - SHOWN_LABELS} more"] if len(self.probs) > SHOWN_LABELS else []
        return f"Prediction(label={self.label!r}, probs={{{', '.join(shown + more)}}}, score={self.score!r})"

    def _repr_html_(self) -> str | None:
        return notebook_html(self)


SHOWN_PREDICTIONS = 5  # the predictions a list's repr writes out (each takes a line or two)


class Predictions(list):
    """What :meth:`Pipeline.predict` returns: a list of :class:`Prediction`, one per input, which Jupyter shows
    as a table (the predicted class and every class probability, a row per input) and a console as its
    first :data:`SHOWN_PREDICTIONS` and how many there are."""

    def __repr__(self) -> str:
        if len(self) <= SHOWN_PREDICTIONS:
            return super().__repr__()
        shown = ", ".join(map(repr, self[:SHOWN_PREDICTIONS]))
        return f"[{shown}, … {len(self) - SHOWN_PREDICTIONS:,} more ({len(self):,} predictions)]"

    def _repr_html_(self) -> str | None:
        return notebook_html(self)


SHOWN_CHARACTERS = 60  # the start of a sentence that a trace's repr quotes


@dataclass
class SentenceTrace:
    """One traced sentence: its text, tokens, vocabulary ids and the encoder's trace."""
    text: str
    tokens: list[str]           # as typed (original spelling)
    ids: list[int]              # vocabulary ids; UNK_ID = unknown word
    trace: EncoderTrace         # one sentence: probs (n, n, d_h) [j, i, k], gates (n, d_h), ...
    model: str = ""             # the name of the model that traced it (its checkpoint directory)

    @property
    def unknown(self) -> list[str]:
        """The tokens the vocabulary lacks (embedded as <unk>)."""
        return [t for t, i in zip(self.tokens, self.ids) if i == UNK_ID]

    def __repr__(self) -> str:
        """The sentence (its start), its counts of tokens and unknown words, the model and the trace's tensors
        by shape (:func:`disan.nn.model.shapes_repr`), not the numbers, which run to thousands of lines."""
        text = self.text if len(self.text) <= SHOWN_CHARACTERS else self.text[:SHOWN_CHARACTERS - 1] + "…"
        return (f"SentenceTrace({text!r}: {len(self.tokens)} tokens, {len(self.unknown)} unknown; "
                f"model={self.model!r}, trace={self.trace!r})")


@dataclass
class TraceResult:
    """The prediction for one input and the trace of each of its sentences."""
    prediction: Prediction
    sentence: SentenceTrace | None = None      # single-sentence models
    premise: SentenceTrace | None = None       # sentence-pair models
    hypothesis: SentenceTrace | None = None

    def _repr_html_(self) -> str | None:
        """Jupyter's display: the prediction and each sentence's forward and backward attention."""
        return notebook_html(self)

    @property
    def sentences(self) -> list[SentenceTrace]:
        """The traced sentences in order: the sentence, or the premise and the hypothesis."""
        return [s for s in (self.sentence, self.premise, self.hypothesis) if s is not None]

    @property
    def unknown(self) -> list[str]:
        """The words of the input that the vocabulary lacks (embedded as <unk>), sorted, each once."""
        return sorted({t for s in self.sentences for t in s.unknown})


def on_cpu(value):
    """A tensor, or a trace dataclass of tensors, with every tensor moved to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: on_cpu(getattr(value, f.name))
                                             for f in dataclasses.fields(value)})
    return value


def _on_device(mask, device):
    """A custom token2token mask (a tensor, a mapping of block names to tensors, or None) on ``device``."""
    if isinstance(mask, torch.Tensor):
        return mask.to(device)
    if isinstance(mask, Mapping):
        return {name: m.to(device) for name, m in mask.items()}
    return mask


@torch.no_grad()
def trace_ids(model: TextModel, ids: torch.Tensor, level: bool | str = True, t2t_mask=None) -> EncoderTrace:
    """The encoder's batched trace of ``ids`` (B, n) on the CPU, computed in eval mode (the model's
    train/eval mode is restored afterwards, so a training loop can trace its model between steps).

    ``level`` is the encoder's ``trace`` argument (see :meth:`disan.nn.model.DiSANEncoder.forward`):
    True for every intermediate, the attention probabilities included; ``"tokens"`` for the per-token
    ones only, computed on the fast path. ``t2t_mask`` removes token2token edges (a knockout).
    """
    was_training = model.training
    model.eval()
    try:
        _, trace = model.encode(ids, trace=level, t2t_mask=_on_device(t2t_mask, ids.device))
    finally:
        model.train(was_training)
    return on_cpu(trace)


@dataclass(frozen=True)
class Site:
    """Where a function of :meth:`Pipeline.hooks` is called: the hook point's name and the sentence encoded."""
    name: str   # "encoder.fw.hook_attention", ...
    side: str   # "sentence"; for a pair model "premise" or "hypothesis" (one encoder reads both, in turn)




class Pipeline:
    """A loaded checkpoint: ``predict`` and ``trace`` on raw text. The model is never modified.

    The inputs are made on the model's device; what ``predict`` and ``trace`` return is on the CPU,
    wherever the model runs, so that the app can turn it into arrays.
    """

    def __init__(self, model, vocab, config: dict, metrics: dict, path: Path | None = None):
        self.model, self.vocab, self.config, self.metrics, self.path = model, vocab, config, metrics, path
        self.device = device_of(model)
        self.kind: str = model.cfg.kind
        self.labels: list[str] = list(config.get("labels") or [str(i) for i in range(model.cfg.n_classes)])
        self.task: str = config.get("task", "?")
        # what figures name the model by: the checkpoint directory (an interrupted save's ".prev" left out)
        self.name: str = path.name.removesuffix(".prev") if path is not None else self.task

    def __repr__(self) -> str:
        """What a notebook shows for ``disan.load(...)``: the checkpoint, what it reads and predicts, its size."""
        cfg = self.model.cfg
        reads = "(premise, hypothesis) pairs" if self.is_pair else "sentences"
        if self.model.kind.scored:
            predicts = f"a score from {self.labels[0]} to {self.labels[-1]}"
        else:  # a user's own data may have many classes: the first few name them
            predicts = ", ".join(self.labels[:SHOWN_LABELS]) + (
                f", … ({len(self.labels)} classes)" if len(self.labels) > SHOWN_LABELS else "")
        return (f"Pipeline({self.name!r}: task {self.task}, reads {reads}, predicts {predicts}; "
                f"{cfg.encoder} encoder d_e {cfg.encoder_cfg.d_e}, d_h {cfg.encoder_cfg.d_h}, "
                f"{paper_parameters(self.model):,} parameters without the embeddings, "
                f"{len(self.vocab):,} words; on {self.device})")

    @functools.cached_property
    def hook_points(self) -> dict[str, HookPoint]:
        """The model's hook points by name (:mod:`disan.nn.hooks`): "encoder.fw.hook_attention", ..."""
        return hook_points(self.model)

    @property
    def sides(self) -> list[str]:
        """What :attr:`Site.side` says for each sentence of an input, in the order the encoder reads them."""
        return ["premise", "hypothesis"] if self.is_pair else ["sentence"]

    @contextmanager
    def hooks(self, functions: Mapping[str, Callable]) -> Iterator[None]:
        """Functions on hook points while the context is open: ``{name: fn}``, each called as ``fn(tensor, site)``
        with what the hook point outputs (batched, as the model computes it) and a :class:`Site`; a tensor it
        returns replaces the output, from which the model goes on (None keeps it). An unknown name is
        refused (ValueError) with the list of hook points. ::

            with pipe.hooks({"encoder.fw.hook_attention": lambda p, site: p.flip(2)}):
                pipe.predict(["a gorgeous, witty film"])
        """
        unknown = [name for name in functions if name not in self.hook_points]
        if unknown:
            raise ValueError(f"no hook point is named {unknown[0]!r}; the hook points are "
                             f"{', '.join(self.hook_points)}")
        encoded = [0]  # sentences the encoder has read: a pair model encodes the premise, then the hypothesis

        def count(module, args, output):
            encoded[0] += 1

        def call(name, fn):
            return lambda module, args, output: fn(output, Site(name, self.sides[encoded[0] % len(self.sides)]))

        # in this thread only: the app's sessions share one model, and another's forward pass runs meanwhile
        handles = [self.model.encoder.register_forward_hook(this_thread(count))]
        try:
            handles += [self.hook_points[name].register_forward_hook(this_thread(call(name, fn)))
                        for name, fn in functions.items()]
            yield
        finally:
            for handle in handles:
                handle.remove()

    def run_with_cache(self, text, names=None) -> tuple[Prediction, dict[str, torch.Tensor]]:
        """The prediction for one input (a text, or a (premise, hypothesis) pair) and what the hook points
        ``names`` (default: all) output on it, on the CPU with a batch axis of 1, by name; for a pair model by
        "premise/name" and "hypothesis/name". Every hook point is computed, P included."""
        cache = {}

        def keep(tensor, site):
            cache[site.name if not self.is_pair else f"{site.side}/{site.name}"] = tensor.detach().cpu()

        with self.hooks({name: keep for name in (self.hook_points if names is None else names)}):
            prediction = self.predict([tuple(text) if self.is_pair else text])[0]
        return prediction, cache

    @property
    def is_pair(self) -> bool:
        """Whether the model takes (premise, hypothesis) pairs."""
        return self.model.kind.pairs

    @functools.cached_property
    def vector_kinds(self) -> list[str]:
        """The per-token vectors this encoder has (keys of :data:`disan.inspect.senses.VECTORS`), read off
        the trace of a two-word sentence."""
        return vector_kinds(trace_ids(self.model, self.ids([["a", "word"]]), "tokens"))

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

    def ids(self, token_lists) -> torch.Tensor:
        """Token lists -> (B, n) vocabulary ids on the model's device, PAD_ID after each list (padding)."""
        return pad([self.vocab.encode(t) for t in token_lists]).to(self.device)

    def prediction(self, logits: torch.Tensor) -> Prediction:
        """The prediction that one row of logits (n_classes,) stands for."""
        probs = logits.softmax(dim=-1).tolist()
        read = self.model.kind.read(logits)  # the class index, or the score
        if self.model.kind.scored:
            return Prediction(f"{float(read):.2f}", dict(zip(self.labels, probs)), float(read))
        return Prediction(self.labels[int(read)], dict(zip(self.labels, probs)))

    @torch.inference_mode()
    def logits(self, columns, batch_size: int = 64) -> torch.Tensor:
        """Logits (N, n_classes) on the CPU, in input order, of N inputs given as token lists: one list
        of N for a sentence model, premise and hypothesis lists for a pair model. They run on the fast
        path in batches of ``batch_size`` inputs of similar length (little padding)."""
        lengths = [max(len(c[i]) for c in columns) for i in range(len(columns[0]))]
        out = torch.empty(len(lengths), self.model.cfg.n_classes)
        for idx in length_batches(lengths, max_batch=batch_size, budget=batch_size * max(lengths, default=1) ** 2):
            out[idx] = self.model(*(self.ids([c[i] for i in idx]) for c in columns)).float().cpu()
        return out

    def predict(self, texts, batch_size: int = 64) -> Predictions:
        """A prediction for each input of a list: texts, or (premise, hypothesis) tuples for a pair model,
        in the inputs' order (a :class:`Predictions`: in Jupyter, a table). Inputs are checked as
        :func:`disan.data.text.check_text` says (ValueError with the reason), then run as :meth:`logits` says."""
        return Predictions(self.prediction(row) for row in self.logits(self._inputs(texts), batch_size))

    @torch.no_grad()
    def trace_sentence(self, text: str) -> SentenceTrace:
        """The encoder's trace of one sentence, whatever the head (pair models share one encoder)."""
        return self.trace_tokens(check_text(text), text)

    @torch.no_grad()
    def trace_tokens(self, tokens: list[str], text: str | None = None, t2t_mask=None) -> SentenceTrace:
        """The trace of a sentence given as its tokens (an edited sentence keeps its tokens as they are;
        ``<unk>`` is the unknown word), with token2token edges removed by ``t2t_mask`` if given (see
        :meth:`disan.nn.model.DiSANEncoder.forward`). ``text`` defaults to the tokens joined by spaces."""
        if not tokens:
            raise ValueError("the sentence has no tokens")
        ids = self.ids([tokens])
        trace = trace_ids(self.model, ids, t2t_mask=t2t_mask)[0]
        return SentenceTrace(" ".join(tokens) if text is None else text, list(tokens), ids[0].tolist(), trace,
                             self.name)

    @torch.no_grad()
    def encode_tokens(self, token_lists, batch_size: int = 64) -> torch.Tensor:
        """Sentence encodings (B, d_out) of token lists on the CPU, computed in batches on the fast path."""
        parts = [self.model.encode(self.ids(token_lists[start:start + batch_size])).cpu()
                 for start in range(0, len(token_lists), batch_size)]
        return torch.cat(parts)

    @torch.no_grad()
    def predict_encodings(self, *encodings: torch.Tensor) -> Predictions:
        """Predictions from sentence encodings (B, d_out): one tensor for a sentence model, premise and
        hypothesis encodings for a pair model."""
        logits = self.model.head(*(e.to(self.device) for e in encodings)).cpu()
        return Predictions(self.prediction(row) for row in logits)

    def texts(self, text) -> list[str]:
        """The sentences of one input: ``[text]``, or ``[premise, hypothesis]`` for a pair model."""
        texts = list(text) if self.is_pair and isinstance(text, (tuple, list)) else [text]
        if self.is_pair and len(texts) != 2:
            raise ValueError("this is a sentence-pair model: give a (premise, hypothesis) pair")
        return texts

    @torch.no_grad()
    def trace(self, text) -> TraceResult:
        """Prediction and every attention internal of one input (a text, or a (premise, hypothesis) pair)."""
        return self.result([self.trace_sentence(t) for t in self.texts(text)])

    @torch.no_grad()
    def result(self, sentences: list[SentenceTrace]) -> TraceResult:
        """The prediction for traced sentences (one, or a premise and a hypothesis) and the sentences, as
        :meth:`trace` returns them: the head runs on the encodings their traces hold."""
        pred = self.predict_encodings(*(s.trace.encoding[None] for s in sentences))[0]
        if self.is_pair:
            return TraceResult(pred, premise=sentences[0], hypothesis=sentences[1])
        return TraceResult(pred, sentence=sentences[0])


def load(path: str | Path, kernel: str | None = None, device: str | torch.device = "cpu") -> Pipeline:
    """Load a checkpoint directory as :func:`disan.nn.checkpoint.load` does, its model on ``device`` (auto,
    cpu, cuda or cuda:N; the app keeps the CPU), ``kernel`` overriding its token2token path (see
    :mod:`disan.nn.kernels`); raises :class:`disan.nn.checkpoint.CheckpointError` (a ValueError) with the
    reason, and ValueError for a device that is not there."""
    pipe = Pipeline(*checkpoint.load(path, kernel, device), checkpoint.locate(path))
    missing = checkpoint.vectors_missing(pipe.config)
    if missing:  # said once (Python shows a warning once per place), in a notebook and on a command line alike
        warnings.warn(f"{pipe.name}: {missing}", UserWarning, stacklevel=2)
    return pipe
