"""The names and defaults that the command line offers from the data floor, as plain values.

``disan --help`` and ``disan COMMAND --help`` build every parser without importing numpy, pandas or torch,
so what a parser shows is defined here, and the modules that use it import it from here. Where a registry
maps names to code (the model kinds, the benchmarks, the file formats), this module holds the names it
offers; tests/test_startup.py checks them against the registry's keys.
"""
SPLITS = ("train", "dev", "test")  # the example lists of a TaskData (disan.data.loaders)
# SST's training phrases: each distinct text once, every node each time it occurs, or every node with extra
# copies of the non-neutral ones (disan.data.loaders.load_sst)
SST_NODES = ("unique", "every", "oversampled")
BATCHINGS = ("bucketed", "random")  # how shuffled training batches are formed (disan.data.batching.batch_indices)
# How the rows of words GloVe lacks start (``--oov-init``, disan.data.vectors): "uniform", U(-0.05, 0.05), <unk>
# included; "normal", N(0, 1) as in the authors' code, where <unk> is a zero row like padding.
OOV_INITS = ("uniform", "normal")
DEFAULT_FRACTION = 0.1  # a file of one's own: the share of its rows drawn as dev, and as test (disan.data.files)

# The names of the registries' entries
KIND_NAMES = ("classify", "pair", "relatedness")  # disan.data.kinds.KINDS
BENCHMARK_NAMES = ("sst5", "sst2", "trec", "subj", "mpqa", "cr", "mr", "sick", "sick-e", "snli")  # registry.BENCHMARKS
FORMAT_NAMES = (".csv", ".tsv", ".jsonl", ".txt")  # disan.data.files.FORMATS
# Of those, the formats whose columns are the file's own, so that a label column can be among them: what
# training reads (the formats of disan.data.files.FORMATS whose ``columns`` is None)
TABLES = (".csv", ".tsv", ".jsonl")
