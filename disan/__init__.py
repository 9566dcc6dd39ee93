"""DiSAN: Directional Self-Attention Network (Shen et al., AAAI 2018), with a trace of every attention internal."""
# The model's classes are imported at their first use: ``import disan.app.early`` (the app's first line)
# must reach the browser before torch's import (1.7 s).
_MODEL = ("DiSANConfig", "DiSANEncoder", "EncoderTrace")


DISTRIBUTION = "disan-explorer"  # the name pip installs it under (pyproject.toml)


def _version() -> str:
    """The installed distribution's version; in a checkout that is not installed, pyproject.toml's."""
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path
        with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
            return tomllib.load(f)["project"]["version"]


def __getattr__(name: str):
    if name in _MODEL:
        from disan.nn import model
        return getattr(model, name)
    if name == "__version__":  # read at first use: importing the package reads no metadata
        globals()["__version__"] = _version()
        return globals()["__version__"]
    raise AttributeError(f"module 'disan' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODEL, "__version__"})


def load(path, kernel=None, device="cpu"):
    """Load a checkpoint directory as a :class:`disan.inspect.pipeline.Pipeline` (``predict``, ``trace``);
    in Jupyter, what they return shows itself (the prediction, the forward/backward heatmaps).

    ``kernel`` overrides the checkpoint's token2token path (see :mod:`disan.nn.kernels`); the model
    runs on ``device`` (auto, cpu, cuda or cuda:N).
    """
    from disan import viz  # noqa: F401  (how predictions and traces show themselves in Jupyter)
    from disan.inspect.pipeline import load as _load
    return _load(path, kernel, device)


__all__ = ["DiSANConfig", "DiSANEncoder", "EncoderTrace", "load", "__version__"]
