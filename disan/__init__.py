"""DiSAN: Directional Self-Attention Network (Shen et al., AAAI 2018), with a trace of every attention internal."""
# The model's classes are imported at their first use: ``import disan.app.early`` (the app's first line)
# must reach the browser before torch's import (1.7 s).
_MODEL = ("DiSANConfig", "DiSANEncoder", "EncoderTrace")


def __getattr__(name: str):
    if name in _MODEL:
        from disan.nn import model
        return getattr(model, name)
    raise AttributeError(f"module 'disan' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODEL})


def load(path, kernel=None, device="cpu"):
    """Load a checkpoint directory as a :class:`disan.inspect.pipeline.Pipeline` (``predict``, ``trace``);
    in Jupyter, what they return shows itself (the prediction, the forward/backward heatmaps).

    ``kernel`` overrides the checkpoint's token2token path (see :mod:`disan.nn.kernels`); the model
    runs on ``device`` (auto, cpu, cuda or cuda:N).
    """
    from disan import viz  # noqa: F401  (how predictions and traces show themselves in Jupyter)
    from disan.inspect.pipeline import load as _load
    return _load(path, kernel, device)


__all__ = ["DiSANConfig", "DiSANEncoder", "EncoderTrace", "load"]
