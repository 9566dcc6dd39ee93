"""What ``disan bench`` runs (its arguments, models and sizes: :mod:`disan.tools.parsers.bench`).

    python -m disan bench                  # n in 10, 20, 40, 80, 160, and trace latency
    python -m disan bench --quick          # n in 10, 40, fewer repeats
    python -m disan bench --sizes 40 --models fast,bilstm
    python -m disan bench --batch 64,128 --forward-only   # two batch sizes, the forward pass alone
    python -m disan bench --ops            # element-wise throughput of this machine and the bound it sets
    python -m disan bench --embedding      # a step with 50k extra words learned, against them frozen
    python -m disan bench --device cuda
    python -m disan bench --predict        # sentences/s of batch prediction, DiSAN against the Bi-LSTM
    python -m disan bench --epoch          # an SST-5 training epoch, DiSAN against the Bi-LSTM,
                                           # bucketed against random batches (--sample 0: every batch)
    python -m disan bench --epoch --vectors random   # no GloVe read; without the data, a synthetic
                                           # corpus with SST-5's training lengths

A training step is forward + backward + Adadelta (lr 0.5) of a classifier (TextModel, 5 classes,
dropout on) on B = 64 full-length sentences of random ids, d_e = d_h = 300 (``--batch``, ``--dim``);
``--forward-only`` times the forward pass alone, in eval mode without autograd, as prediction runs
it. Models: ``reference`` (DiSAN with the dense attention, kernel "dense"), ``fast`` (DiSAN with
kernel "auto": the C++ kernel on a CPU, the Triton kernel on a GPU, or what DISAN_KERNEL names),
``eager`` (DiSAN with the eager kernel), ``compiled`` (the reference under ``torch.compile``),
``bilstm`` and ``multihead`` (the Table 1 baselines with source2token). The tables name the kernel
each DiSAN model ran on. Times are medians over several steps after warm-up.

Each (model, B, n) runs in a fresh subprocess, so that VmHWM (the peak resident set, from
/proc/self/status) is that configuration's alone. The memory table gives the peak minus the
resident set after building the model and its inputs, and the absolute peak in brackets (on
CUDA: torch.cuda.max_memory_allocated). The dense reference keeps several (B, n, n, d) tensors
alive; a configuration whose estimate exceeds --mem-cap-gb is reported as skipped, not run.

The table imports nothing but torch (and Triton on a GPU) and numpy, so that it runs with a GPU
machine's own Python as ``python -m disan.tools.bench``; ``--epoch`` and ``--predict`` import the
training and inspection code, and the packages they need, when they run.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import io
import itertools
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.nn import functional as F

from disan.data import glove100
from disan.data.choices import BATCHINGS
from disan.data.registry import BENCHMARKS
from disan.data.text import PAD_ID
from disan.nn import kernels
from disan.nn.heads import ModelConfig, TextModel, param_groups
from disan.nn.masks import attention_mask
from disan.nn.model import DiSANConfig, DiSANEncoder, Dropout
from disan.tools.parsers.bench import BATCH, DIM, MODELS, RANDOM_DIM, VECTORS, parser

if TYPE_CHECKING:
    from disan.training.config import TrainConfig
    from disan.training.train import Prepared

VOCAB, CLASSES = 1000, 5
SIZES, QUICK_SIZES, TRACE_SIZES = (10, 20, 40, 80, 160), (10, 40), (10, 50, 200)
TRAINED = tuple(name for name, model in MODELS.items() if model.kernel == "auto")  # what training runs
# (how many times faster, or leaner, the first is than the second): the columns of the tables, for
# the pairs the run has both of
RATIOS = (("fast", "reference"), ("fast", "bilstm"), ("compiled", "bilstm"))
# (B, n, n, d) float32 tensors that a dense DiSAN step holds at its peak: measured with this
# benchmark, the peak above the model was 1.5 GB at n = 40 and 5.3 GB at n = 80 (about 10 such
# tensors plus the rest of the step).
DENSE_LIVE = 11
SLOW_STEP_S = 20.0  # past this much work, a configuration stops warming up, and times 3 steps


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, warmup: int, repeats: int, device: str) -> list[float]:
    """Seconds of each of up to ``repeats`` calls after up to ``warmup`` calls (at least 1 and 3 for slow ones)."""
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
        _sync(device)
        if time.perf_counter() - start > SLOW_STEP_S / 4:
            break
    times = []
    while len(times) < repeats and (len(times) < 3 or sum(times) < SLOW_STEP_S):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return times


def _resident_mb(device: str) -> tuple[float, float]:
    """(current, peak) memory in MB: the process's resident set on CPU, allocated tensors on CUDA."""
    if device == "cuda":
        return torch.cuda.memory_allocated() / 2**20, torch.cuda.max_memory_allocated() / 2**20
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def build_model(name: str, device: str, vocab_size: int = VOCAB, d_e: int = DIM,
                d_h: int = DIM) -> torch.nn.Module:
    """The text model a row of the table times: ``MODELS[name]``, in train mode; a compiled one
    compiles at its first call."""
    model = MODELS[name]
    cfg = ModelConfig(vocab_size=vocab_size, n_classes=CLASSES, encoder=model.encoder,
                      encoder_cfg=DiSANConfig(d_e=d_e, d_h=d_h, kernel=model.kernel))
    text_model = TextModel(cfg).to(device).train()
    return torch.compile(text_model) if model.compiled else text_model


