"""Baselines of Table 3 (Zhu et al., WWW 2021), run on the same splits and, where unsupervised, the same evaluator.

Each baseline is a function ``(data, split, seed, quick, device) -> test accuracy in %``:

* ``raw`` — ℓ2 logistic regression on the raw features (:func:`gca.evaluate.linear_evaluation`).
* ``dgi`` — Deep Graph Infomax (Veličković et al., 2019) with PyTorch Geometric's ``DeepGraphInfomax``: one GCN
  layer of 512 units with PReLU, Adam (lr 0.001), up to 300 epochs with patience 20 on the loss, as in DGI's
  reference setting.
* ``gae`` / ``vgae`` — graph auto-encoders (Kipf & Welling, 2016) with PyG's ``GAE``/``VGAE`` and a two-layer GCN
  encoder, Adam (lr 0.01), 200 epochs. Widths 256 → 128 instead of the link-prediction setting's 32 → 16, so that
  the embedding is as wide as GCA's on most datasets.
* ``gcn`` / ``gat`` — supervised GCN (Kipf & Welling, 2017; 2 layers, 64 hidden units, dropout 0.5, lr 0.01,
  weight decay 5e-4) and GAT (Veličković et al., 2018; 8 heads × 8 units, dropout 0.6, lr 0.005, weight decay
  5e-4), trained end to end on the split's training nodes for 200 epochs; the test accuracy at the epoch of best
  validation accuracy is reported.
* ``deepwalk`` / ``node2vec`` (and ``deepwalk+features``) — PyG's ``Node2Vec`` (p = q = 1 is DeepWalk; node2vec
  uses p = 1, q = 0.5), 128 dimensions, walks of 80 steps, context 10, 10 walks per node. PyG's random walks live
  in the compiled ``pyg-lib`` package; where it is missing these raise :class:`BaselineUnavailable` and the
  tables say so.

Unsupervised baselines see the features row-normalised (their reference code does so) and are judged by the
same logistic regression as GCA (C chosen on the split's validation nodes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.data import Data

from .evaluate import Split, linear_evaluation


class BaselineUnavailable(RuntimeError):
    """The baseline cannot run in this environment (a package is missing); the message says why."""


Baseline = Callable[[Data, Split, int, bool, torch.device], float]


def _dense_features(data: Data, device: torch.device) -> torch.Tensor:
    x = data.x.to_dense() if data.x.is_sparse else data.x
    x = x.float()
    sums = x.sum(1, keepdim=True)
    return (x / torch.where(sums == 0, torch.ones_like(sums), sums)).to(device)


def _seed(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - PyG's samplers use the legacy global RNG


def _evaluate(embeddings: torch.Tensor, data: Data, split: Split) -> float:
    return linear_evaluation(embeddings.detach().cpu(), data.y, [split]).accuracies[0]


def raw_features(data: Data, split: Split, seed: int, quick: bool, device: torch.device) -> float:
    return linear_evaluation(data.x, data.y, [split]).accuracies[0]


def dgi(data: Data, split: Split, seed: int, quick: bool, device: torch.device) -> float:
    from torch_geometric.nn import DeepGraphInfomax, GCNConv

    _seed(seed)
    x, edge_index = _dense_features(data, device), data.edge_index.to(device)

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.act = GCNConv(x.shape[1], 512), nn.PReLU(512)

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
            return self.act(self.conv(x, edge_index))

    model = DeepGraphInfomax(
        512,
        encoder=Encoder(),
        summary=lambda z, *args, **kwargs: torch.sigmoid(z.mean(dim=0)),
        corruption=lambda x, edge_index: (x[torch.randperm(x.size(0), device=x.device)], edge_index),
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    best, best_state, waited = float("inf"), None, 0
    for _ in range(100 if quick else 300):
        model.train()
        optimizer.zero_grad()
        loss = model.loss(*model(x, edge_index))
        loss.backward()
        optimizer.step()
        value = loss.item()
        if value < best:
            best, waited = value, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            waited += 1
            if waited == 20:
                break
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        z, _, _ = model(x, edge_index)
    return _evaluate(z, data, split)


def _autoencoder(variational: bool) -> Baseline:
    def run(data: Data, split: Split, seed: int, quick: bool, device: torch.device) -> float:
        from torch_geometric.nn import GAE, VGAE, GCNConv

        _seed(seed)
        x, edge_index = _dense_features(data, device), data.edge_index.to(device)

        class Encoder(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1 = GCNConv(x.shape[1], 256)
                self.mu = GCNConv(256, 128)
                self.logstd = GCNConv(256, 128) if variational else None

            def forward(self, x: torch.Tensor, edge_index: torch.Tensor):
                h = F.relu(self.conv1(x, edge_index))
                if self.logstd is None:
                    return self.mu(h, edge_index)
                return self.mu(h, edge_index), self.logstd(h, edge_index)

        model = (VGAE if variational else GAE)(Encoder()).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(100 if quick else 200):
            model.train()
            optimizer.zero_grad()
            z = model.encode(x, edge_index)
            loss = model.recon_loss(z, edge_index)
            if variational:
                loss = loss + model.kl_loss() / x.shape[0]
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            z = model.encoder(x, edge_index)
            z = z[0] if variational else z  # the mean μ is the embedding
        return _evaluate(z, data, split)

    return run


def _supervised(architecture: str) -> Baseline:
    def run(data: Data, split: Split, seed: int, quick: bool, device: torch.device) -> float:
        from torch_geometric.nn import GATConv, GCNConv

        _seed(seed)
        x, edge_index = _dense_features(data, device), data.edge_index.to(device)
        y = data.y.to(device)
        classes = int(y.max()) + 1
        if architecture == "gcn":
            layers = nn.ModuleList([GCNConv(x.shape[1], 64), GCNConv(64, classes)])
            dropout, lr, act = 0.5, 0.01, F.relu
        else:
            layers = nn.ModuleList(
                [GATConv(x.shape[1], 8, heads=8, dropout=0.6), GATConv(64, classes, heads=1, dropout=0.6)]
            )
            dropout, lr, act = 0.6, 0.005, F.elu
        layers = layers.to(device)
        optimizer = torch.optim.Adam(layers.parameters(), lr=lr, weight_decay=5e-4)
        train, val, test = (torch.as_tensor(idx, device=device) for idx in split)

        def forward(training: bool) -> torch.Tensor:
            h = F.dropout(x, dropout, training)
            h = F.dropout(act(layers[0](h, edge_index)), dropout, training)
            return layers[1](h, edge_index)

        best_val, test_at_best = -1.0, 0.0
        for _ in range(200):
            layers.train()
            optimizer.zero_grad()
            F.cross_entropy(forward(True)[train], y[train]).backward()
            optimizer.step()
            layers.eval()
            with torch.no_grad():
                pred = forward(False).argmax(1)
            val_acc = float((pred[val] == y[val]).float().mean())
            if val_acc > best_val:
                best_val, test_at_best = val_acc, 100.0 * float((pred[test] == y[test]).float().mean())
        return test_at_best

    return run


def _random_walk(q: float, with_features: bool = False) -> Baseline:
    def run(data: Data, split: Split, seed: int, quick: bool, device: torch.device) -> float:
        from torch_geometric.nn import Node2Vec

        _seed(seed)
        try:
            model = Node2Vec(
                data.edge_index, 128, walk_length=80, context_size=10, walks_per_node=10, p=1.0, q=q,
                num_nodes=data.num_nodes, sparse=True,
            ).to(device)  # fmt: skip
        except ImportError as exc:
            raise BaselineUnavailable(f"PyG's Node2Vec needs pyg-lib ({exc}); it is compiled and not on PyPI") from None
        loader = model.loader(batch_size=128, shuffle=True)
        optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
        for _ in range(1 if quick else 5):
            model.train()
            for pos, neg in loader:
                optimizer.zero_grad()
                model.loss(pos.to(device), neg.to(device)).backward()
                optimizer.step()
        z = model().detach().cpu()
        if with_features:
            z = torch.cat([F.normalize(z), F.normalize(_dense_features(data, torch.device("cpu")))], dim=1)
        return _evaluate(z, data, split)

    return run


BASELINES: dict[str, tuple[str, str, Baseline]] = {
    # key: (row label in Table 3, training data, function)
    "raw": ("Raw features", "X", raw_features),
    "node2vec": ("node2vec", "A", _random_walk(q=0.5)),
    "deepwalk": ("DeepWalk", "A", _random_walk(q=1.0)),
    "deepwalk+features": ("DeepWalk + features", "X, A", _random_walk(q=1.0, with_features=True)),
    "gae": ("GAE", "X, A", _autoencoder(variational=False)),
    "vgae": ("VGAE", "X, A", _autoencoder(variational=True)),
    "dgi": ("DGI", "X, A", dgi),
    "gcn": ("GCN", "X, A, Y", _supervised("gcn")),
    "gat": ("GAT", "X, A, Y", _supervised("gat")),
}
