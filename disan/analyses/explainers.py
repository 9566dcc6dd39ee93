"""The explanations of a prediction that the Faithfulness and Attribution analyses compare, one registry
entry each: adding an explanation is one :class:`Explainer` given to :func:`register`.

Every entry states its contract as fields:

* ``name``: what the tables call it; a ``per_block`` entry is one explanation per DiSA block, named
  "{name} · {block}";
* ``needs``: what it is computed from, one of :data:`NEEDS`: the dense trace of each sentence (one traced
  forward pass, which every entry that needs it shares), gradients, or forward passes of edited inputs;
* ``cost``: one of :data:`COSTS`. A page runs the :data:`CHEAP` and :data:`MODERATE` ones (:func:`on_pages`)
  and leaves the :data:`EXPENSIVE` ones to ``disan faithfulness``, which runs every entry;
* ``explains``: the output it explains, one of :data:`EXPLAINS`: f, the followed output (the probability of
  the predicted class; for relatedness, the expected score), or the forward pass that makes the prediction,
  read as it runs (attention follows no output);
* ``signed``: whether a score may be negative, evidence against f;
* ``attention``: how token2token (or source2token) attention becomes a token's score, in words; None for
  an explanation that does not read attention. The received lift is the mean over the features whatever
  feature a page's heatmap shows;
* ``seed``: the seed of its draws (with each input's place in the sample, as :func:`seeded` gives them, so
  that an input's scores do not depend on the inputs computed with it); None where it draws nothing.

An entry returns one score per token of each sentence of the input (both sides of a pair) through
``read`` (the scores of one sentence's dense trace) or ``compute`` (the scores of a :class:`Batch` of
prepared inputs), each keyed by block for a ``per_block`` entry and by None otherwise.

**The ranking rule**, one for every explanation and every analysis: tokens rank by their score as it
stands, highest first (ties in position order, NaN, no score, last: :func:`ranking`). A signed score is
not folded into its magnitude: evidence for f ranks first and evidence against it last. Erasure removes
tokens in this order; the randomisation checks (Spearman's ρ) and the Attribution page (Kendall's τ against
attention) compare these orders.

captum's methods are entries too where captum is installed (the ``[captum]`` extra): ``saliency``
(captum's ``Saliency``) and ``attention IG`` (``LayerIntegratedGradients`` on each DiSA block's
``hook_attention``). Both run captum one input at a time, and captum's hooks act in every thread: they
are expensive, left to the command line.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from disan.data.batching import length_batches, pad
from disan.data.text import PAD_ID, UNK_ID, check_text
from disan.analyses.choices import BOTH
from disan.analyses.gradients import GRADIENT_INPUT, INTEGRATED, Attribution, integrated_gradients
from disan.inspect import measures
from disan.inspect.batched import traces
from disan.inspect.pipeline import SentenceTrace
from disan.nn.hooks import recorded, this_thread

TRACE, GRADIENTS, PASSES = "dense trace", "gradients", "forward passes"
NEEDS = (TRACE, GRADIENTS, PASSES)
# cheap: read off the traced forward pass; moderate: a few passes per input, batched over the inputs;
# expensive: many passes per input, or one input at a time
CHEAP = "cheap"
MODERATE = "moderate"
EXPENSIVE = "expensive"
COSTS = (CHEAP, MODERATE, EXPENSIVE)
FOLLOWED, FORWARD = "the followed output", "the forward pass"
EXPLAINS = (FOLLOWED, FORWARD)
SOURCE2TOKEN = "source2token"
ATTENTION_LIFT = "attention lift"  # the entry of the attention each DiSA block's heatmap shows (received lift)
RANDOM = "random"  # the null's rankings: a name no explanation may take
ATTENTION_STEPS = 32  # the attention IG's points on its path (captum's Gauss-Legendre quadrature)


def ranking(scores: np.ndarray) -> list[int]:
    """Positions by score, highest first; ties keep position order; NaN (no score) last: the ranking rule."""
    scores = np.asarray(scores, dtype=float)
    return [int(i) for i in np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")]


# ---------------------------------------------------------------- inputs and the followed output

@dataclass
class Item:
    """One input: its sentences' tokens and ids, the followed target and f(x)."""
    tokens: list[list[str]]    # per sentence of the input
    ids: list[list[int]]
    target: int | None         # the class whose probability is followed; None: the relatedness score
    value: float               # f(x)
    places: list[tuple[int, int]]  # (sentence, position) of the tokens ranked and removed, in order


