"""The ``train`` command's flags, built from TrainConfig: typed parsing, errors, help, and the
command line a config writes and reads back."""
import dataclasses
import shlex

import pytest
import torch

from disan.__main__ import main, run
from disan.training import config
from disan.training import train as train_module
from disan.training.config import TrainConfig, parse_args, parse_command_line

pytestmark = pytest.mark.quick

REQUIRED = ["--task", "trec", "--out", "runs/x"]

# A value other than the default for every field that is a flag, of the field's own type.
VALUES = {"task": "sst2", "encoder": "bilstm", "out": "my runs/it's", "epochs": 3, "lr": 1e-3, "optimizer": "adam",
          "batch_size": 7, "dropout": 0.0, "weight_decay": 0.0, "d_h": 12, "d_fc": 5, "activation": "tanh",
          "embeddings": "/vectors/glove 840B.txt", "extra_vocab": 0, "seed": 9, "fold": 4, "phrases": False,
          "max_train": 100, "patience": 1, "data_dir": "/data", "threads": 2, "device": "cpu", "tensorboard": False,
          "logdir": "/tb/run 1", "sst_nodes": "every", "tokens": "leaves", "steps": 50, "eval_every": 10,
          "rho": 0.95, "eps": 1e-8, "oov_init": "normal", "eval_words": True, "head_bias": False,
          "decay_attention": False, "batching": "random", "shuffle_labels": True}
# The same for --data, which replaces --task, and the options that go with it.
DATA_VALUES = {"data": "my data/reviews.csv", "text_column": "review", "text_b_column": "2", "label_column": "0",
               "kind": "relatedness", "dev": "dev set.tsv", "test": "t.jsonl", "dev_fraction": 0.2, "test_fraction": 0.05}
NOT_FLAGS = ("command", "world_size")  # facts of the run, not settings
HOW_TO_START = ("resume", "keep_state")  # flags, but not settings: the command line a config writes leaves them out


def flag_fields() -> list[str]:
    return [f.name for f in dataclasses.fields(TrainConfig) if f.name not in NOT_FLAGS + HOW_TO_START]


def test_every_field_is_a_flag_with_help_and_command_is_not(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for f in dataclasses.fields(TrainConfig):
        if f.name not in NOT_FLAGS:
            assert "--" + f.name.replace("_", "-") in shown and f.metadata["help"], f.name
    assert "--no-phrases" in shown and "--no-tensorboard" in shown
    assert "--command" not in shown and "--world-size" not in shown
    assert set(VALUES) | set(DATA_VALUES) == set(flag_fields())  # the round-trip tests below cover every field


def test_resume_is_parsed_but_not_written_into_the_recorded_command():
    cfg = parse_args(REQUIRED + ["--resume"])
    assert cfg.resume is True and parse_args(REQUIRED).resume is False
    assert "--resume" not in cfg.command_line() and "resume" not in cfg.command
    assert cfg == parse_args(REQUIRED)  # the same run, started another way


@pytest.mark.parametrize("name", sorted({**VALUES, **DATA_VALUES}))
def test_each_field_round_trips_through_its_command_line(name):
    values = VALUES if name in VALUES else DATA_VALUES
    task = "sst5" if name == "tokens" else "trec"  # only SST has leaves
    base = {"task": task} if name in VALUES else {"data": "d.csv", "text_column": "t", "label_column": "y"}
    cfg = TrainConfig(**{**base, "out": "runs/x", name: values[name]})
    back = parse_command_line(cfg.command_line())
    assert back == cfg
    assert getattr(back, name) == values[name] and type(getattr(back, name)) is type(values[name])


@pytest.mark.parametrize("source", ["task", "data"])
def test_a_config_with_every_field_changed_round_trips(source):
    # SST's own settings (its trees' nodes and leaves) belong to --task sst5, not to a file
    sst_only = ("task", "sst_nodes", "tokens")
    values = VALUES if source == "task" else {**{k: v for k, v in VALUES.items() if k not in sst_only}, **DATA_VALUES}
    cfg = TrainConfig(**values)
    line = cfg.command_line()
    assert parse_command_line(line) == cfg
    assert parse_command_line(line).command == line


def test_types_booleans_and_optionals():
    cfg = parse_args(REQUIRED + ["--epochs", "4", "--lr", "2", "--dropout", "0", "--max-train", "50"])
    assert (cfg.epochs, cfg.lr, cfg.dropout, cfg.max_train) == (4, 2.0, 0.0, 50)
    assert type(cfg.lr) is float and type(cfg.dropout) is float and type(cfg.max_train) is int
    assert cfg.phrases is True and cfg.embeddings is None and cfg.threads is None and cfg.data_dir is None
    assert parse_args(REQUIRED + ["--no-phrases"]).phrases is False
    assert parse_args(REQUIRED + ["--no-phrases", "--phrases"]).phrases is True


@pytest.mark.parametrize("argv,message", [
    (["--phrases", "False"], "unrecognized arguments: False"),  # a boolean flag takes no value
    (["--epochs", "two"], "invalid int value"),
    (["--max-train", "1.5"], "invalid int value"),
    (["--lr", "fast"], "invalid float value"),
    (["--encoder", "transformer"], "invalid choice"),
    (["--optimizer", "sgd"], "invalid choice"),
    (["--epochs", "0"], "epochs must be at least 1"),
    (["--lr", "nan"], "learning rate"),
    (["--dropout", "1"], "dropout"),
])
def test_a_bad_value_is_an_argparse_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", *REQUIRED, *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("missing,message", [("--task", "give either --task (a benchmark) or --data"),
                                             ("--out", "required: --out")])
