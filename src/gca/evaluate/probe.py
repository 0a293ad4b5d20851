"""The GCA authors' evaluation protocol: a linear layer trained with Adam, judged at its best validation check.

What the public training script of Zhu et al. (github.com/CRIPAC-DIG/GCA, ``pGRACE/eval.py``) does with frozen
embeddings Z, and what :func:`adam_probe` does on every split at once:

* one linear layer ``softmax(Z W + b)`` on the *unnormalised* embeddings, initialised as their ``LogReg`` is:
  W Xavier-uniform, U(−a, a) with a = √(6 / (d + C)) for d inputs and C classes, and b = 0;
* full-batch training on the split's training nodes: cross-entropy, Adam with learning rate 0.01 and no weight
  decay, 3,000 epochs (800 on Wiki-CS's public splits);
* every 20 epochs, validation and test accuracy are measured; the reported accuracy is the test accuracy at the
  *first* check with the highest validation accuracy (a later check must be strictly better to replace it).

The splits train as one batched program (weights ``[S, d, C]``; sparse features stay sparse), split s from its own
generator seeded ``run_seeds(seed, S)[s]``, so the result equals training each split on its own. Design notes:
docs/design/training.md.
"""

from __future__ import annotations

import contextlib
import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from torch.nn import functional as F

from ..graph.sparse import csr_tensor
from ..progress import phase
from ..seeds import run_seeds
from .splits import index_splits, renumber_classes

#: The authors' settings (``pGRACE/eval.py`` and ``train.py``).
PROBE_EPOCHS = 3000
PROBE_LR = 0.01
CHECK_EVERY = 20

#: Above this many bytes the stacked training rows of all splits are not gathered at once: each split's rows are
#: multiplied on their own.
BATCHED_BYTES = 256 * 2**20

#: Dense features with at most this fraction of non-zero entries (raw bag-of-words features stored dense, as PyTorch
#: Geometric loads them) are judged as a sparse matrix: the same arithmetic on the non-zero entries only.
SPARSE_BELOW = 0.1

#: On the CPU, a probe whose work per epoch — the splits' training products S·T·d·C plus a 20th of the checks'
#: S·N·d·C — is below :data:`SMALL_WORK` multiply-adds runs on :data:`PROBE_THREADS` thread(s): a second thread
#: gains nothing there and, beside another busy process, its waiting can make a small probe many times slower
#: (measured: docs/benchmarks.md, "The authors' evaluator on the CPU"). ``None``: PyTorch's threads throughout.
PROBE_THREADS: int | None = 1
SMALL_WORK = 10**5


def best_validation_check(val_accuracies: np.ndarray) -> np.ndarray:
    """Index of the check each split reports: the first one with the highest validation accuracy, of
    ``val_accuracies`` ``[checks, splits]`` in check order (a ``ValueError`` for another shape or no checks). A split
    whose validation accuracy is 0 at every check reports its first check (the authors' loop, starting from a best
    of 0, would report 0 — which only happens when nothing is learned)."""
    val_accuracies = np.asarray(val_accuracies)
    if val_accuracies.ndim != 2 or val_accuracies.shape[0] == 0:
        raise ValueError(f"expected [checks, splits] accuracies, got shape {val_accuracies.shape}")
    return np.argmax(val_accuracies, axis=0)  # argmax returns the first maximum


def _as_torch(features: torch.Tensor | np.ndarray | sp.spmatrix) -> torch.Tensor | sp.csr_matrix:
    """Features as a float32 dense tensor, or as a SciPy CSR matrix when they are sparse or at most
    :data:`SPARSE_BELOW` non-zero (rows are sliced there)."""
    if isinstance(features, torch.Tensor):
        features = features.detach().cpu()
        if features.is_sparse or features.layout == torch.sparse_csr:
            coo = features.to_sparse_coo().coalesce()
            rows, cols = coo.indices().numpy()
            return sp.csr_matrix((coo.values().float().numpy(), (rows, cols)), shape=tuple(coo.shape))
        features = features.float().contiguous()
    elif sp.issparse(features):
        return sp.csr_matrix(features, dtype=np.float32)
    else:
        features = torch.from_numpy(np.ascontiguousarray(features, dtype=np.float32))
    if features.numel() and torch.count_nonzero(features) <= SPARSE_BELOW * features.numel():
        return sp.csr_matrix(features.numpy())
    return features


