"""A run's figures: the loss curve and the t-SNE map of the embeddings. Every figure (the paper's too) is written
atomically as a PNG by :func:`save_figure` (Agg backend, no display needed)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..io import atomic_write

#: t-SNE (scikit-learn) needs more points than its perplexity; below this a map says nothing anyway.
MIN_TSNE_NODES = 5
#: Nodes without a label (−1) in t-SNE maps: a grey that no class colour of tab10/tab20 uses.
UNLABELLED_COLOR = (0.82, 0.82, 0.82, 1.0)


def pyplot() -> Any:
    """matplotlib's ``pyplot`` on the Agg backend (no display needed), imported when a figure is first drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 150) -> None:
    """Render to memory first, then write atomically: an interrupted run never leaves half a PNG; ``fig`` is closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    pyplot().close(fig)
    atomic_write(path, lambda f: f.write(buffer.getvalue()))


def loss_curve(losses: Sequence[float], path: str | Path, title: str = "GCA training loss") -> None:
    """Plot the loss of every epoch (``GCA.losses``) to a PNG."""
    fig, ax = pyplot().subplots(figsize=(5, 3.2))
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=1.2)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss  −J (Eq. 2)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def tsne_map(
    embeddings: torch.Tensor | np.ndarray,
    labels: torch.Tensor | np.ndarray | None,
    path: str | Path,
    title: str = "t-SNE of GCA embeddings",
    seed: int = 0,
) -> None:
    """2-D t-SNE (scikit-learn, random state ``seed``) of the ``[N, d]`` embeddings, one colour per class of ``labels``
    (−1: none, in grey; ``None``: one colour)."""
    from sklearn.manifold import TSNE

    x = embeddings.detach().cpu().numpy() if isinstance(embeddings, torch.Tensor) else np.asarray(embeddings)
    perplexity = float(min(30.0, max(2.0, (x.shape[0] - 1) / 3)))
    points = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(x)
    fig, ax = pyplot().subplots(figsize=(5, 5))
    y = None if labels is None else labels.cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    labelled = np.ones(len(points), dtype=bool) if y is None else y >= 0
    if not labelled.all():  # label −1: a node without a label, drawn below the classes in neutral grey
        ax.scatter(
            points[~labelled, 0], points[~labelled, 1], s=3, alpha=0.5, color=UNLABELLED_COLOR, label="unlabelled"
        )
    if y is None:
        ax.scatter(points[:, 0], points[:, 1], s=3, alpha=0.7)
    elif labelled.any():
        classes = y[labelled]
        ax.scatter(
            points[labelled, 0],
            points[labelled, 1],
            c=classes,
            s=3,
            alpha=0.8,
            cmap="tab10" if classes.max() < 10 else "tab20",
            vmin=0,
            vmax=max(9, int(classes.max())),
        )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title)
    save_figure(fig, path)