def make_step(model: torch.nn.Module, ids: torch.Tensor, target: torch.Tensor, forward_only: bool = False):
    """What one timed call does: forward + backward + Adadelta (lr 0.5) in train mode; with
    ``forward_only``, the forward pass alone in eval mode without autograd."""
    if forward_only:
        model.eval()

        def forward():
            with torch.no_grad():
                model(ids)
        return forward
    opt = torch.optim.Adadelta(model.parameters(), lr=0.5)

    def step():
        loss = F.cross_entropy(model(ids), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def step_worker(name: str, n: int, warmup: int, repeats: int, device: str, batch: int = BATCH, dim: int = DIM,
                forward_only: bool = False) -> dict:
    """Time steps (or forward passes) of one model at one batch size and length; report its memory."""
    torch.manual_seed(0)
    model = build_model(name, device, d_e=dim, d_h=dim)
    ids = torch.randint(PAD_ID + 1, VOCAB, (batch, n), device=device)  # no padding
    target = torch.randint(0, CLASSES, (batch,), device=device)
    row = MODELS[name]
    kernel = kernels.resolve(row.kernel, torch.empty(0, device=device), wait=True) if row.encoder == "disan" else "-"
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    base_mb, _ = _resident_mb(device)
    times = _timed(make_step(model, ids, target, forward_only), warmup, repeats, device)
    _, peak_mb = _resident_mb(device)
    return {"ms": 1e3 * statistics.median(times), "steps": len(times), "kernel": kernel,
            "base_mb": base_mb, "peak_mb": peak_mb}


def trace_worker(sizes, repeats: int, device: str) -> dict:
    """Latency of DiSANEncoder(DiSANConfig()) in eval mode with trace=True on one sentence of each length."""
    torch.manual_seed(0)
    model = DiSANEncoder(DiSANConfig()).to(device).eval()
    out = {}
    with torch.no_grad():
        for n in sizes:
            x = torch.randn(1, n, DIM, device=device)
            pad = torch.ones(1, n, dtype=torch.bool, device=device)
            out[n] = 1e3 * statistics.median(_timed(lambda: model(x, pad, trace=True), 3, repeats, device))
    return out


def dense_estimate_gb(n: int, batch: int = BATCH, dim: int = DIM, itemsize: int = 4) -> float:
    """Peak memory of a dense DiSAN step at length n, estimated from the measured number of live (B, n, n, d) tensors."""
    return DENSE_LIVE * batch * n * n * dim * itemsize / 2**30


def _run_worker(args, extra: list[str]) -> tuple[dict | None, str]:
    """Run ``python -m disan.tools.bench --worker ...`` in a fresh process; (its JSON result, or None and why)."""
    cmd = [sys.executable, "-m", "disan.tools.bench", "--device", args.device, "--repeats", str(args.repeats),
           "--warmup", str(args.warmup), "--dim", str(args.dim)] + (["--threads", str(args.threads)] if args.threads
                                                                     else []) + extra
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"failed (rc {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), ""


def device_name(device: str) -> str:
    """The GPU's name, or the CPU's as the kernel reports it."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def versions(device: str) -> str:
    """The device, and the versions of torch, CUDA and Triton, for a table's header."""
    cuda = f", CUDA {torch.version.cuda}" if device == "cuda" else ""
    return f"device {device} ({device_name(device)}), torch {torch.__version__}{cuda}, triton {_version('triton')}"


def run_table(args) -> None:
    """Time every model at every batch size and length, each in a fresh process; print the speed and memory tables."""
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    models = args.models or list(MODELS)
    ratios = [(a, b) for a, b in RATIOS if a in models and b in models]
    auto = kernels.resolve("auto", torch.empty(0, device=args.device), wait=True)
    print(f"# python -m disan bench: B = {', '.join(map(str, args.batch))}, d = {args.dim}, "
          f"{'forward pass only' if args.forward_only else 'training step'}, {versions(args.device)}, "
          f"{args.threads or torch.get_num_threads()} threads, kernel auto = {auto}, "
          f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[tuple[str, int, int], dict] = {}
    rows = list(itertools.product(args.batch, sizes))
    for b, n in rows:
        for name in models:
            estimate = dense_estimate_gb(n, b, args.dim)
            if MODELS[name].kernel == "dense" and estimate > args.mem_cap_gb:
                results[name, b, n] = {"skipped": estimate}
                continue
            res, why = _run_worker(args, ["--worker", "step", "--model", name, "--n", str(n), "--batch", str(b)]
                                   + (["--forward-only"] if args.forward_only else []))
            results[name, b, n] = res or {"failed": why}
            print(f"  B={b:<4} n={n:<4} {name:<10} {res or why}", file=sys.stderr, flush=True)

    def cell(name, b, n, what):
        r = results.get((name, b, n), {})
        if "skipped" in r:
            return f"skipped (est. {r['skipped']:.1f} GB)"
        if "failed" in r:
            return "failed"
        if what == "speed":
            return f"{1e3 * b / r['ms']:.0f} ({r['ms']:.0f} ms)"
        return f"{r['peak_mb'] - r['base_mb']:.0f} ({r['peak_mb']:.0f})"

    def ratio(a, b, row, memory=False):
        """How many times faster (or leaner) ``a`` is than ``b`` in a row; memory of a skipped ``b`` is its estimate."""
        ra, rb = results.get((a, *row), {}), results.get((b, *row), {})
        if "ms" not in ra or not ("ms" in rb or (memory and "skipped" in rb)):
            return "-"
        if not memory:
            return f"{rb['ms'] / ra['ms']:.1f}x"
        used = ra["peak_mb"] - ra["base_mb"]
        if "skipped" in rb:
            return f"{rb['skipped'] * 1024 / used:.0f}x (est.)"
        return f"{(rb['peak_mb'] - rb['base_mb']) / used:.1f}x"

    def header(name):
        """The model's name, with the kernel(s) its steps ran on for a DiSAN model."""
        ran = sorted({r["kernel"] for (m, *_), r in results.items() if m == name and r.get("kernel", "-") != "-"})
        return f"{name} [{', '.join(ran)}]" if ran else name

    what = "Forward pass (eval mode, no autograd)" if args.forward_only else "Training step"
    print(f"\n{what}: sentences/s (ms per call); [the token2token kernel that ran]\n")
    print("| B | n | " + " | ".join(map(header, models)) + "".join(f" | {a}/{b}" for a, b in ratios) + " |")
    print("|---" * (len(models) + len(ratios) + 2) + "|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | " + " | ".join(cell(m, *row, "speed") for m in models)
              + "".join(f" | {ratio(a, b, row)}" for a, b in ratios) + " |")
    label = "GPU memory allocated" if args.device == "cuda" else "VmHWM"
    print(f"\nPeak memory: MB above the model and its inputs ({label} in MB)\n")
    print("| B | n | " + " | ".join(models) + "".join(f" | {b}/{a}" for a, b in ratios) + " |")
    print("|---" * (len(models) + len(ratios) + 2) + "|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | " + " | ".join(cell(m, *row, "memory") for m in models)
              + "".join(f" | {ratio(a, b, row, memory=True)}" for a, b in ratios) + " |")

    if args.trace:
        trace, why = _run_worker(args, ["--worker", "trace", "--sizes", ",".join(map(str, TRACE_SIZES))])
        print("\nSingle-sentence trace latency, DiSANEncoder(DiSANConfig()), eval, trace=True\n")
        print("| n | ms |\n|---|---|")
        for n in TRACE_SIZES:
            print(f"| {n} | {trace[str(n)]:.1f} |" if trace else f"| {n} | {why} |")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


def _rate(fn, elements: float, repeats: int = 21) -> float:
    """Elements per second of fn, median of repeats."""
    return elements / statistics.median(_timed(fn, 2, repeats, "cpu"))


def ops_benchmark(args) -> None:
    """Throughput of the operations that bound a step, and the bound they set at each n."""
    threads = args.threads or torch.get_num_threads()
    x = torch.rand(1 << 18) * -10.0                   # 1 MB: in cache, so compute-bound
    out = torch.empty_like(x)
    a = torch.randn(BATCH * 40, DIM)                  # the shape of a DiSA projection at n = 40
    w = torch.randn(DIM, DIM)
    h = torch.randn(BATCH, 40, DIM)
    key, query, values = (torch.randn(BATCH, 40, DIM, requires_grad=True) for _ in range(3))
    mask = attention_mask(torch.ones(BATCH, 40, dtype=torch.bool), "forward")
    pairs = float(mask.sum()) * DIM                   # (j, i, k) elements of one direction

    def kernel_fwd_bwd():
        token2token = kernels.token2token(key, query, values, mask)
        token2token.backward(torch.ones_like(token2token))

    rates = {}
    for t in sorted({1, threads}):
        torch.set_num_threads(t)
        rates[t] = {
            "tanh (elem/s)": _rate(lambda: torch.tanh(x, out=out), x.numel()),
            "exp (elem/s)": _rate(lambda: torch.exp(x, out=out), x.numel()),
            "matmul (FLOP/s)": _rate(lambda: a @ w, 2.0 * a.shape[0] * DIM * DIM),
            "dropout (elem/s)": _rate(lambda: Dropout(DiSANConfig.dropout)(h), h.numel()),
            f"{kernels.resolve(wait=True)} token2token fwd+bwd (pair/s)": _rate(kernel_fwd_bwd, pairs, 7),
        }
    print(f"# python -m disan bench --ops: {threads} threads, torch {torch.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("| operation | " + " | ".join(f"{t} thread(s)" for t in rates) + " |")
    print("|---" * (len(rates) + 1) + "|")
    for op in rates[threads]:
        print(f"| {op} | " + " | ".join(f"{rates[t][op] / 1e9:.2f} G" for t in rates) + " |")
    r = rates[threads]
    print(f"\nWork of a training step and its lower bound at the rates above ({threads} threads): GEMMs"
          "\n(forward and backward), dropout, and the tanh and exp evaluations of the token2token"
          "\nattention of both blocks: the dense reference evaluates both on all B n^2 d elements,"
          "\nthe eager path on (at least) the B n (n - 1) / 2 d valid ones in each pass, the C++"
          "\nkernel one exp on each valid element in each pass. Everything else is left out.\n")
    print("| n | model | GEMM GFLOP | dropout Melem | tanh Melem | exp Melem | bound ms |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes or (40,):
        for name in args.models or ("reference", "fast", "eager", "bilstm", "multihead"):
            flops, dropped = step_work(name, n)
            plane, valid = 2 * BATCH * n * n * DIM, 2 * BATCH * n * (n - 1) // 2 * DIM  # both blocks
            tanh, exp = {"reference": (plane, plane), "eager": (2 * valid, 2 * valid),
                         "fast": (0, 2 * valid)}.get(name, (0, 0))
            bound = (flops / r["matmul (FLOP/s)"] + dropped / r["dropout (elem/s)"]
                     + tanh / r["tanh (elem/s)"] + exp / r["exp (elem/s)"])
            print(f"| {n} | {name} | {flops / 1e9:.1f} | {dropped / 1e6:.1f} | {tanh / 1e6:.0f} | {exp / 1e6:.0f} "
                  f"| {1e3 * bound:.0f} |")


def embedding_benchmark(args) -> None:
    """A training step with a 50k-word vocabulary whose extra words are learned rows, against the same
    step with them as frozen float16 rows (:class:`~disan.nn.heads.WordEmbedding`), interleaved."""
    vocab, frozen, d_e = 53_370, 37_955, 100  # the SST-5 checkpoint: 15,415 training words + 37,955 extra
    n = (args.sizes or [20])[0]
    ids = torch.randint(PAD_ID + 1, vocab - frozen, (BATCH, n))
    ids[:, -3:] = torch.randint(vocab - frozen, vocab, (BATCH, 3))  # a few words only dev or test text has
    target = torch.randint(0, CLASSES, (BATCH,))
    steps = {}
    for name, rows in (("all rows learned", 0), ("extra rows frozen", frozen)):
        torch.manual_seed(0)
        model = TextModel(ModelConfig(vocab_size=vocab, n_classes=CLASSES, frozen_vocab=rows,
                                      encoder_cfg=DiSANConfig(d_e=d_e, d_h=DIM))).train()
        opt = torch.optim.Adadelta(param_groups(model, 5e-5), lr=0.5)

        def step(model=model, opt=opt):
            opt.zero_grad()
            model.kind.loss(model(ids), target).backward()
            opt.step()
        steps[name] = step
    times = {name: [] for name in steps}
    for _ in range(args.repeats + args.warmup):  # interleaved, so that load changes hit both alike
        for name, step in steps.items():
            times[name] += _timed(step, 0, 1, "cpu")
    print(f"# python -m disan bench --embedding: B = {BATCH}, n = {n}, d_e = {d_e}, {vocab:,} words of which "
          f"{frozen:,} extra; {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.2f}\n")
    print("| embedding | step ms (median) | min |")
    print("|---|---|---|")
    for name, ts in times.items():
        ts = ts[args.warmup:]
        print(f"| {name} | {1e3 * statistics.median(ts):.1f} | {1e3 * min(ts):.1f} |")


def step_work(name: str, n: int) -> tuple[float, float]:
    """(GEMM FLOPs, dropout elements) of one training step, counted on a step at batch 1 and scaled.

    oneDNN is switched off while counting: FlopCounterMode cannot see inside its fused LSTM,
    and without it the LSTM runs as matmuls that it counts.
    """
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model(name, "cpu")
    dropped = []
    hooks = [m.register_forward_pre_hook(lambda _, inp: dropped.append(inp[0].numel()))
             for m in model.modules() if isinstance(m, Dropout)]
    ids = torch.randint(PAD_ID + 1, VOCAB, (1, n))
    onednn = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        with FlopCounterMode(display=False) as counter:
            model(ids).sum().backward()
    finally:
        torch.backends.mkldnn.enabled = onednn
        for hook in hooks:
            hook.remove()
    return BATCH * counter.get_total_flops(), BATCH * sum(dropped)


def predict_benchmark(args) -> None:
    """``--predict``: sentences per second of batch prediction on the SST dev and test sentences, DiSAN
    (its fast kernel) against the Bi-LSTM encoder of the same size, on ``--threads`` threads (default 1),
    both the size of the shipped checkpoints (GloVe 100d words, d_h = 300).

    Three paths: ``Pipeline.predict`` (batches in input order), ``python -m disan predict``'s streaming
    (tokenising, length-sorted batches, inference mode, writing CSV) and the model alone on the same
    length-sorted batches of tokens. Untrained weights: the time does not depend on their values.
    """
    from contextlib import redirect_stdout

    from disan.data.registry import load_task
    from disan.data.text import Vocab, tokenize
    from disan.inspect.pipeline import Pipeline
    from disan.tools.parsers.predict import BATCH as SORTED
    from disan.tools.predict import predict_file

    torch.set_num_threads(args.threads or 1)
    data = load_task("sst5", phrases=False)
    texts = [e.text for e in data.dev + data.test]
    tokens = [tokenize(t) for t in texts]
    vocab = Vocab.build(tokens)
    lines = "".join(t.replace("\n", " ") + "\n" for t in texts).encode("utf-8")
    def timed(fn) -> tuple[float, float]:
        """(wall seconds, CPU seconds of this process) of one call: on a shared machine the CPU time
        says what an idle core would take, the wall time what this run took."""
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - wall, time.process_time() - cpu

    def stream(pipe):
        with redirect_stdout(io.StringIO()):
            predict_file(pipe, io.BytesIO(lines), "sst", ".txt", None, progress=False)

    paths = {"Pipeline.predict (checks each text, sorted batches of 64)": lambda pipe: pipe.predict(texts),
             f"python -m disan predict (tokenise, sorted batches of {SORTED}, write CSV)": stream,
             "the model alone (sorted batches of tokens)": lambda pipe: pipe.logits([tokens], SORTED)}
    rows: dict[str, dict[str, tuple[float, float]]] = {path: {} for path in paths}
    for name, label in (("fast", "DiSAN"), ("bilstm", "Bi-LSTM")):
        torch.manual_seed(0)
        model = build_model(name, "cpu", len(vocab), d_e=glove100.DIMENSIONS).eval()
        pipe = Pipeline(model, vocab, {"labels": [str(i) for i in range(CLASSES)]}, {})
        kernels.resolve("auto", wait=True)  # the C++ kernel built, if it builds here
        pipe.predict(texts[:64])  # warm-up
        for path, run in paths.items():
            rows[path][label] = timed(lambda: run(pipe))
    load = os.getloadavg()
    print(f"{len(texts):,} SST dev + test sentences, {sum(map(len, tokens)) / len(tokens):.1f} tokens on average; "
          f"d_e = {glove100.DIMENSIONS}, d_h = {DIM}; {torch.get_num_threads()} thread(s); {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}; load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} "
          f"on {os.cpu_count()} cores\n")
    print("sentences per second of wall time, and per second of this process's CPU time")
    print("| path | DiSAN (wall) | DiSAN (CPU) | Bi-LSTM (wall) | Bi-LSTM (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for path, times in rows.items():
        cells = [f"{len(texts) / t:,.0f}" for label in ("DiSAN", "Bi-LSTM") for t in times[label]]
        print(f"| {path} | {' | '.join(cells)} |")


@dataclass
class EpochTiming:
    """One (model, batching) configuration's epoch on a task's training data."""
    model: str
    batching: str
    batches: int            # in one epoch
    seconds: list[float]    # of each timed step, a uniform sample of the epoch's batches
    padding: float          # share of the padded token positions of the epoch's batches that are padding
    cells: int              # query-key pairs of the epoch: sum over batches of B * n^2, DiSAN's work
    data: str = ""          # what it trained on, in words (epoch_data's)

    @property
    def estimate(self) -> float:
        """The epoch's seconds: the mean timed step times the number of batches."""
        return self.batches * statistics.fmean(self.seconds)

    @property
    def half_width(self) -> float:
        """Half the 95% interval of :attr:`estimate`, sampling without replacement from the epoch's batches."""
        k, big_n = len(self.seconds), self.batches
        if k < 2:
            return math.inf
        # the sample's variance over k, times the share of the epoch not timed (a whole epoch: no error)
        return 1.96 * big_n * statistics.stdev(self.seconds) / math.sqrt(k) * math.sqrt(1 - k / big_n)


# The synthetic stand-in for SST-5 when its files are not here: how many training examples training's
# defaults give (every distinct phrase once, split by spaCy) of each length 1, 2, ..., 53 tokens, and
# the size of their vocabulary (<pad> and <unk> included). tests/test_epoch_bench.py checks both
# against the data.
SST5_LENGTHS = (16601, 24970, 21042, 14465, 11587, 9295, 7702, 6387, 5453, 4757, 4129, 3650, 3214, 2858,
                2553, 2240, 2049, 1910, 1677, 1493, 1320, 1233, 1132, 1003, 874, 783, 658, 607, 529, 460,
                390, 358, 323, 263, 242, 188, 151, 142, 97, 88, 84, 59, 56, 51, 43, 25, 22, 15, 15, 12,
                7, 8, 3)
SST5_VOCAB = 15_415


def synthetic_sst5(dim: int = RANDOM_DIM, seed: int = 0) -> Prepared:
    """SST-5's training set as an epoch sees it without the data: examples of random word ids with the
    lengths of :data:`SST5_LENGTHS` and random labels, a vocabulary of :data:`SST5_VOCAB` made-up
    words, and random word vectors (every row one of a word GloVe lacks)."""
    import numpy as np

    from disan.data.batching import Encoded
    from disan.data.text import PAD, UNK, UNK_ID, Vocab
    from disan.data.vectors import embedding_matrix
    from disan.training.train import Prepared

    rng = random.Random(seed)
    lengths = [n for n, count in enumerate(SST5_LENGTHS, start=1) for _ in range(count)]
    ids = [[rng.randrange(UNK_ID + 1, SST5_VOCAB) for _ in range(n)] for n in lengths]
    sst5 = BENCHMARKS["sst5"]
    labels = [rng.randrange(len(sst5.labels)) for _ in lengths]
    vocab = Vocab([PAD, UNK] + [f"w{i}" for i in range(SST5_VOCAB - 2)])
    vectors, _ = embedding_matrix(vocab, [], np.zeros((0, dim), dtype=np.float32), seed=seed)
    data = sst5.task([], [], [], "synthetic")
    return Prepared(data, vocab, {"train": Encoded([ids], labels, lengths)}, vectors, 0, 0)


def epoch_data(base: TrainConfig, vectors: str = "glove") -> tuple[Prepared, str]:
    """The training data an epoch is timed on, prepared as training prepares ``base``'s task, with
    ``vectors`` (of :data:`VECTORS`); and what it is, in words.

    With random vectors and no data folder: :func:`synthetic_sst5`, for SST-5 with training's defaults.
    """
    from disan.data.loaders import data_dir
    from disan.data.vectors import default_source, description
    from disan.training.config import TrainConfig
    from disan.training.train import prepare_data

    if vectors not in VECTORS:
        raise ValueError(f"vectors must be one of {', '.join(VECTORS)}, not {vectors!r}")
    rng = random.Random(base.seed)
    if vectors == "glove":
        source = base.embeddings or default_source()
        return prepare_data(dataclasses.replace(base, embeddings=source), rng), f"word vectors {description(source)}"
    random_words = f"random word vectors (d = {RANDOM_DIM}, no GloVe read)"
    try:
        data_dir(base.data_dir)
    except FileNotFoundError as err:
        stands_for = TrainConfig(task="sst5", out=base.out)  # what SST5_LENGTHS counts
        if any(getattr(base, f) != getattr(stands_for, f) for f in ("task", "phrases", "sst_nodes", "tokens",
                                                                     "max_train")):
            raise FileNotFoundError(f"{err}; without the data, --vectors random stands in for SST-5 with "
                                    f"training's defaults only") from None
        prep = synthetic_sst5(RANDOM_DIM, base.seed)
        return prep, (f"a synthetic corpus (no benchmark data here): {len(prep.splits['train']):,} examples of random "
                      f"ids with SST-5's training lengths, {SST5_VOCAB:,} words, {random_words}")
    with tempfile.TemporaryDirectory() as folder:
        # a vectors file of no words (a word2vec header alone): every row is drawn as a missing word's
        empty = os.path.join(folder, "none.txt")
        with open(empty, "w") as f:
            f.write(f"0 {RANDOM_DIM}\n")
        return prepare_data(dataclasses.replace(base, embeddings=empty), rng), random_words


def epoch_timings(base: TrainConfig, models: list[str], batchings: list[str], sample: int,
                  device: str = "cpu", vectors: str = "glove") -> list[EpochTiming]:
    """Time one epoch of training for each model and batching, as ``python -m disan train`` runs it.

    Every configuration trains on the same data, prepared once by :func:`epoch_data` from ``base``
    (task, SST nodes, vocabulary) and ``vectors``, with the training loop's own step
    (:func:`~disan.training.train.run_steps`), one step of each in turn, so that a change of the
    machine's load hits them alike. An epoch's batches come in random order, so after the untimed
    warm-up steps its next ``sample`` batches are a uniform sample of them; ``sample`` 0 times all
    the others. Models: those of :data:`MODELS` whose kernel is "auto" (:data:`TRAINED`).
    """
    if unknown := [m for m in models if m not in TRAINED]:
        raise ValueError(f"an epoch runs the models training runs ({', '.join(TRAINED)}), not {', '.join(unknown)}")
    if unknown := sorted(set(batchings) - set(BATCHINGS)):
        raise ValueError(f"batching must be among {', '.join(BATCHINGS)}, not {', '.join(unknown)}")
    from disan.training import train as training
    from disan.training.distributed import World

    world = World.from_env(device)
    prep, data = epoch_data(base, vectors)
    train_split, runs = prep.splits["train"], []
    for name, batching in itertools.product(models, batchings):
        cfg = dataclasses.replace(base, encoder=MODELS[name].encoder, batching=batching)
        torch.manual_seed(base.seed)
        model = training.build_model(cfg, prep).to(world.device)
        stream = training.BatchStream(train_split, cfg.batch_size, 1, random.Random(base.seed), batching)
        runs.append((name, cfg, model, training.make_optimizer(cfg, model), stream))
    timed = {i: [] for i in range(len(runs))}
    per_round = runs[0][4].per_round
    steps = min(sample or per_round, per_round - training.WARMUP_STEPS)
    for step in range(training.WARMUP_STEPS + steps):
        for i, (_, cfg, model, opt, stream) in enumerate(runs):
            took = training.run_steps(model, opt, prep, cfg, stream, 1, lambda event: None, None, world,
                                      (step, per_round))["epoch_seconds"]
            if step >= training.WARMUP_STEPS:
                timed[i].append(took)
    out = []
    for i, (name, cfg, _, _, stream) in enumerate(runs):
        sizes = [(len(b), max(train_split.lengths[j] for j in b)) for b in stream.chunks]  # this epoch's batches
        real = sum(train_split.lengths[j] for b in stream.chunks for j in b)
        padded = sum(size * n for size, n in sizes)
        out.append(EpochTiming(name, cfg.batching, stream.per_round,
                               timed[i], 1 - real / padded, sum(size * n * n for size, n in sizes), data))
    return out


def epoch_benchmark(args) -> None:
    """``--epoch``: the table of :func:`epoch_timings`, with the ratios of the models and of the batchings."""
    models = args.models or ["fast", "bilstm"]
    from disan.training.config import TrainConfig
    from disan.training.train import WARMUP_STEPS

    base = TrainConfig(task=args.task, out="unused", **({"sst_nodes": args.sst_nodes} if args.sst_nodes else {}))
    timings = epoch_timings(base, models, args.batching, args.sample, args.device, args.vectors)
    first = timings[0]
    print(f"# python -m disan bench --epoch: {args.task}"
          + (f" ({base.sst_nodes} nodes)" if BENCHMARKS[args.task].sst else "")
          + f", {first.data}; {first.batches:,} batches of {base.batch_size} per epoch, {len(first.seconds):,} timed "
          f"per configuration after {WARMUP_STEPS} untimed; {versions(args.device)}, "
          f"{torch.get_num_threads()} thread(s); load average {os.getloadavg()[0]:.2f}\n")
    print("| model | batching | padding | query-key pairs | ms per step (mean) | epoch s (95% interval) |")
    print("|---|---|---:|---:|---:|---|")
    for t in timings:
        print(f"| {t.model} | {t.batching} | {100 * t.padding:.1f}% | {t.cells:,} | "
              f"{1e3 * statistics.fmean(t.seconds):.1f} | {t.estimate:,.0f} ± {t.half_width:,.0f} |")
    by = {(t.model, t.batching): t.estimate for t in timings}
    if "bilstm" in models:
        print("\nHow many times faster than the Bi-LSTM an epoch is:", ", ".join(
            f"{m} {b}: {by['bilstm', b] / by[m, b]:.2f}x" for m in models if m != "bilstm" for b in args.batching))
    if set(args.batching) == set(BATCHINGS):
        print("How many times longer an epoch of random batches is than one of bucketed batches:", ", ".join(
            f"{m}: {by[m, 'random'] / by[m, 'bucketed']:.2f}x" for m in models))


def main(argv=None) -> None:
    """``python -m disan bench``: the training-step tables, ``--ops`` (this machine's rates), or one worker."""
    p = parser()
    args = p.parse_args(argv)
    if unknown := set(args.models or ()) - set(MODELS):
        p.error(f"unknown model(s) {sorted(unknown)}")
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.warmup = args.warmup or (1 if args.quick else 2)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.predict:
        predict_benchmark(args)
    elif args.worker == "step":
        print(json.dumps(step_worker(args.model, args.n, args.warmup, args.repeats, args.device, args.batch[0],
                                     args.dim, args.forward_only)))
    elif args.worker == "trace":
        print(json.dumps(trace_worker(args.sizes, max(args.repeats, 10), args.device)))
    elif args.ops:
        ops_benchmark(args)
    elif args.embedding:
        embedding_benchmark(args)
    elif args.epoch:
        try:
            epoch_benchmark(args)
        except (ValueError, FileNotFoundError) as err:
            p.error(str(err))
    else:
        run_table(args)


if __name__ == "__main__":
    main()
