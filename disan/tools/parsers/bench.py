"""Speed and memory of a DiSAN training step against the dense reference and the baselines.

The ``bench`` command's arguments, and the models and sizes :mod:`disan.tools.bench` times.
"""
from __future__ import annotations

import argparse
from typing import NamedTuple

from disan.data.choices import BATCHINGS, BENCHMARK_NAMES, SST_NODES
from disan.data.glove100 import DIMENSIONS
from disan.nn.choices import D_H

BATCH, DIM = 64, D_H


class Model(NamedTuple):
    """What a row of the table runs."""
    encoder: str            # of disan.nn.baselines.ENCODERS
    kernel: str             # DiSANConfig.kernel
    compiled: bool = False  # the model under torch.compile (its default backend, inductor)


MODELS = {
    "reference": Model("disan", "dense"),
    "fast": Model("disan", "auto"),
    "eager": Model("disan", "eager"),
    "compiled": Model("disan", "dense", compiled=True),
    "bilstm": Model("bilstm", "auto"),
    "multihead": Model("multihead", "auto"),
}
# --epoch's word vectors: training's (GloVe; :func:`disan.data.vectors.default_source`), or random rows
# of RANDOM_DIM features drawn as training draws the rows of words GloVe lacks, so that no GloVe file is needed
VECTORS = ("glove", "random")
RANDOM_DIM = DIMENSIONS  # what training uses once GloVe 100d is fetched, as the shipped checkpoints do


def parser() -> argparse.ArgumentParser:
    """The ``bench`` command's arguments."""
    p = argparse.ArgumentParser(prog="python -m disan bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="n in 10, 40 and fewer repeats")
    p.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], help="comma-separated lengths n")
    p.add_argument("--models", type=lambda s: s.split(","), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--batch", type=lambda s: [int(v) for v in s.split(",")], default=[BATCH],
                   help=f"comma-separated batch sizes B of the table (default {BATCH})")
    p.add_argument("--dim", type=int, default=DIM, help=f"the table's d_e = d_h (default {DIM})")
    p.add_argument("--forward-only", action="store_true",
                   help="time the forward pass alone (eval mode, no autograd) instead of a training step")
    p.add_argument("--no-trace", dest="trace", action="store_false",
                   help="leave out the single-sentence trace latency after the table")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, help="torch threads (default: PyTorch's)")
    p.add_argument("--repeats", type=int, help="timed steps (default 5, quick 3)")
    p.add_argument("--warmup", type=int, help="untimed steps first (default 2, quick 1)")
    p.add_argument("--mem-cap-gb", type=float, default=12.0, help="skip dense configurations estimated above this")
    p.add_argument("--ops", action="store_true", help="micro-benchmark the operations that bound a step")
    p.add_argument("--embedding", action="store_true",
                   help="a step with 50k extra words as learned rows against frozen float16 rows")
    p.add_argument("--predict", action="store_true",
                   help="sentences/s of batch prediction on SST, DiSAN against the Bi-LSTM (one thread by default)")
    p.add_argument("--epoch", action="store_true",
                   help="one training epoch on a task's real data, per model and batching (models: fast, bilstm)")
    p.add_argument("--task", default="sst5", choices=BENCHMARK_NAMES, help="with --epoch: the task whose training data is timed")
    p.add_argument("--sst-nodes", choices=SST_NODES,
                   help="with --epoch on SST: the training nodes (default: training's; oversampled: the authors')")
    p.add_argument("--batching", type=lambda s: s.split(","), default=list(BATCHINGS),
                   help="with --epoch: comma-separated, of " + ", ".join(BATCHINGS))
    p.add_argument("--sample", type=int, default=300,
                   help="with --epoch: timed batches per configuration, a uniform sample of the epoch's (0: all)")
    p.add_argument("--vectors", choices=VECTORS, default="glove",
                   help=f"with --epoch: training's GloVe, or random vectors of {RANDOM_DIM} features (no GloVe "
                        f"read; without the data, a synthetic corpus with SST-5's training lengths)")
    p.add_argument("--worker", choices=("step", "trace"), help=argparse.SUPPRESS)
    p.add_argument("--model", choices=list(MODELS), help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    return p
