"""DiSAN: Directional Self-Attention Network (Shen et al., AAAI 2018), with a trace of every attention internal."""
from disan.nn.model import DiSANConfig, DiSANEncoder, EncoderTrace


def load(path, kernel=None, device="cpu"):
    """Load a checkpoint directory as a :class:`disan.inspect.pipeline.Pipeline` (``predict``, ``trace``).

    ``kernel`` overrides the checkpoint's token2token path (see :mod:`disan.nn.kernels`); the model
    runs on ``device`` (auto, cpu, cuda or cuda:N).
    """
    from disan.inspect.pipeline import load as _load
    return _load(path, kernel, device)


__all__ = ["DiSANConfig", "DiSANEncoder", "EncoderTrace", "load"]