def sides_of(pipe, side: str) -> list[int]:
    """The sentences of an input that are ranked and removed: all for "both", else the one named."""
    names = pipe.sides
    if side == BOTH:
        return list(range(len(names)))
    if side not in names:
        raise ValueError(f"side must be {BOTH!r} or one of {tuple(names)}, not {side!r}")
    return [names.index(side)]


def tokens_of(pipe, item) -> list[list[str]]:
    """The tokens of each sentence of an input (a text, or a (premise, hypothesis) pair for a pair model); bad
    input raises ValueError with the reason."""
    return [check_text(t) for t in pipe.texts(item)]


def prepare(pipe, items: Sequence, side: str = BOTH) -> list[Item]:
    """The inputs (texts, or (premise, hypothesis) pairs for a pair model) tokenised (:func:`tokens_of`), as
    :func:`from_tokens` prepares them."""
    return from_tokens(pipe, [tokens_of(pipe, item) for item in items], side)


def from_tokens(pipe, inputs: Sequence[Sequence[Sequence[str]]], side: str = BOTH) -> list[Item]:
    """Inputs given as the tokens of each of their sentences (as a trace holds them: nothing is tokenised
    again), with their predicted target and f(x); the tokens of ``side`` (:func:`sides_of`) ranked."""
    chosen = sides_of(pipe, side)
    out = []
    for sentences in inputs:
        tokens = [list(t) for t in sentences]
        out.append(Item(tokens, [pipe.vocab.encode(t) for t in tokens], None, float("nan"),
                        [(s, p) for s in chosen for p in range(len(tokens[s]))]))
    logits = _logits(pipe, [tuple(it.ids) for it in out])
    for it, row in zip(out, logits):
        it.target = None if pipe.model.kind.scored else int(pipe.model.kind.read(row))
        it.value = float(_followed(pipe, row[None], it.target)[0])
    return out


def _followed(pipe, logits: torch.Tensor, target: int | None) -> np.ndarray:
    """(B,) f of logits (B, K): class ``target``'s probability, or the relatedness score."""
    if target is None:
        return pipe.model.kind.read(logits).double().numpy()
    return logits.softmax(dim=-1)[:, target].double().numpy()


@torch.inference_mode()
def _logits(pipe, inputs: Sequence[tuple[Sequence[int], ...]]) -> torch.Tensor:
    """(N, K) logits on the CPU of inputs given as ids per sentence, in length-bucketed batches on the fast
    path. An empty sentence is a row of padding (it encodes to zeros)."""
    out = torch.empty(len(inputs), pipe.model.cfg.n_classes)
    lengths = [max(max(len(s) for s in x), 1) for x in inputs]
    for idx in length_batches(lengths):
        columns = []
        for k in range(len(inputs[idx[0]])):
            ids = pad([list(inputs[i][k]) or [PAD_ID] for i in idx]).to(pipe.device)
            columns.append(ids)
        out[idx] = pipe.model(*columns).float().cpu()
    return out


def values(pipe, inputs: Sequence[tuple[tuple[int, ...], ...]], targets: Sequence[int | None],
           known: dict | None = None) -> np.ndarray:
    """(N,) f of each edited input for its target; each distinct (input, target) runs once, and not at all
    when ``known`` (a dict from (input, target) to f, filled here) has it: leave-one-out's inputs are
    erasure's top-1 removals."""
    known = {} if known is None else known
    keys = [key for key in dict.fromkeys(zip(inputs, targets)) if key not in known]
    if keys:
        logits = _logits(pipe, [key[0] for key in keys])
        if pipe.model.kind.scored:
            got = _followed(pipe, logits, None)
        else:  # each row's own target class
            got = logits.softmax(dim=-1).gather(1, torch.tensor([[key[1]] for key in keys]))[:, 0].double().numpy()
        known.update(zip(keys, got.tolist()))
    return np.array([known[key] for key in zip(inputs, targets)], dtype=float)


