"""A fast start: ``disan --help``, ``disan COMMAND --help`` and ``disan --version`` import none of the heavy
packages (their parsers are built from light modules), and the names those parsers offer are the
registries' own. The timings are in docs/performance.md, not asserted here."""
import subprocess
import sys
from pathlib import Path

import pytest

from disan.__main__ import FORWARDED

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "spacy", "streamlit", "plotly", "pandas", "scipy", "numpy")
COMMANDS = ("train", "evaluate", *FORWARDED)
# Runs the command line in this interpreter as `python -m disan ARGS` would, then prints the exit status and
# the heavy packages imported by then: sys.modules read after the call, in a process that imported nothing before.
PROBE = """
import runpy, sys
sys.argv = ["disan", *sys.argv[1:]]
try:
    runpy.run_module("disan", run_name="__main__")
    code = 0
except SystemExit as e:
    code = e.code
print("exit", code, file=sys.stderr)
print("heavy", *sorted(m for m in {heavy} if m in sys.modules), file=sys.stderr)
""".format(heavy=HEAVY)


def probe(*args: str) -> tuple[str, int, list[str]]:
    """(standard output, exit status, heavy packages imported) of ``python -m disan ARGS``."""
    run = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = dict(line.split(" ", 1) if " " in line else (line, "") for line in run.stderr.splitlines()
                 if line.startswith(("exit", "heavy")))
    assert "exit" in lines, run.stderr
    return run.stdout, int(lines["exit"]), lines["heavy"].split()


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_imports_nothing_heavy(command):
    out, code, heavy = probe(*([command] if command else []), "--help")
    assert code == 0 and "usage:" in out
    assert heavy == [], f"`disan {command} --help` imported {heavy}"


def test_a_mistyped_flag_ends_before_the_implementation_is_imported():
    out, code, heavy = probe("bench", "--no-such-flag")
    assert code == 2 and heavy == []


def test_the_probe_sees_a_heavy_import():
    # the test above proves nothing unless a command that does import torch shows it
    _, code, heavy = probe("params")
    assert code == 0 and "torch" in heavy


def test_version_prints_the_package_version():
    import disan
    out, code, heavy = probe("--version")
    assert code == 0 and out.split()[-1] == disan.__version__ and heavy == []


def test_import_disan_imports_no_torch():
    code = f"import sys, disan; print(sorted(m for m in {HEAVY} if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stderr


# ---------------------------------------------------------------- the light names against the registries

def test_the_data_choices_are_the_registries_names():
    from disan.data import choices
    from disan.data.files import FORMATS
    from disan.data.kinds import KINDS
    from disan.data.registry import BENCHMARKS
    assert choices.KIND_NAMES == tuple(KINDS)
    assert choices.BENCHMARK_NAMES == tuple(BENCHMARKS)
    assert choices.FORMAT_NAMES == tuple(FORMATS)
    assert choices.TABLES == tuple(suffix for suffix, f in FORMATS.items() if f.columns is None)


def test_the_model_choices_are_the_registries_names():
    from disan.nn import choices
    from disan.nn.baselines import ENCODERS
    from disan.nn.model import ACTIVATIONS
    assert choices.ENCODER_NAMES == tuple(ENCODERS)
    assert choices.ACTIVATION_NAMES == tuple(ACTIVATIONS)


# ---------------------------------------------------------------- the light modules themselves

def test_the_default_checkpoint_is_looked_up_when_a_benchmark_runs_not_when_its_parser_is_built():
    from disan.tools.parsers import analysis_bench, latency
    assert latency.parser().parse_args([]).checkpoint is None
    assert analysis_bench.parser().parse_args([]).checkpoint is None
    assert "sst5 among the shipped checkpoints" in " ".join(latency.parser().format_help().split())


def test_the_heavy_commands_parsers_read_their_lines():
    from disan.tools.parsers import bench, compare, predict, results
    args = bench.parser().parse_args(["--epoch", "--task", "sick", "--batching", "random"])
    assert args.task == "sick" and args.batching == ["random"] and args.batch == [bench.BATCH]
    with pytest.raises(SystemExit):
        bench.parser().parse_args(["--task", "no-such-benchmark"])
    assert compare.parser().parse_args(["a", "b"]).resamples == 2_000
    assert predict.parser().parse_args(["sst5", "-", "--format", "tsv"]).batch_size == predict.BATCH
    assert [p.name for p in results.parser().parse_args([]).dirs][-1] == "results"


def test_checksums_read_sha256sum_output_and_digest_files(tmp_path):
    import hashlib
    from disan.data import checksums
    path = tmp_path / "f.txt"
    path.write_bytes(b"sentence\n")
    digest = hashlib.sha256(b"sentence\n").hexdigest()
    assert checksums.sha256_file(path) == digest
    listing = f"{digest.upper()}  a/f.txt\n\n{digest} *b.txt\n"
    assert checksums.parse_checksums(listing) == {"a/f.txt": digest, "b.txt": digest}
