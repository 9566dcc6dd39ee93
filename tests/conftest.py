import os

import pytest
import torch

from disan.data import download, glove100, loaders
from disan.data.text import Vocab
from disan.explore import diskcache, progressive
from disan.nn import checkpoint
from disan.nn.heads import ModelConfig, TextModel
from disan.nn.model import DiSANConfig
from disan.training.board import LOGDIR_ENV

WORDS = "the glass bottle is big a man pouring of tea restaurant about to close biker fountain".split()
LABELS = {"classify": ["negative", "positive", "neutral"], "pair": ["entailment", "neutral", "contradiction"],
          "relatedness": ["1", "2", "3", "4", "5"]}


def make_model(kind: str = "classify", encoder: str = "disan", seed: int = 0) -> tuple[TextModel, Vocab]:
    torch.manual_seed(seed)
    vocab = Vocab.build([WORDS])
    cfg = ModelConfig(vocab_size=len(vocab), n_classes=len(LABELS[kind]), kind=kind, encoder=encoder, d_fc=8,
                      encoder_cfg=DiSANConfig(d_e=6, d_h=5, dropout=0.0))
    model = TextModel(cfg)
    torch.nn.init.normal_(model.embed.weight)
    return model.eval(), vocab


@pytest.fixture
def make_checkpoint(tmp_path):
    """Save a tiny untrained model of a kind; returns its directory."""
    def make(kind="classify", name=None, encoder="disan"):
        model, vocab = make_model(kind, encoder)
        path = tmp_path / (name or f"tiny-{kind}")
        checkpoint.save(path, model, vocab, {"task": f"tiny-{kind}", "kind": kind, "labels": LABELS[kind]},
                        {"test": {"accuracy": 0.5}}, "# tiny\n")
        return path
    return make


@pytest.fixture(scope="session")
def data_root():
    """The benchmark folder. Every test that needs the data asks for this fixture (by argument or
    ``usefixtures``), so that without the data they all skip with the same reason."""
    hint = f"set {loaders.DATA_ENV} to the data folder or run `python -m disan download`"
    try:
        root = loaders.data_dir()
    except FileNotFoundError as err:
        pytest.skip(f"benchmark data not available: {err}")
    missing = [name for name in (loaders.CHECKSUM_FILE, *download.CHECKSUMS) if not (root / name).is_file()]
    if missing:
        pytest.skip(f"benchmark data not available: {root} lacks {missing[0]} and {len(missing) - 1} other "
                    f"files; {hint}")
    return root


@pytest.fixture(scope="session", autouse=True)
def event_files_in_tmp(tmp_path_factory):
    """Training runs write TensorBoard event files under $DISAN_LOGDIR (by default runs/tensorboard in the
    working directory): in the tests, and in the training jobs they start, into a temporary folder instead."""
    before = os.environ.get(LOGDIR_ENV)
    os.environ[LOGDIR_ENV] = str(tmp_path_factory.mktemp("tensorboard"))
    yield
    if before is None:
        del os.environ[LOGDIR_ENV]
    else:
        os.environ[LOGDIR_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def no_fetched_vectors(tmp_path_factory):
    """Tests train with the 50d package, the default of a fresh machine, even where GloVe 100d was
    fetched: $DISAN_VECTORS_DIR points at an empty folder unless a test sets its own."""
    before = os.environ.get(glove100.VECTORS_ENV)
    os.environ[glove100.VECTORS_ENV] = str(tmp_path_factory.mktemp("vectors"))
    yield
    if before is None:
        del os.environ[glove100.VECTORS_ENV]
    else:
        os.environ[glove100.VECTORS_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def results_cache_in_tmp(tmp_path_factory):
    """The analyses' on-disk result cache ($DISAN_CACHE_DIR, by default ~/.cache/disan) in a temporary
    folder: tests never read what the app or another session stored."""
    before = os.environ.get(diskcache.DIR_ENV)
    os.environ[diskcache.DIR_ENV] = str(tmp_path_factory.mktemp("results-cache"))
    yield
    if before is None:
        del os.environ[diskcache.DIR_ENV]
    else:
        os.environ[diskcache.DIR_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def whole_corpus_at_once():
    """The analysis pages compute over the whole corpus at once ($DISAN_FIRST_SAMPLE = 0), so that page tests
    pay for no partial stages; the tests of the stages set their own first sample."""
    before = os.environ.get(progressive.FIRST_ENV)
    os.environ[progressive.FIRST_ENV] = "0"
    yield
    if before is None:
        del os.environ[progressive.FIRST_ENV]
    else:
        os.environ[progressive.FIRST_ENV] = before
