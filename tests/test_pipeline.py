import pytest
import torch

import disan
from disan.data.text import MAX_CHARS, MAX_TOKENS

pytestmark = pytest.mark.quick


def test_predict_and_trace_agree(make_checkpoint):
    pipe = disan.load(make_checkpoint("classify"))
    assert not pipe.is_pair and pipe.labels == ["negative", "positive", "neutral"]
    texts = ["The glass bottle is big", "A man is pouring a glass of tea", "zzz unknownword"]
    preds = pipe.predict(texts)
    # batches are sorted by length; the predictions still come in the inputs' order
    for small, pred in zip(pipe.predict(texts, batch_size=2), preds):
        assert small.label == pred.label and small.probs == pytest.approx(pred.probs, abs=1e-5)
    for text, pred in zip(texts, preds):
        assert abs(sum(pred.probs.values()) - 1) < 1e-5 and pred.label == max(pred.probs, key=pred.probs.get)
        tr = pipe.trace(text)
        assert tr.prediction.label == pred.label
        assert all(abs(tr.prediction.probs[k] - v) < 1e-5 for k, v in pred.probs.items())
    tr = pipe.trace("The glass bottle is big")
    t = tr.sentence.trace
    assert tr.sentence.tokens == ["The", "glass", "bottle", "is", "big"]
    assert [b.name for b in t.blocks] == ["forward", "backward"]
    assert t.forward.probs.shape == (5, 5, 5) and t.backward.gate.shape == (5, 5)
    assert t.forward.mask.shape == (5, 5) and bool(t.forward.mask[4, 0]) and not t.backward.mask[4, 0]
    assert t.source2token.probs.shape == (5, 10)
    assert pipe.trace("zzz unknownword").sentence.unknown == ["zzz", "unknownword"]


def test_pair_models_take_pairs(make_checkpoint):
    pipe = disan.load(make_checkpoint("pair"))
    assert pipe.is_pair
    tr = pipe.trace(("A man is pouring tea", "A man is big"))
    assert tr.premise.tokens[-1] == "tea" and tr.hypothesis.tokens[-1] == "big" and tr.sentence is None
    assert pipe.predict([("a man", "a biker")])[0].label in pipe.labels
    with pytest.raises(ValueError, match="pair"):
        pipe.predict(["one sentence"])
    rel = disan.load(make_checkpoint("relatedness"))
    pred = rel.predict([("a man", "a man")])[0]
    assert 1 <= pred.score <= 5 and abs(pred.score - sum(float(k) * p for k, p in pred.probs.items())) < 1e-5


@pytest.mark.parametrize("text,message", [("", "empty"), ("   \n\t ", "empty"), (None, "string"),
                                           ("word " * (MAX_TOKENS + 1), str(MAX_TOKENS)),
                                           ("x" * (MAX_CHARS + 1), f"{MAX_CHARS:,}")])
def test_text_it_cannot_handle_raises_a_clear_value_error(make_checkpoint, text, message):
    pipe = disan.load(make_checkpoint())
    with pytest.raises(ValueError, match=message):
        pipe.trace(text)


def test_the_cached_model_is_not_mutated(make_checkpoint):
    pipe = disan.load(make_checkpoint())
    before = {k: v.clone() for k, v in pipe.model.state_dict().items()}
    pipe.trace("the glass <script>alert(1)</script> 🙂")
    pipe.predict(["tea", "a man"])
    assert all(torch.equal(before[k], v) for k, v in pipe.model.state_dict().items())
    assert not pipe.model.training


def test_the_model_goes_to_the_asked_device_and_results_come_back_on_the_cpu(make_checkpoint):
    path = make_checkpoint()
    auto = disan.load(path, device="auto")  # cuda where a GPU is visible, else the CPU
    assert auto.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    cpu = disan.load(path, device="cpu")
    assert cpu.device == torch.device("cpu") and disan.load(path).device == torch.device("cpu")  # the default
    for pipe in (auto, cpu):
        t = pipe.trace("The glass bottle is big").sentence.trace
        assert t.forward.probs.device.type == t.encoding.device.type == t.source2token.probs.device.type == "cpu"
    assert auto.predict(["tea"])[0].probs == pytest.approx(cpu.predict(["tea"])[0].probs, abs=1e-5)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_asking_for_cuda_without_it_is_a_clear_value_error(make_checkpoint):
    with pytest.raises(ValueError, match="CUDA is not available.*use --device cpu or auto"):
        disan.load(make_checkpoint(), device="cuda")
