"""DiSAN: Directional Self-Attention Network (Shen et al., AAAI 2018), with a trace of every attention internal."""
from disan.nn.model import DiSANConfig, DiSANEncoder, EncoderTrace


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
