"""Print the parameter count of every Table 1 encoder (SNLI head, d_e = d_h = 300) next to the paper's figure."""
import argparse

PAPER = {"additive": 0.45e6, "s2t": 0.54e6, "multihead": 1.98e6, "bilstm": 2.88e6,
         "disan-nodir": 2.35e6, "disan": 2.35e6}


def table() -> list[tuple[str, int, int, float]]:
    """(encoder, encoder parameters, parameters with the SNLI head and without embeddings, paper's figure)."""
    # imported here, not at the top: ``disan params --help`` imports this module and needs no torch
    from disan.data.registry import BENCHMARKS
    from disan.nn.heads import ModelConfig, TextModel, count_parameters, paper_parameters
    rows = []
    for name in PAPER:
        snli = BENCHMARKS["snli"]
        model = TextModel(ModelConfig(vocab_size=2, n_classes=len(snli.labels), kind=snli.kind, encoder=name))
        rows.append((name, count_parameters(model.encoder), paper_parameters(model),
                     PAPER[name]))
    return rows


def parser() -> argparse.ArgumentParser:
    """The ``params`` command's arguments: none but --help."""
    return argparse.ArgumentParser(prog="python -m disan params", description=__doc__)


def main(argv=None) -> None:
    """``python -m disan params``: the table of :func:`table`."""
    parser().parse_args(argv)
    print(f"{'encoder':<12} {'encoder':>10} {'with head':>10} {'paper':>8}")
    for name, enc, total, paper in table():
        print(f"{name:<12} {enc:>10,} {total:>10,} {paper / 1e6:>7.2f}M")


if __name__ == "__main__":
    main()
