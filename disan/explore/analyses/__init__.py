"""Analyses across sentences, edits and models, behind the app's analysis pages:

* :mod:`~disan.explore.analyses.corpus`: one word's vectors over a corpus, projected and clustered ("Corpus senses");
* :mod:`~disan.explore.analyses.counterfactual`: edits, occlusion and attention knockout ("Counterfactuals");
* :mod:`~disan.explore.analyses.attribution`: gradient x input and integrated gradients against attention
  ("Attribution");
* :mod:`~disan.explore.analyses.compare`: two checkpoints on one sentence ("Compare models");
* :mod:`~disan.explore.analyses.casestudy`: the paper's case-study claims measured over a corpus ("Case study");
* :mod:`~disan.explore.analyses.report`: one standalone HTML file of a sentence (``python -m disan report``).

:mod:`~disan.explore.analyses.stats` holds the statistics they share (PCA, k-means, silhouette,
Kendall's tau, Gini, the cluster bootstrap, the row shuffles of null models), :mod:`~disan.inspect.measures`
the attention measures, :mod:`~disan.inspect.batched` the model run over many sentences, and
:mod:`~disan.explore.analyses.charts` their plotly figures. Everything returns
numpy arrays, pandas tables, plotly figures or :class:`disan.explore.views.Drawing`; nothing here imports
Streamlit.
"""
