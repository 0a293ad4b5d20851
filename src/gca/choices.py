"""Names shared by the torch-free command line and the library: centrality measures, evaluation protocols and
dataset names.

Kept free of heavy imports so that ``gca --help`` and argument errors answer without loading PyTorch.
"""

from __future__ import annotations

import re

#: The node centrality measures φ_c of Section 3.2.
CENTRALITIES = ("degree", "eigenvector", "pagerank")
#: What ``centrality`` may be set to: a measure, or ``uniform`` (no centrality: GCA–T–A, i.e. GRACE).
CENTRALITY_CHOICES = (*CENTRALITIES, "uniform")
#: How frozen embeddings are judged (gca.evaluate.classification): scikit-learn's logistic regression (the default) or
#: the GCA authors' script (gca.evaluate.probe).
PROTOCOLS = ("sklearn", "authors")
#: Which labelled nodes train, validate and test that judge (gca.evaluate.splits).
SPLIT_SCHEMES = ("auto", "random", "public", "fewshot")
#: The encoders f a config can name: gca's own GCN (the paper's) and PyTorch Geometric's GAT, GraphSAGE and GIN.
ENCODERS = ("gcn", "gat", "sage", "gin")
#: What a run measures with the embeddings (gca.run.tasks): node classification, link prediction or clustering.
TASKS = ("classify", "link", "cluster")
#: How many times each task judges a run when no count is given: evaluation splits (classify), hold-outs
#: each with its own training (link), k-means seeds (cluster). The one source of these defaults.
TASK_COUNTS = {"classify": 20, "link": 3, "cluster": 10}


def canonical_name(name: str) -> str:
    """The key a dataset name is looked up by: 'Amazon-Photo', 'amazon photo', 'Amazon_Photo' → 'amazonphoto'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())
