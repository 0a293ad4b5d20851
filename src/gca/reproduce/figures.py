"""The paper's figures (Zhu et al., WWW 2021): the Karate club's edge centrality (Figure 3, on a force-directed
layout of our own) and the sensitivity of accuracy to the removal and masking probabilities (Figure 4, a heatmap)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..augment.augmentors import edge_weights
from ..augment.centrality import node_centrality
from ..datasets import KARATE_LEADERS, karate_club
from ..outputs.plots import pyplot, save_figure


def sensitivity_heatmap(
    accuracy: np.ndarray, p_e: Sequence[float], p_f: Sequence[float], path: str | Path, title: str
) -> None:
    """Accuracy over the (p_e, p_f) grid, written to the PNG ``path`` (atomically): rows p_e, columns p_f; missing
    cells (NaN) are left blank.

    Parameters
    ----------
    accuracy
        ``[len(p_e), len(p_f)]`` accuracies (%), NaN where a cell has no number; the colour scale spans the finite
        ones.
    p_e
        The edge-removal probabilities of the rows (p_e = p_e,1 = p_e,2), bottom to top.
    p_f
        The feature-masking probabilities of the columns (p_f = p_f,1 = p_f,2), left to right.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(2.4 + 0.75 * len(p_f), 1.6 + 0.62 * len(p_e)))
    finite = accuracy[np.isfinite(accuracy)]
    low, high = (finite.min(), finite.max()) if finite.size else (0, 1)
    image = ax.imshow(accuracy, origin="lower", cmap="viridis", vmin=low, vmax=high, aspect="auto")
    for i in range(len(p_e)):
        for j in range(len(p_f)):
            if np.isfinite(accuracy[i, j]):
                bright = (accuracy[i, j] - low) / max(high - low, 1e-9) > 0.6
                ax.text(
                    j,
                    i,
                    f"{accuracy[i, j]:.1f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if bright else "white",
                )
    ax.set_xticks(range(len(p_f)), [f"{p:.1f}" for p in p_f])
    ax.set_yticks(range(len(p_e)), [f"{p:.1f}" for p in p_e])
    ax.set_xlabel("p_f = p_f,1 = p_f,2 (feature masking)")
    ax.set_ylabel("p_e = p_e,1 = p_e,2 (edge removal)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="accuracy (%)")
    save_figure(fig, path)


def spring_layout(edge_index: np.ndarray, num_nodes: int, seed: int = 0, iterations: int = 300) -> np.ndarray:
    """Fruchterman–Reingold force-directed positions in [0, 1]², deterministic for a seed (dense: small graphs).

    Parameters
    ----------
    edge_index
        ``[2, E]`` node indices of the edges; each edge attracts both ways, whichever direction it is listed in.
    iterations
        Force steps, each moving a node by at most the temperature (0.1, cooling by 1.5 % a step to 0.002).
    """
    rng = np.random.default_rng(seed)
    pos = rng.random((num_nodes, 2))
    adjacency = np.zeros((num_nodes, num_nodes))
    adjacency[edge_index[0], edge_index[1]] = 1.0
    adjacency = np.maximum(adjacency, adjacency.T)
    k = 1.6 / np.sqrt(num_nodes)  # a little more room than the textbook 1/√n, so labelled nodes do not overlap
    temperature = 0.1
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        distance = np.maximum(np.linalg.norm(delta, axis=-1), 1e-3)
        force = (k * k / distance**2 - adjacency * distance / k)[:, :, None] * delta
        displacement = force.sum(1)
        length = np.maximum(np.linalg.norm(displacement, axis=1, keepdims=True), 1e-9)
        pos += displacement / length * np.minimum(length, temperature)
        temperature = max(temperature * 0.985, 0.002)
    pos -= pos.min(0)
    pos /= pos.max(0)
    # Hubs joined by an edge are pulled onto each other; push apart pairs closer than the marker size.
    min_gap = 0.06
    for _ in range(100):
        delta = pos[:, None, :] - pos[None, :, :]
        distance = np.linalg.norm(delta, axis=-1) + np.eye(num_nodes)
        overlap = np.clip(min_gap - distance, 0, None)
        if not overlap.any():
            break
        pos += 0.5 * ((overlap / distance)[:, :, None] * delta).sum(1)
    return pos


def karate_edge_centrality(path: str | Path, seed: int = 0) -> dict[str, np.ndarray]:
    """Figure 3: the Karate club's edge centrality w_uv = (φ(u) + φ(v))/2 under degree, eigenvector and
    PageRank centrality, side by side; edge width ∝ w_uv (scaled to each panel's largest), nodes coloured by
    faction, the two leaders ("coaches") in orange, written to the PNG ``path`` (atomically). Returns the edge
    weights per scheme (undirected edges u < v); they do not depend on ``seed``, the layout's
    (:func:`spring_layout`)."""
    data = karate_club()
    n = data.num_nodes
    edges = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    pos = spring_layout(edges.numpy(), n, seed=seed)
    y = data.y.numpy()
    node_colors = np.where(y == y[KARATE_LEADERS[0]], "#4C72B0", "#55A868").astype(object)
    node_colors[list(KARATE_LEADERS)] = "#F28E2B"
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.6))
    weights = {}
    for ax, (scheme, label) in zip(
        axes, (("degree", "(a) Degree"), ("eigenvector", "(b) Eigenvector"), ("pagerank", "(c) PageRank")), strict=True
    ):
        phi = node_centrality(scheme, data.edge_index, n)
        w = edge_weights(edges, phi, directed=False).numpy()
        weights[scheme] = w
        widths = 0.3 + 5.7 * w / w.max()
        for (u, v), width in zip(edges.t().numpy(), widths, strict=True):
            ax.plot(*pos[[u, v]].T, color="#555555", lw=width, alpha=0.75, zorder=1, solid_capstyle="round")
        ax.scatter(pos[:, 0], pos[:, 1], s=170, c=list(node_colors), edgecolors="white", linewidths=1.0, zorder=2)
        for i in range(n):
            ax.text(*pos[i], str(i), ha="center", va="center", fontsize=6.5, color="white", zorder=3)
        ax.set_title(label)
        ax.set_axis_off()
        ax.set_aspect("equal")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color="#4C72B0", label="instructor's faction"),
        plt.Line2D([], [], marker="o", ls="", color="#55A868", label="administrator's faction"),
        plt.Line2D([], [], marker="o", ls="", color="#F28E2B", label="the two coaches (nodes 0, 33)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    fig.suptitle("Edge centrality w_uv = (φ(u) + φ(v)) / 2 in the Karate club; edge width ∝ w_uv")
    save_figure(fig, path)
    return weights