class _StackedSparseRows:
    """Every split's training rows of a sparse X in one block-diagonal CSR matrix B (rows of split s, then of split
    s + 1; split s's columns shifted by s·d), so that each split's logits are one product with the stacked weights
    ``[S·d, C]``: ``B W`` is ``X[train_s] W_s`` for every s, and ``Bᵀ G`` the gradient of every ``W_s``."""

    def __init__(self, x: sp.csr_matrix, train_idx: list[np.ndarray], device: torch.device) -> None:
        blocks = sp.block_diag([x[t] for t in train_idx], format="csr", dtype=np.float32)
        self.matrix, self.transposed = _torch_csr(blocks).to(device), _torch_csr(blocks.T.tocsr()).to(device)
        self.split_of_row = torch.from_numpy(np.repeat(np.arange(len(train_idx)), [len(t) for t in train_idx]))
        self.split_of_row = self.split_of_row.to(device)

    def logits(self, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """``[R, C]``: row r's logits under its own split's classifier."""
        return torch.sparse.mm(self.matrix, weight.reshape(-1, weight.shape[2])) + bias[self.split_of_row, 0]

    def gradients(self, slope: torch.Tensor, weight_grad: torch.Tensor, bias_grad: torch.Tensor) -> None:
        """∂W = Bᵀ slope and ∂b = each split's sum of its rows' slopes, written into the gradients."""
        weight_grad.copy_(torch.sparse.mm(self.transposed, slope).view_as(weight_grad))
        bias_grad.zero_().index_add_(0, self.split_of_row, slope.unsqueeze(1))


def _torch_csr(matrix: sp.csr_matrix) -> torch.Tensor:
    matrix = sp.csr_matrix(matrix, dtype=np.float32)
    indptr, indices = (torch.from_numpy(a.astype(np.int64)) for a in (matrix.indptr, matrix.indices))
    return csr_tensor(indptr, indices, torch.from_numpy(matrix.data), matrix.shape)


def initial_weights(num_splits: int, dim: int, num_classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The classifiers' initial weights ``[S, d, C]`` and biases ``[S, 1, C]``, as the authors' ``LogReg`` sets
    them: W Xavier-uniform, U(−a, a) with a = √(6 / (d + C)), drawn in ``torch.nn.Linear``'s ``[C, d]`` order; b = 0.
    Split s draws from a CPU generator seeded ``run_seeds(seed, S)[s]``, whatever the other splits are.

    Parameters
    ----------
    num_splits
        S, the number of classifiers.
    dim
        d, the input width.
    num_classes
        C, the number of outputs.
    seed
        The seed split 0 draws from; the others' follow from it (:func:`gca.seeds.run_seeds`).
    """
    bound = math.sqrt(6.0 / (dim + num_classes))
    weights = [
        (torch.rand(num_classes, dim, generator=torch.Generator().manual_seed(s)) * 2 - 1) * bound
        for s in run_seeds(seed, num_splits)
    ]
    return torch.stack(weights).transpose(1, 2).contiguous(), torch.zeros(num_splits, 1, num_classes)


def adam_probe(
    features: torch.Tensor | np.ndarray | sp.spmatrix,
    labels: torch.Tensor | np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    epochs: int = PROBE_EPOCHS,
    lr: float = PROBE_LR,
    check_every: int = CHECK_EVERY,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = False,
    desc: str = "probe",
) -> ProbeResult:
    """Train one linear classifier per split as the authors do; return ``(test, val, epochs, macro_f1)``
    (:class:`ProbeResult`, fractions; epochs from 1) at the first check with the best validation accuracy.

    Parameters
    ----------
    features
        The frozen embeddings (or raw features), one row per node, not normalised: a dense tensor or array, or a SciPy
        sparse matrix (never densified whole; dense ones at most :data:`SPARSE_BELOW` non-zero are judged as one).
    labels
        One class value per node; −1 marks a node without a label (it must be in no split).
    splits
        ``(train, val, test)`` node indices per split, each part an index array or a boolean mask of one entry
        per node (:func:`~gca.evaluate.splits.index_splits`); every split gets its own classifier.
    epochs, lr, check_every
        Adam's epochs per classifier (at least ``check_every``), its learning rate (no weight decay) and the epochs
        between the validation and test checks: the authors' 3,000, 0.01 and 20.
    seed
        Seed of the initial weights, drawn on the CPU (:func:`initial_weights`): every device starts from the same.
    device
        Where the classifiers train; ``None``: where dense tensor features lie, else the CPU.
    progress, desc
        Show the epochs on stderr once the probe has run a few seconds (:func:`gca.progress.phase`), as ``desc``.
    """
    if epochs < check_every:
        raise ValueError(f"the probe checks every {check_every} epochs; give at least that many epochs, got {epochs}")
    if device is None:
        dense_tensor = isinstance(features, torch.Tensor) and features.layout == torch.strided
        device = features.device if dense_tensor else "cpu"
    device = torch.device(device)
    x = _as_torch(features)
    splits = index_splits(splits, x.shape[0], disjoint=False)  # evaluate_embeddings has checked a user's parts
    # classes renumbered 0 … C−1: one output per class present, whatever the class values
    y = torch.from_numpy(renumber_classes(labels.cpu() if isinstance(labels, torch.Tensor) else labels)).to(device)
    num_splits, dim = len(splits), x.shape[1]
    num_classes = int(y.max()) + 1
    sparse = sp.issparse(x)
    weight, bias = (w.to(device) for w in initial_weights(num_splits, dim, num_classes, seed))
    weight.requires_grad_(), bias.requires_grad_()
    optimizer = torch.optim.Adam([weight, bias], lr=lr, weight_decay=0.0)

    train_idx = [np.asarray(s[0], dtype=np.int64) for s in splits]
    longest = max(len(t) for t in train_idx)
    batched = not sparse and num_splits * longest * dim * 4 <= BATCHED_BYTES
    if sparse:  # every split's rows in one block-diagonal sparse matrix
        stacked = _StackedSparseRows(x, train_idx, device)
        onehot = F.one_hot(y[torch.from_numpy(np.concatenate(train_idx)).to(device)], num_classes).float()
        row_weight = (
            torch.from_numpy(np.concatenate([np.full(len(t), 1 / len(t)) for t in train_idx]).astype(np.float32))
            .unsqueeze(1)
            .to(device)
        )
        weight.grad, bias.grad = torch.empty_like(weight), torch.empty_like(bias)
    elif batched:  # padded [S, T, d] training rows; padding rows carry zero weight in the loss
        pad = torch.from_numpy(np.stack([np.pad(t, (0, longest - len(t)), constant_values=t[0]) for t in train_idx]))
        x, pad = x.to(device), pad.to(device)
        stacked = x[pad]
        stacked_t = stacked.transpose(1, 2).contiguous()
        row_weight = (
            torch.from_numpy(np.stack([(np.arange(longest) < len(t)) / len(t) for t in train_idx]).astype(np.float32))
            .unsqueeze(1)
            .to(device)
        )
        onehot = F.one_hot(y[pad], num_classes).float().transpose(1, 2).contiguous()  # [S, C, T]
        weight.grad, bias.grad = torch.empty_like(weight), torch.empty_like(bias)
    else:

        def part(t: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
            rows = torch.from_numpy(t)
            return x[rows].to(device), y[rows.to(device)]

        parts = [part(t) for t in train_idx]
    x = (_torch_csr(x) if sparse else x).to(device)

    val = [torch.from_numpy(np.asarray(s[1], dtype=np.int64)).to(device) for s in splits]
    test = [torch.from_numpy(np.asarray(s[2], dtype=np.int64)).to(device) for s in splits]
    work = num_splits * dim * num_classes * (sum(len(t) for t in train_idx) / num_splits + x.shape[0] / check_every)
    bar = phase(epochs - epochs % check_every, desc, "epoch", enabled=progress)  # the epochs up to the last check
    with (
        _threads(PROBE_THREADS if device.type == "cpu" and PROBE_THREADS and work < SMALL_WORK else None),
        contextlib.closing(bar),
    ):
        checks_val, checks_test, checks_f1 = [], [], []
        for epoch in range(epochs):
            if sparse:  # the same gradient, every split's rows in one sparse product each way
                with torch.no_grad():
                    slope = (torch.softmax(stacked.logits(weight, bias), 1) - onehot) * row_weight
                    stacked.gradients(slope, weight.grad, bias.grad)
            elif batched:
                # the gradient of the mean cross-entropy written out (no autograd graph):
                # ∂/∂logits = (softmax − onehot) / n_train, ∂W = Xᵀ ∂logits, ∂b = Σ_rows ∂logits — all with the
                # classes first ([S, C, T] logits: Wᵀ Xᵀ, and ∂Wᵀ = ∂logitsᵀ X): a product whose output has only
                # C ≈ 10 columns runs far below the machine's rate (measured: docs/benchmarks.md, "The authors'
                # probe against its own arithmetic")
                with torch.no_grad():
                    logits = torch.baddbmm(bias.transpose(1, 2), weight.transpose(1, 2), stacked_t)
                    slope = (torch.softmax(logits, 1) - onehot) * row_weight
                    weight.grad.copy_(torch.bmm(slope, stacked).transpose(1, 2))
                    torch.sum(slope, 2, out=bias.grad.view(num_splits, num_classes))
            else:
                optimizer.zero_grad(set_to_none=True)
                sum(F.cross_entropy(xs @ weight[s] + bias[s], ys) for s, (xs, ys) in enumerate(parts)).backward()
            optimizer.step()
            if (epoch + 1) % check_every == 0:
                with torch.no_grad():
                    predicted = _predict_all(x, weight, bias, sparse)  # [S, N]
                checks_val.append(_accuracies(predicted, y, val))
                checks_test.append(_accuracies(predicted, y, test))
                checks_f1.append(macro_f1s(predicted, y, test, num_classes))
                bar.update(check_every)
    val_acc, test_acc = np.array(checks_val), np.array(checks_test)
    chosen = best_validation_check(val_acc)
    columns = np.arange(num_splits)
    return ProbeResult(
        test_acc[chosen, columns],
        val_acc[chosen, columns],
        (chosen + 1) * check_every,
        np.array(checks_f1)[chosen, columns],
    )


@contextlib.contextmanager
def _threads(count: int | None):
    """PyTorch's intra-op threads set to ``count`` inside, restored after (``None``: left as they are)."""
    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if count is not None:
            torch.set_num_threads(before)


class ProbeResult(NamedTuple):
    """Each split's test and validation accuracy (fractions), reported epoch and test macro-F1 (a fraction)."""

    test: np.ndarray
    val: np.ndarray
    epochs: np.ndarray
    macro_f1: np.ndarray


def macro_f1s(predicted: torch.Tensor, y: torch.Tensor, parts: list[torch.Tensor], num_classes: int) -> list[float]:
    """Each split's macro-F1 on its nodes ``parts[s]``, from ``predicted`` ``[S, N]`` and the true classes ``y``
    ``[N]``, as scikit-learn's ``f1_score(average="macro")``: the mean over the classes among the true or predicted
    labels of 2·TP / (predicted + true), 0 for a class never predicted or never present."""
    scores = []
    for s, part in enumerate(parts):
        guess, truth = predicted[s, part], y[part]
        hits = torch.bincount(truth[guess == truth], minlength=num_classes).double()
        both = (torch.bincount(guess, minlength=num_classes) + torch.bincount(truth, minlength=num_classes)).double()
        seen = both > 0
        scores.append(torch.mean(2 * hits[seen] / both[seen]))
    return torch.stack(scores).tolist()


def _accuracies(predicted: torch.Tensor, y: torch.Tensor, parts: list[torch.Tensor]) -> list[float]:
    """Each split's accuracy on its nodes ``parts[s]``, read back from the device once."""
    return torch.stack([(predicted[s, part] == y[part]).float().mean() for s, part in enumerate(parts)]).tolist()


def _predict_all(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, sparse: bool) -> torch.Tensor:
    """Predicted class of every node under every split's classifier, ``[S, N]``."""
    if sparse:  # one product with every split's weights side by side: [N, d] · [d, S·C]
        num_splits, dim, num_classes = weight.shape
        logits = torch.sparse.mm(x, weight.permute(1, 0, 2).reshape(dim, num_splits * num_classes))
        return (logits.view(-1, num_splits, num_classes) + bias.view(1, num_splits, num_classes)).argmax(2).t()
    return (torch.einsum("nd,sdc->snc", x, weight) + bias).argmax(2)