def edited(item: Item, chosen: Sequence[int], keep: bool, removal: str) -> tuple[tuple[int, ...], ...]:
    """The input with the ranked tokens at ``chosen`` (indices into ``item.places``) removed, or (``keep``)
    with every other ranked token removed; removal is deletion or ``<unk>``."""
    hit = {item.places[c] for c in chosen}
    ranked = set(item.places)
    out = []
    for s, ids in enumerate(item.ids):
        row = []
        for p, token in enumerate(ids):
            gone = (((s, p) not in hit) if keep else ((s, p) in hit)) and (s, p) in ranked
            if not gone:
                row.append(token)
            elif removal == "unk":
                row.append(UNK_ID)
        out.append(tuple(row))
    return tuple(out)


# ---------------------------------------------------------------- what the explanations of some inputs share

@dataclass
class Batch:
    """Prepared inputs whose explanations are computed together, and what the explanations share, made when
    one first asks for it."""
    pipe: Any
    items: Sequence[Item]
    places: Sequence[int]     # the inputs' places in the whole sample, which seed an explanation's draws
    removal: str = "delete"   # how an explanation that edits the input removes a token (REMOVALS)
    known: dict = dataclasses.field(default_factory=dict)  # f of the edited inputs run so far (values)

    @functools.cached_property
    def traces(self) -> list[list[SentenceTrace]]:
        """Every sentence of every input traced (every intermediate), in batches of similar length."""
        flat = [(i, s) for i, it in enumerate(self.items) for s in range(len(it.tokens))]
        out = [[None] * len(it.tokens) for it in self.items]
        for batch, trace in traces(self.pipe, [self.items[i].tokens[s] for i, s in flat]):
            for b, k in enumerate(batch):
                i, s = flat[k]
                tokens = self.items[i].tokens[s]
                out[i][s] = SentenceTrace(" ".join(tokens), tokens, self.items[i].ids[s], trace[b])
        return out

    @functools.cached_property
    def gradients(self) -> list[Attribution]:
        """Each input's gradient × input and integrated gradients, with the fewest steps whose completeness
        gap is small (:func:`disan.analyses.gradients.integrated_gradients`)."""
        return integrated_gradients(self.pipe, self.traces)


