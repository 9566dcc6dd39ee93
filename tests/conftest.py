import os

import pytest
import torch

from disan.data import download, glove100, loaders, paths
from disan.data.text import Vocab
from disan.store import diskcache
from disan.analyses import progressive
from disan.nn import checkpoint
from disan.nn.heads import ModelConfig, TextModel
from disan.nn.model import DiSANConfig
from disan.training.board import LOGDIR_ENV

WORDS = "the glass bottle is big a man pouring of tea restaurant about to close biker fountain".split()
LABELS = {"classify": ["negative", "positive", "neutral"], "pair": ["entailment", "neutral", "contradiction"],
          "relatedness": ["1", "2", "3", "4", "5"]}


def make_model(kind: str = "classify", encoder: str = "disan", seed: int = 0,
               classes: int | None = None) -> tuple[TextModel, Vocab]:
    torch.manual_seed(seed)
    vocab = Vocab.build([WORDS])
    cfg = ModelConfig(vocab_size=len(vocab), n_classes=classes or len(LABELS[kind]), kind=kind, encoder=encoder, d_fc=8,
                      encoder_cfg=DiSANConfig(d_e=6, d_h=5, dropout=0.0))
    model = TextModel(cfg)
    torch.nn.init.normal_(model.embed.weight)
    return model.eval(), vocab


@pytest.fixture
def make_checkpoint(tmp_path):
    """Save a tiny untrained model of a kind (with ``labels``, its classes; default LABELS'); returns its directory."""
    def make(kind="classify", name=None, encoder="disan", labels=None):
        labels = labels or LABELS[kind]
        model, vocab = make_model(kind, encoder, classes=len(labels))
        path = tmp_path / (name or f"tiny-{kind}")
        checkpoint.save(path, model, vocab, {"task": f"tiny-{kind}", "kind": kind, "labels": labels},
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


def set_for_session(name: str, value: str):
    """Set an environment variable for the whole session, in the tests and the processes they start, and
    put back what it was; a session fixture's body (``yield from``)."""
    before = os.environ.get(name)
    os.environ[name] = value
    yield
    if before is None:
        del os.environ[name]
    else:
        os.environ[name] = before


@pytest.fixture(scope="session", autouse=True)
def event_files_in_tmp(tmp_path_factory):
    """Training runs write TensorBoard event files under $DISAN_LOGDIR (by default runs/tensorboard in the
    checkout): in the tests, and in the training jobs they start, into a temporary folder instead."""
    yield from set_for_session(LOGDIR_ENV, str(tmp_path_factory.mktemp("tensorboard")))


@pytest.fixture(scope="session", autouse=True)
def no_fetched_vectors(tmp_path_factory):
    """Tests train with the 50d package, the default of a fresh machine, even where GloVe 100d was
    fetched: $DISAN_VECTORS_DIR points at an empty folder unless a test sets its own."""
    yield from set_for_session(glove100.VECTORS_ENV, str(tmp_path_factory.mktemp("vectors")))


@pytest.fixture(scope="session", autouse=True)
def results_cache_in_tmp(tmp_path_factory):
    """The analyses' on-disk result cache ($DISAN_CACHE_DIR, by default the user's cache folder) in a
    temporary folder: tests never read what the app or another session stored."""
    yield from set_for_session(diskcache.DIR_ENV, str(tmp_path_factory.mktemp("results-cache")))


@pytest.fixture(scope="session", autouse=True)
def uploads_in_tmp(tmp_path_factory):
    """The Training page keeps uploads in $DISAN_UPLOADS (by default uploads/ in the checkout): in the
    tests, in a temporary folder."""
    yield from set_for_session(paths.UPLOADS_ENV, str(tmp_path_factory.mktemp("uploads")))


@pytest.fixture(scope="session", autouse=True)
def whole_corpus_at_once():
    """The analysis pages compute over the whole corpus at once ($DISAN_FIRST_SAMPLE = 0), so that page tests
    pay for no partial stages; the tests of the stages set their own first sample."""
    yield from set_for_session(progressive.FIRST_ENV, "0")
