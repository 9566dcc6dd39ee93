"""Floor 4, analyses: what is computed over sentences, edits, models and corpora, behind the analysis pages,
``viz`` and the commands. Results are dataclasses of numpy arrays and pandas tables; drawing them is
:mod:`disan.render`'s (a module of the same name), keeping them :mod:`disan.store`'s. An analysis over many
items is an :class:`~disan.analyses.protocol.Analysis` (the case study, the feature atlas, corpus senses).

* :mod:`~disan.analyses.corpus`: corpora, and one word's vectors over a corpus, projected and clustered
  ("Corpus senses");
* :mod:`~disan.analyses.counterfactual`: edits, occlusion and attention knockout ("Counterfactuals");
* :mod:`~disan.analyses.explainers`: the registry of the explanations of a prediction that the next two
  compare, each with its contract, and their one ranking rule;
* :mod:`~disan.analyses.gradients`: gradient x input and integrated gradients of the followed output;
* :mod:`~disan.analyses.attribution`: those attributions against attention ("Attribution");
* :mod:`~disan.analyses.compare`: two checkpoints on one sentence ("Compare models");
* :mod:`~disan.analyses.casestudy`: the paper's case-study claims measured over a corpus ("Case study");
* :mod:`~disan.analyses.atlas`: what each feature of a DiSA block does over a corpus ("Feature atlas");
* :mod:`~disan.analyses.faithfulness`: erasure, interventions and randomisation against their nulls
  ("Faithfulness");
* :mod:`~disan.analyses.stats`: the statistics they share (PCA, k-means, silhouette, Kendall's tau, Gini, the
  cluster bootstrap, the row shuffles of null models);
* :mod:`~disan.analyses.progressive`: computing over a corpus in growing samples;
* :mod:`~disan.analyses.protocol`: the shape of an analysis over many items, which the app runs in stages;
* :mod:`~disan.analyses.choices`: the settings the command line shows, as plain values.

Traces models through :mod:`disan.inspect`; never imports plotly, Streamlit, :mod:`disan.render` or
:mod:`disan.store`.
"""