def uniform_like(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Uniform attention over each query's valid keys (:func:`disan.inspect.measures.uniform_attention`),
    the same for every feature: (B, m, n, d), as P (B, m, n, d) is."""
    return measures.uniform_attention(mask, probs.dtype)[..., None].expand_as(probs)


def seeded(seed: int, place: int) -> np.random.Generator:
    """The generator of an explanation's draws for the input at ``place`` in the sample."""
    return np.random.default_rng([seed, place])


# ---------------------------------------------------------------- the registry

Scores = dict[str | None, list[np.ndarray]]  # block (None: not per block) -> per sentence (n,) scores


@dataclass(frozen=True)
class Explainer:
    """One explanation and its contract (the module's docstring says what each field means)."""
    name: str
    needs: str
    cost: str
    explains: str
    signed: bool
    attention: str | None
    read: Callable[[Any], dict[str | None, np.ndarray]] | None = None  # one sentence's trace -> its scores
    compute: Callable[[Batch], list[Scores]] | None = None             # a batch -> per input its scores
    per_block: bool = False
    seed: int | None = None

    def __post_init__(self):
        if (self.read is None) == (self.compute is None):
            raise ValueError(f"{self.name}: give read (scores off a trace) or compute (scores of a batch)")
        for field, allowed in (("needs", NEEDS), ("cost", COSTS), ("explains", EXPLAINS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{self.name}: {field} must be one of {allowed}, not {getattr(self, field)!r}")

    def names(self, pipe) -> list[str]:
        """The names of its explanations of ``pipe``'s model: one per DiSA block for a per-block entry."""
        if not self.per_block:
            return [self.name]
        return [self.named(b.name) for b in getattr(pipe.model.encoder, "blocks", [])]

    def named(self, block: str | None) -> str:
        """The name of its explanation of ``block`` (None: the only one)."""
        return self.name if block is None else f"{self.name} · {block}"

    def scores(self, batch: Batch) -> list[Scores]:
        """Per input of the batch, its scores by block (None: not per block), per sentence."""
        if self.compute is not None:
            return self.compute(batch)
        out = []
        for sentences in batch.traces:
            per: Scores = {}
            for sentence in sentences:
                for block, got in self.read(sentence.trace).items():
                    per.setdefault(block, []).append(got)
            out.append(per)
        return out


EXPLAINERS: dict[str, Explainer] = {}


def register(explainer: Explainer) -> Explainer:
    """Add an explanation to the registry (after those there: the tables' order); a name taken, or the null's,
    is refused."""
    if explainer.name in EXPLAINERS or explainer.name.startswith(RANDOM):
        raise ValueError(f"an explanation is named {explainer.name!r} already")
    EXPLAINERS[explainer.name] = explainer
    return explainer


def chosen(names: Sequence[str] | None = None) -> list[Explainer]:
    """The registry's entries named (None: every one), in the registry's order; ValueError for an unknown name."""
    if names is None:
        return list(EXPLAINERS.values())
    unknown = [n for n in names if n not in EXPLAINERS]
    if unknown:
        raise ValueError(f"no explanation is named {unknown[0]!r}; there are {', '.join(EXPLAINERS)}")
    return [e for e in EXPLAINERS.values() if e.name in names]


def on_pages() -> tuple[str, ...]:
    """The explanations a page runs: every one but the expensive ones."""
    return tuple(e.name for e in EXPLAINERS.values() if e.cost != EXPENSIVE)


def on_command_only() -> tuple[str, ...]:
    """The explanations a page leaves to ``disan faithfulness`` for their cost: the expensive ones."""
    return tuple(e.name for e in EXPLAINERS.values() if e.cost == EXPENSIVE)


# ---------------------------------------------------------------- the entries

def source2token_importance(trace) -> dict[None, np.ndarray]:
    if trace.source2token is None:
        return {}
    return {None: measures.token_importance(trace.source2token.probs)}


def received_lifts(trace) -> dict[str, np.ndarray]:
    return {block.name: measures.received_lift(block.probs, block.mask) for block in trace.blocks}


def gate_weighted(trace) -> dict[str, np.ndarray]:
    return {block.name: measures.gate_weighted_received(block.probs, block.gate).double().numpy()
            for block in trace.blocks}


def gradient_method(name: str) -> Callable[[Batch], list[Scores]]:
    """The compute of one of the gradient attributions of :class:`~disan.analyses.gradients.Attribution`."""
    return lambda batch: [{None: attr.method(name)} for attr in batch.gradients]


def leave_one_out(batch: Batch) -> list[Scores]:
    """f(x) − f(x without token i), the token removed as ``batch.removal`` says, for every token."""
    inputs, targets = [], []
    for item in batch.items:
        every = dataclasses.replace(item, places=[(s, p) for s, t in enumerate(item.tokens) for p in range(len(t))])
        inputs += [edited(every, [c], False, batch.removal) for c in range(len(every.places))]
        targets += [item.target] * len(every.places)
    without = values(batch.pipe, inputs, targets, batch.known)
    out, start = [], 0
    for item in batch.items:
        per = []
        for tokens in item.tokens:
            per.append(item.value - without[start:start + len(tokens)])
            start += len(tokens)
        out.append({None: per})
    return out


register(Explainer(SOURCE2TOKEN, TRACE, CHEAP, FORWARD, signed=False,
                   attention="importance: the mean over features of source2token's attention to the token",
                   read=source2token_importance))
register(Explainer(ATTENTION_LIFT, TRACE, CHEAP, FORWARD, signed=False,
                   attention="received lift: the attention the token receives from every query, mean over "
                             "features, ÷ what uniform attention over the same keys gives (NaN where no query "
                             "may attend it)", read=received_lifts, per_block=True))
register(Explainer("gate-weighted", TRACE, CHEAP, FORWARD, signed=False,
                   attention="gate-weighted received: mean over features of Σ_j (1 − F[j, k]) P[j, i, k], the "
                             "attention received discounted by the queries' fusion gates",
                   read=gate_weighted, per_block=True))
register(Explainer(GRADIENT_INPUT, GRADIENTS, MODERATE, FOLLOWED, signed=True, attention=None,
                   compute=gradient_method(GRADIENT_INPUT)))
register(Explainer(INTEGRATED, GRADIENTS, MODERATE, FOLLOWED, signed=True, attention=None,
                   compute=gradient_method(INTEGRATED)))
register(Explainer("leave-one-out", PASSES, MODERATE, FOLLOWED, signed=True, attention=None,
                   compute=leave_one_out))


# ---------------------------------------------------------------- captum's methods, where captum is installed

def captum_output(model, logits: torch.Tensor) -> torch.Tensor:
    """f of logits (B, K) as captum takes it: the class probabilities (captum picks the target's column), or
    the relatedness score."""
    return model.kind.read(logits) if model.kind.scored else logits.softmax(dim=-1)


def saliency(batch: Batch) -> list[Scores]:
    """captum's Saliency: |df/dx_i| summed over the embedding dimensions, per token (one input at a time)."""
    from captum.attr import Saliency

    model = batch.pipe.model
    out = []
    for item in batch.items:
        ids = [torch.tensor([i], device=batch.pipe.device) for i in item.ids]
        pads = [i != PAD_ID for i in ids]

        def forward(*x):
            return captum_output(model, model.head(*(model.encoder(e, p.expand(len(e), -1)) for e, p in zip(x, pads))))

        with torch.no_grad():
            x = tuple(model.embed(i).requires_grad_() for i in ids)
        grads = Saliency(forward).attribute(x, target=item.target, abs=True)
        out.append({None: [g.sum(dim=-1)[0].detach().double().cpu().numpy() for g in grads]})
    return out


def attention_ig(batch: Batch) -> list[Scores]:
    """captum's LayerIntegratedGradients on each DiSA block's ``hook_attention``, one sentence at a time (the
    others' encodings held): the path runs from uniform attention over each query's keys to P, and a token
    receives the attributions of the cells P[j, i, ·] that attend it, summed over the queries and features."""
    model = batch.pipe.model
    out = []
    for item in batch.items:
        ids = [torch.tensor([i], device=batch.pipe.device) for i in item.ids]
        with torch.no_grad():
            x = [model.embed(i) for i in ids]
            encodings = [model.encoder(e, i != PAD_ID) for e, i in zip(x, ids)]
        per: Scores = {}
        for block in getattr(model.encoder, "blocks", []):
            for k in range(len(ids)):
                per.setdefault(block.name, []).append(
                    _attention_ig_of(model, block, x[k], ids[k] != PAD_ID, encodings, k, item.target))
        out.append(per)
    return out


def _attention_ig_of(model, block, x, pad_mask, encodings, k, target) -> np.ndarray:
    """(n,) :func:`attention_ig` of sentence ``k`` of an input (word vectors ``x`` (1, n, d_e)) in one block."""
    from captum.attr import LayerIntegratedGradients

    # captum's baselines are inputs of the forward function: ``uniform`` says which rows of a batch run with
    # P made uniform (the baseline); the path between runs with P as captum sets it, after this hook
    rows: dict = {}

    def forward(x, uniform):
        rows["uniform"] = uniform
        encs = [e.expand(len(x), -1) for e in encodings]
        encs[k] = model.encoder(x, pad_mask.expand(len(x), -1))
        return captum_output(model, model.head(*encs))

    def baseline(module, args, probs):
        return torch.where(rows["uniform"][:, None, None, None] > 0, uniform_like(probs, seen["mask"]), probs)

    with recorded({"mask": block.hook_mask}) as seen:
        handle = block.hook_attention.register_forward_hook(this_thread(baseline))
        try:
            lig = LayerIntegratedGradients(forward, block.hook_attention)
            got = lig.attribute((x, torch.zeros(1, device=x.device)), baselines=(x, torch.ones(1, device=x.device)),
                                target=target, n_steps=ATTENTION_STEPS)
        finally:
            handle.remove()
    return got.sum(dim=(1, 3))[0].detach().double().cpu().numpy()


if importlib.util.find_spec("captum") is not None:
    register(Explainer("saliency", GRADIENTS, EXPENSIVE, FOLLOWED, signed=False, attention=None,
                       compute=saliency))
    register(Explainer("attention IG", GRADIENTS, EXPENSIVE, FOLLOWED, signed=True,
                       attention="received attribution: integrated gradients of f on each cell P[j, i, k] from "
                                 "uniform attention over the same keys, summed over the queries j and features k",
                       compute=attention_ig, per_block=True))
