"""The registries of model kinds (disan.data.kinds, shown by disan.render.kinds) and of benchmarks
(disan.data.registry): nothing else compares their names, and a new kind or benchmark is one entry that
loading, training, evaluating and showing then take as they take the others."""
import ast
import csv
import json
import re
from pathlib import Path

import pytest
import torch

import disan
from disan.data import download, files
from disan.data.kinds import KINDS, Kind, relatedness_loss, relatedness_score, single
from disan.data.registry import BENCHMARKS, Benchmark, folds_task, load_task, trainable
from disan.inspect import catalog
from disan.render.kinds import LOOKS, Look, look_of
from disan.nn.heads import ModelConfig, TextModel
from disan.tools.predict import output_columns
from disan.training.config import TrainConfig
from disan.training.evaluate import examples_table
from disan.training.train import train

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*(ROOT / "disan").rglob("*.py"), ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"),
           *(ROOT / "scripts").glob("*.py")]
REGISTRIES = {"disan/data/kinds.py", "disan/data/registry.py", "disan/render/kinds.py"}
# download.py names the archive of MR's files after it: a download source's name, which --mirror and
# download(base_urls=...) use, not the benchmark compared
ALLOWED = {"disan/data/download.py: dict key 'mr'"}
COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def strings(node: ast.AST) -> set[str]:
    """The str constants of a node that is one, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {s for element in node.elts for s in strings(element)}
    return set()


def name_uses(path: Path, root: Path, names: set[str]) -> list[str]:
    """The places in ``path`` that test a value against one of ``names`` written out (==, !=, in, not in
    with a string or a collection of strings) or key a dict or fill a set with them: "file:line: form 'name'"."""
    where = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            hits = {s for op, a, b in zip(node.ops, sides, sides[1:]) if isinstance(op, COMPARISONS)
                    for side in (a, b) for s in strings(side) & names}
            found += [f"{where}:{node.lineno}: compares {s!r}" for s in sorted(hits)]
        elif isinstance(node, ast.Dict):
            keys = {s for key in node.keys if key is not None for s in strings(key)}
            found += [f"{where}:{node.lineno}: dict key {s!r}" for s in sorted(keys & names)]
        elif isinstance(node, ast.Set):
            found += [f"{where}:{node.lineno}: set of {s!r}" for s in sorted(strings(node) & names)]
    return found


def test_no_module_compares_a_kind_or_a_benchmark_by_name():
    names = set(KINDS) | set(BENCHMARKS)
    found = [use for path in SOURCES if path.relative_to(ROOT).as_posix() not in REGISTRIES
             for use in name_uses(path, ROOT, names)]
    problems = [use for use in found if re.sub(r":\d+:", ":", use) not in ALLOWED]  # allowed on any line
    assert not problems, "ask the entry (kind_of, BENCHMARKS) instead:\n" + "\n".join(problems)


def test_the_name_scan_finds_each_form(tmp_path):
    # the scan must see every way of writing a name out, or the test above proves nothing
    lines = ['kind == "pair"', '"sick" != task', 'task in ("sst5", "sst2")', 'task not in ["snli"]',
             'kind in {"relatedness"}', 'PAPER = {"trec": 94.2}', 'ORDINAL = {"cr", "mr"}',
             'a < b == "classify"',
             # not name uses: another string, a name used as a value, a call's argument, a subscript
             'kind == "pairs"', 'task = "sst5"', 'load("snli")', 'BENCHMARKS["sick-e"]', 'x = {"other": "pair"}']
    (tmp_path / "m.py").write_text("\n".join(lines) + "\n")
    found = name_uses(tmp_path / "m.py", tmp_path, set(KINDS) | set(BENCHMARKS))
    assert {int(use.split(":")[1]) for use in found} == set(range(1, 9))
    assert "m.py:3: compares 'sst2'" in found and "m.py:7: set of 'mr'" in found and "m.py:6: dict key 'trec'" in found


# ---------------------------------------------------------------- model kinds

@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_builds_a_model_that_takes_reads_and_learns_its_inputs(name):
    kind = KINDS[name]
    torch.manual_seed(0)
    model = TextModel(ModelConfig(vocab_size=10, n_classes=5, kind=name, d_fc=4,
                                  encoder_cfg={"d_e": 6, "d_h": 4, "dropout": 0.0}))
    torch.nn.init.normal_(model.embed.weight)  # word vectors, which the caller sets
    ids = [torch.randint(1, 10, (3, 4)) for _ in range(kind.texts)]
    logits = model(*ids)
    assert logits.shape == (3, 5) and model.fc.linear.in_features == kind.width * model.encoder.out_dim
    with pytest.raises(ValueError, match=f"takes {kind.texts} inputs"):
        model(*ids, ids[0])
    read = kind.read(logits)
    labels = [1.5, 4.0, 2.25] if kind.scored else [0, 4, 2]
    targets = kind.targets(labels)
    assert read.shape == (3,) and targets.dtype == getattr(torch, kind.target_dtype)
    if kind.scored:  # an expected score on 1..K
        assert ((read >= 1) & (read <= 5)).all()
    else:
        assert torch.equal(read, logits.argmax(-1))
    loss = kind.loss(logits, targets)
    loss.backward()
    assert loss.ndim == 0 and torch.isfinite(loss) and model.out.linear.weight.grad.abs().sum() > 0


def test_every_kind_has_a_look_with_a_name_per_sentence():
    assert set(LOOKS) == set(KINDS)
    for name, kind in KINDS.items():
        assert len(look_of(name).sentences) == kind.texts
    with pytest.raises(ValueError, match="classify, pair, relatedness"):
        look_of("regression")


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="classify, pair, relatedness"):
        ModelConfig(vocab_size=10, n_classes=3, kind="regression")
    with pytest.raises(ValueError, match="unknown kind"):
        TrainConfig(data="x.csv", text_column="t", label_column="y", kind="regression", out="o")


# A kind no module knows: one sentence in, a score out (a rating), as relatedness reads its pairs.
RATING = Kind("rating", 1, True, "pearson", 1, single, relatedness_loss, relatedness_score, "float32")
RATING_LOOK = Look(("review",), "rating", "expected rating", "rating", "rounded rating")
REVIEWS = [("a wonderful moving film", 5), ("a great film", 4), ("a fine film", 3), ("a dull film", 2),
           ("an awful boring film", 1), ("a moving and great story", 5), ("a dull and boring story", 1),
           ("a fine story", 3)] * 6


def tiny_vectors(path: Path, texts) -> str:
    """A GloVe-format file of the texts' words: loads in no time."""
    words = sorted({w for text in texts for w in text.split()})
    path.write_text("".join(f"{w} " + " ".join(f"{(i * 7 + k) % 11 / 10 - 0.5:.2f}" for k in range(6)) + "\n"
                            for i, w in enumerate(words)), encoding="utf-8")
    return str(path)


