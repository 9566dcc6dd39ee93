"""Erasure curves, plausibility and agreement of every explanation of a checkpoint's predictions, one JSON line
per sentence and explanation:

    python -m disan faithfulness CHECKPOINT [--split test] [--sentences N] [--seed S] --out FILE.jsonl

Every explanation of the registry (:mod:`disan.analyses.explainers`) is run, the expensive ones that the
Faithfulness page leaves out (captum's, where it is installed) among them. Each record holds the input's
tokens, the explanation, its scores and its ranking (indices into ``places``, the (sentence,
position) pairs ranked, most important first), f(x) and, for each k, f after removing the top-k tokens
and f keeping only them (:mod:`disan.analyses.faithfulness`), so that every figure can be
recomputed without the tool. A random ranking is one record per draw ("random 1", ...). ``tau`` gives
Kendall's tau-b of the record's scores with each other explanation of the input (a random draw's: with each
explanation), the scores ranked as they stand. For a model of the Stanford Sentiment Treebank (sst5, sst2),
``labels`` are the human labels 0..4 of the places and an explanation's record has ``ap``, the average
precision of its ranking of the tokens humans marked (not neutral; a signed explanation ranked by
magnitude), ``null_ap``, random scores' (:mod:`disan.analyses.plausibility`), and ``left_out``, why a
sentence has none; for any other model ``labels`` is null and ``no_labels`` says why. The corpus summary
(erasure, plausibility, the agreement matrix) goes to standard error.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from disan.data.choices import SPLITS
from disan.data.paths import CHECKPOINT_HELP
from disan.analyses.choices import BOTH, REMOVALS
from disan.tools import invoked

# The analyses (torch, pandas, plotly) are imported by the functions that run them: ``disan faithfulness
# --help`` imports this module and needs none of them.

SENTENCES = 100


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{invoked()} faithfulness", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help=CHECKPOINT_HELP)
    p.add_argument("--split", default="test", choices=SPLITS, help="the split of its data sampled (default: test)")
    p.add_argument("--sentences", type=int, default=SENTENCES,
                   help=f"inputs sampled, seeded by --seed (default: {SENTENCES})")
    p.add_argument("--seed", type=int, default=0, help="the sample's and the random rankings' seed (default: 0)")
    p.add_argument("--removal", default="delete", choices=REMOVALS, help="remove tokens by deleting them or as "
                                                                          "<unk> (default: delete)")
    p.add_argument("--side", default=BOTH, help="pair models: the sentence ranked and removed (premise or "
                                                 "hypothesis; default: both)")
    p.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    return p


def finite(values) -> list:
    """Numbers for JSON: NaN (no score, an undefined tau) as null."""
    return [float(v) if math.isfinite(v) else None for v in values]


def lines(records, ks, agreement=None, labels=None, plausible=None, reason: str = "") -> list[dict]:
    """The JSON records of :func:`~disan.analyses.faithfulness.erasure_records`' results; ``agreement``, the
    erasure summary's (each record's ``tau``); ``labels``, per record the human labels of its places, and
    ``plausible``, the :class:`~disan.analyses.plausibility.Plausibility` of the records' scores (None, and
    ``reason``, for a model without labels)."""
    from disan.analyses import faithfulness as F
    out = []
    aps = {} if plausible is None else {(row["sentence"], row["explanation"]): row
                                        for row in plausible.sentences.to_dict("records")}
    for i, r in enumerate(records):
        named = [(name, r.rankings[name], r.removed[name], r.only[name]) for name in r.rankings]
        drawn = [(f"{F.RANDOM} {d + 1}", order, r.random_removed[d], r.random_only[d])
                 for d, order in enumerate(r.random_rankings)]
        for j, (name, order, removed, only) in enumerate(named + drawn):
            line = {"tokens": r.tokens, "places": [list(p) for p in r.places], "explanation": name}
            if name in r.scores:
                line["scores"] = finite(r.scores[name])
            line |= {"ranking": list(order), "f": r.value,
                     "k": [{"fraction": k, "tokens": F.top_count(k, len(r.places)), "f_removed": float(a),
                            "f_only": float(b)} for k, a, b in zip(ks, removed, only)]}
            if agreement is not None:
                taus = agreement.taus[i, j] if j < len(named) else agreement.null_taus[i, j - len(named)]
                line["tau"] = dict(zip(agreement.names, finite(taus)))
                line["tau"].pop(name, None)
            if labels is not None:
                line["labels"] = [int(v) for v in labels[i]]
                if (i, name) in aps:
                    row = aps[i, name]
                    line |= {"ap": finite([row["ap"]])[0], "null_ap": finite([row["null ap"]])[0],
                             "left_out": row["left out"]}
            elif reason:
                line |= {"labels": None, "no_labels": reason}
            out.append(line)
    return out


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    import torch

    from disan.analyses import faithfulness as F
    from disan.analyses.corpus import trained_items
    from disan.analyses.plausibility import plausibility
    from disan.data.treebank import trained_labels
    from disan.inspect.pipeline import load
    from disan.render.faithfulness import agreement_matrix, plausibility_table
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        if args.sentences < 1:
            raise ValueError("--sentences must be at least 1")
        pipe = load(args.checkpoint)
        settings = F.Settings(removal=args.removal, side=args.side, seed=args.seed)
        items = trained_items(pipe.config, args.split, args.sentences, args.seed)
        human = trained_labels(pipe.config, items, args.split)
        records = F.erasure_records(pipe, items, settings)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    summary = F.erasure_summary(records, settings)
    plausible = None
    if human.labels is not None:
        plausible = plausibility([r.scores for r in records], F.signs(pipe, settings), human.labels,
                                 seed=settings.seed, resamples=settings.resamples)
    with open(args.out, "w", encoding="utf-8") as f:
        for line in lines(records, settings.ks, summary.agreement, human.labels, plausible, human.reason):
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(summary.table.to_string(index=False), file=sys.stderr)
    if plausible is None:
        print(f"\nNo plausibility: {human.reason}.", file=sys.stderr)
    else:
        print(f"\nPlausibility: average precision of the tokens humans marked, against random scores "
              f"({len(records)} inputs):", file=sys.stderr)
        print(plausibility_table(plausible.summary).to_string(index=False), file=sys.stderr)
    print(f"\nAgreement: mean Kendall's tau-b between explanations over {len(records)} inputs, the scores ranked as "
          f"they stand; {F.RANDOM}: with random rankings of the same tokens (the null):", file=sys.stderr)
    print(agreement_matrix(summary.agreement).to_string(index=False), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