def test_task_and_out_are_required(missing, message, capsys):
    argv = list(REQUIRED)
    del argv[argv.index(missing):argv.index(missing) + 2]
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_command_line_names_only_what_differs_from_the_defaults():
    assert TrainConfig(task="trec", out="runs/x").command_line() == "python -m disan train --task trec --out runs/x"
    line = TrainConfig(task="sst2", out="my runs/it's", lr=0.001, phrases=False, max_train=64).command_line()
    assert shlex.split(line) == ["python", "-m", "disan", "train", "--task", "sst2", "--out", "my runs/it's",
                                 "--lr", "0.001", "--no-phrases", "--max-train", "64"]
    with pytest.raises(ValueError, match="not a"):
        parse_command_line("python -m disan evaluate runs/x")


def test_the_cli_records_its_command_in_the_config(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(train_module, "train", lambda cfg, progress: seen.append(cfg) or {"dev": {}, "test": {}})
    assert main(["train", "--out", "runs/x", "--task", "trec", "--d-h", "8", "--no-phrases", "--lr", "1e-3"]) == 0
    cfg = seen[0]
    assert cfg.command == "python -m disan train --task trec --out runs/x --lr 0.001 --d-h 8 --no-phrases"
    assert parse_command_line(cfg.command) == cfg
    assert config.PROG == "python -m disan train"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
@pytest.mark.parametrize("argv", [["train", *REQUIRED, "--device", "cuda"],
                                  ["evaluate", "checkpoints/any", "--device", "cuda"]])
def test_cuda_without_a_gpu_is_a_one_line_error(argv, capsys):
    assert run(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: device 'cuda' was asked for but CUDA is not available") and err.count("\n") == 1


def test_the_device_defaults_to_auto():
    assert parse_args(REQUIRED).device == "auto"
    with pytest.raises(SystemExit):
        parse_args(REQUIRED + ["--device", "tpu"])


def test_a_usage_line_names_the_command_as_it_was_invoked(monkeypatch):
    from disan.tools import invoked
    monkeypatch.setattr("sys.argv", ["/home/u/.venv/bin/disan", "predict"])
    assert invoked() == "disan"
    monkeypatch.setattr("sys.argv", ["/repo/disan/__main__.py", "predict"])
    assert invoked() == "python -m disan"


def test_the_parameter_table_keeps_the_papers_order_of_encoders():
    # Table 1 of the paper: the directional masks add no parameters, and the Bi-LSTM has more than DiSAN
    from disan.tools.params import table
    count = {name: encoder for name, encoder, _, _ in table()}
    assert count["disan"] == count["disan-nodir"]
    assert count["additive"] < count["s2t"] < count["disan"] < count["bilstm"]


def test_the_app_command_serves_the_checkouts_app_with_the_chosen_checkpoints(tmp_path):
    from argparse import Namespace

    from disan.data import paths
    from disan.tools.app import command
    argv, env, folder = command(Namespace(checkpoints=str(tmp_path), port=8642, headless=True))
    assert (folder / "app.py").is_file() and folder / "checkpoints" == paths.shipped_checkpoints()
    assert argv[argv.index("run") + 1] == str(folder / "app.py")
    assert argv[argv.index("--server.port") + 1] == "8642" and "--server.headless" in argv
    assert env[paths.CHECKPOINTS_ENV] == str(tmp_path.resolve())
    with pytest.raises(FileNotFoundError, match="does not exist"):
        command(Namespace(checkpoints=str(tmp_path / "missing"), port=8642, headless=False))


def test_checkpoints_are_listed_from_the_environment_else_the_shipped_folder(tmp_path, monkeypatch):
    from disan.data import paths
    monkeypatch.delenv(paths.CHECKPOINTS_ENV, raising=False)
    assert paths.checkpoints_dir() == paths.site() / "checkpoints"
    assert (paths.checkpoints_dir() / "sst5" / "config.json").is_file()
    monkeypatch.setenv(paths.CHECKPOINTS_ENV, str(tmp_path))
    assert paths.checkpoints_dir() == tmp_path
