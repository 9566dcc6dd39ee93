"""The analyses' settings that the command line shows as defaults and choices, as plain values.

``disan COMMAND --help`` builds its parser without importing torch, numpy, pandas or plotly, so what a
parser shows is defined here, and the analyses import it from here.
"""
# Bootstrap resamples behind every interval (the case study's, compare's). Their counts per cluster are
# held at once and cached: 2,000 resamples over the case study's 2,000 sentences are 32 MB, over SNLI's
# 9,824 test pairs 160 MB. (disan.analyses.stats)
RESAMPLES = 2_000

STEPS = 50  # integrated-gradients steps for one input (disan.analyses.attribution)

SAMPLE_SENTENCES = 2000  # the seeded sample of a corpus that the case study and the feature atlas measure (corpus)

# Faithfulness (disan.analyses.faithfulness): how a removed token goes, the side of a pair that
# is ranked and removed when it is both, and the randomisation checks' default sample (each stage explains
# every input again)
REMOVALS = ("delete", "unk")
BOTH = "both"
CASCADE_SENTENCES = 100
