"""Erasure curves of every explanation of a checkpoint's predictions, one JSON line per sentence and explanation:

    python -m disan faithfulness CHECKPOINT [--split test] [--sentences N] [--seed S] --out FILE.jsonl

Every explanation of the registry (:mod:`disan.analyses.explainers`) is run, the expensive ones that the
Faithfulness page leaves out (captum's, where it is installed) among them. Each record holds the input's
tokens, the explanation, its ranking (indices into ``places``, the (sentence,
position) pairs ranked, most important first), f(x) and, for each k, f after removing the top-k tokens
and f keeping only them (:mod:`disan.analyses.faithfulness`), so that every figure can be
recomputed without the tool. A random ranking is one record per draw ("random 1", ...). The corpus
summary goes to standard error.
"""
from __future__ import annotations

import argparse
import json
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


def lines(records, ks) -> list[dict]:
    """The JSON records of :func:`~disan.analyses.faithfulness.erasure_records`' results."""
    from disan.analyses import faithfulness as F
    out = []
    for r in records:
        named = [(name, r.rankings[name], r.removed[name], r.only[name]) for name in r.rankings]
        drawn = [(f"{F.RANDOM} {d + 1}", order, r.random_removed[d], r.random_only[d])
                 for d, order in enumerate(r.random_rankings)]
        for name, order, removed, only in named + drawn:
            out.append({"tokens": r.tokens, "places": [list(p) for p in r.places], "explanation": name,
                        "ranking": list(order), "f": r.value,
                        "k": [{"fraction": k, "tokens": F.top_count(k, len(r.places)), "f_removed": float(a),
                               "f_only": float(b)} for k, a, b in zip(ks, removed, only)]})
    return out


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    import torch

    from disan.analyses import faithfulness as F
    from disan.analyses.corpus import trained_items
    from disan.inspect.pipeline import load
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        if args.sentences < 1:
            raise ValueError("--sentences must be at least 1")
        pipe = load(args.checkpoint)
        settings = F.Settings(removal=args.removal, side=args.side, seed=args.seed)
        items = trained_items(pipe.config, args.split, args.sentences, args.seed)
        records = F.erasure_records(pipe, items, settings)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        for line in lines(records, settings.ks):
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(F.erasure_summary(records, settings).table.to_string(index=False), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