def tiny_run(out: Path, embeddings: str, **fields) -> TrainConfig:
    return TrainConfig(out=str(out), epochs=2, d_h=6, d_fc=6, extra_vocab=0, embeddings=embeddings, batch_size=8,
                       tensorboard=False, **fields)


def test_a_new_kind_is_one_entry_that_training_evaluation_and_the_pages_read(tmp_path, monkeypatch):
    monkeypatch.setitem(KINDS, "rating", RATING)
    monkeypatch.setitem(LOOKS, "rating", RATING_LOOK)
    assert files.kinds_for(None) == ["classify", "rating"] and files.kinds_for("b") == ["pair", "relatedness"]
    data = tmp_path / "reviews.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("review", "stars"), *REVIEWS])
    summary = files.summarize(data, "review", "stars", kind="rating")
    assert summary.labels == ["1", "2", "3", "4", "5"] and sorted(set(summary.scores)) == [1, 2, 3, 4, 5]

    out = tmp_path / "rating"
    metrics = train(tiny_run(out, tiny_vectors(tmp_path / "v.txt", [t for t, _ in REVIEWS]), data=str(data),
                             text_column="review", label_column="stars", kind="rating"))
    # selected and reported by the kind's metric, with no accuracy for scores
    assert "pearson" in metrics["dev"] and "accuracy" not in metrics["test"]
    assert all("train_accuracy" not in h for h in metrics["history"])
    assert json.loads((out / "config.json").read_text())["kind"] == "rating"  # stored by its name
    pipe = disan.load(out)
    assert not pipe.is_pair and output_columns(pipe) == ["score"]
    pred = pipe.predict(["a great story"])[0]
    assert 1 <= pred.score <= 5 and pred.label == f"{pred.score:.2f}"
    with pytest.raises(ValueError):
        pipe.predict([("a great story", "a fine film")])
    assert catalog.headline("rating", metrics).startswith("test pearson")
    evaluation = examples_table(out, "test")  # the recorded split of the file, read again
    assert evaluation.confusion is None and "error" in evaluation.table


# ---------------------------------------------------------------- benchmarks

def test_every_benchmark_file_is_one_download_checks_and_the_folders_agree():
    # the registry's folders and files are the paths download.py fetches (or says it cannot) and checks
    fetched = {target for source in download.SOURCES.values() for target in source.members.values()}
    for b in BENCHMARKS.values():
        paths = {f"{b.folder}/{name}" for name in b.files}
        assert paths <= set(download.CHECKSUMS), b.name
        assert paths <= fetched or b.folder in download.NOT_DOWNLOADABLE, b.name
        assert len(b.labels) >= 2 and b.kind in KINDS and (b.folds is None) == (b.loader is not folds_task)


TOY_LINES = {"toy.neg": ["a dull boring film", "an awful mess", "bad and tedious", "a weak plot"],
             "toy.pos": ["a wonderful film", "great and moving", "a fine plot", "a lovely story"]}
TOY = Benchmark("toy", "A toy benchmark: film snippets, negative / positive", "TOY", ("toy.neg", "toy.pos"),
                "classify", ("negative", "positive"), folds_task, folds=5)


@pytest.fixture
def toy_root(tmp_path, monkeypatch) -> Path:
    """A data folder holding only the toy benchmark's files, and the toy benchmark registered."""
    root = tmp_path / "data"
    (root / TOY.folder).mkdir(parents=True)
    for name, lines in TOY_LINES.items():
        (root / TOY.folder / name).write_text("".join(f"{line} {k}\n" for k in range(5) for line in lines))
    monkeypatch.setitem(BENCHMARKS, TOY.name, TOY)
    return root


def test_a_new_benchmark_is_one_entry_that_loads_with_its_folds(toy_root):
    assert "toy" in trainable()
    task = load_task("toy", toy_root, fold=2, seed=1)
    assert (task.name, task.kind, task.labels) == ("toy", "classify", ["negative", "positive"])
    assert len(task.test) == 40 // 5 and len(task.train) + len(task.dev) == 32 and "5-fold" in task.protocol
    assert sorted(e.text for e in task.train + task.dev + task.test) == sorted(
        f"{line} {k}" for lines in TOY_LINES.values() for line in lines for k in range(5))
    assert {e.label for e in task.test if e.text.startswith("a wonderful")} <= {1}
    assert load_task("toy", toy_root, fold=3, seed=1).test != task.test
    with pytest.raises(ValueError, match="fold must be in 0..4"):
        load_task("toy", toy_root, fold=5)


def test_a_new_benchmark_trains_and_evaluates_with_no_other_change(toy_root, tmp_path):
    with pytest.raises(ValueError, match="leaves"):  # SST's leaves: the entry says it is not SST
        TrainConfig(task="toy", out="o", tokens="leaves")
    out = tmp_path / "toy-run"
    texts = [line for lines in TOY_LINES.values() for line in lines] + ["0 1 2 3 4"]
    metrics = train(tiny_run(out, tiny_vectors(tmp_path / "v.txt", texts), task="toy", data_dir=str(toy_root),
                             fold=1))
    assert metrics["test"]["n"] == 8 and 0 <= metrics["test"]["accuracy"] <= 1
    config = json.loads((out / "config.json").read_text())
    assert (config["task"], config["kind"], config["labels"]) == ("toy", "classify", ["negative", "positive"])
    assert "5-fold cross-validation" in (out / "README.md").read_text()
    # evaluating reads the benchmark again, through its entry, with the recorded fold
    evaluation = examples_table(out, "test")
    assert evaluation.metrics["accuracy"] == pytest.approx(metrics["test"]["accuracy"])
    assert list(evaluation.table["text"]) == [e.text for e in load_task("toy", toy_root, fold=1).test]


def test_snli_is_the_one_benchmark_without_training_and_the_paper_has_a_figure_for_seven():
    assert [name for name in BENCHMARKS if name not in trainable()] == ["snli"]
    assert sorted(name for name, b in BENCHMARKS.items() if b.paper is not None) == [
        "cr", "mpqa", "sick", "snli", "sst5", "subj", "trec"]
