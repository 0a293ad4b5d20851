"""Some nodes of one graph as scikit-learn's model selection splits samples (:class:`GraphNodes`), pickled by their
values so that joblib's hash of equal graphs and nodes is equal."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ..config import ConfigError


class _TensorBytes:
    """A plain dense CPU tensor, pickled as the NumPy array of its bytes, its dtype and its shape (the pickle holds
    no address, so equal tensors pickle alike); unpickled, a tensor of its own memory."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def __reduce__(self) -> tuple:
        tensor = self.tensor
        flat = tensor.contiguous().reshape(-1).view(torch.uint8).numpy()
        return (_tensor_of_bytes, (flat, str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape)))


def _tensor_of_bytes(flat: np.ndarray, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    """The tensor :class:`_TensorBytes` pickled (copied: the array may be a read-only mapping of joblib's); a tensor
    of no elements (a graph without edges) is made empty, as its byte array cannot be viewed as another dtype."""
    if flat.size == 0:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    return torch.from_numpy(np.array(flat)).view(getattr(torch, dtype)).reshape(shape)


def _plain(value: Any) -> bool:
    """Whether ``value`` is a tensor :class:`_TensorBytes` pickles: a plain dense CPU tensor without gradient (not
    a subclass such as PyG's ``EdgeIndex``, whose own pickle keeps what it knows)."""
    return (
        type(value) is torch.Tensor
        and value.layout == torch.strided
        and value.device.type == "cpu"
        and not value.requires_grad
        and not value.is_quantized
    )


def _stable_data(data: Any) -> Any:
    """A shallow copy of a PyG ``Data`` whose plain tensors pickle as :class:`_TensorBytes` (anything else as it
    is); an object of another kind is returned as it is."""
    if not isinstance(data, Data):
        return data
    copied = copy.copy(data)
    mapping = copied._store._mapping
    for key, value in list(mapping.items()):
        if _plain(value):
            mapping[key] = _TensorBytes(value)
    return copied


class GraphNodes:
    """Some nodes of one graph, as scikit-learn's model selection splits samples: ``GraphNodes(data)`` stands for
    every node of ``data`` (node i its row i) and ``nodes[idx]`` (an integer or boolean array, a slice, a list) for
    those of them, in that order. Its ``shape`` is ``(len(nodes),)``, so ``cross_val_score``, ``GridSearchCV`` and
    ``train_test_split`` split it like an array, ``y`` holding the nodes' labels in the same order. :class:`GCA` fits
    on the whole graph whatever nodes are given and ``transform`` gives their rows, so a ``Pipeline`` of GCA and a
    classifier is the paper's linear evaluation with scikit-learn's folds and scorer. Pickled (so hashed by joblib)
    by its values, so ``Pipeline(memory=...)`` finds a fold it fitted before.

    Parameters
    ----------
    data
        The whole graph: a PyG ``Data`` with ``x`` and ``edge_index`` (anything else is a ``ConfigError``).
    index
        The ids of the nodes it stands for (a 1-D array or list of integers in ``[0, N)``, in the order wanted);
        ``None`` for every node in order.
    """

    def __init__(self, data: Data, index: Any = None) -> None:
        num_nodes = getattr(data, "num_nodes", None)
        if not (hasattr(data, "x") and hasattr(data, "edge_index")) or num_nodes is None:
            raise ConfigError(
                f"GraphNodes takes a torch_geometric.data.Data with x and edge_index, got {type(data).__name__}"
            )
        self.data = data
        self.index = torch.arange(int(num_nodes)) if index is None else torch.as_tensor(index, dtype=torch.long)
        if self.index.dim() != 1:
            raise ConfigError(f"GraphNodes takes a 1-D array of node ids, got shape {tuple(self.index.shape)}")
        if self.index.numel() and (int(self.index.min()) < 0 or int(self.index.max()) >= int(num_nodes)):
            raise ConfigError(
                f"GraphNodes: node ids must lie in [0, {int(num_nodes) - 1}], got "
                f"[{int(self.index.min())}, {int(self.index.max())}]"
            )

    @property
    def shape(self) -> tuple[int]:
        return (int(self.index.numel()),)

    def __len__(self) -> int:
        return int(self.index.numel())

    def __getitem__(self, key: Any) -> GraphNodes:
        if isinstance(key, tuple) and len(key) == 2 and key[1] is Ellipsis:  # nodes[idx, ...], as arrays are indexed
            key = key[0]
        if isinstance(key, slice):
            return GraphNodes(self.data, self.index[key])
        key = torch.as_tensor(np.asarray(key))
        key = key.reshape(-1) if key.dim() == 0 else key
        return GraphNodes(self.data, self.index[key if key.dtype == torch.bool else key.long()])

    def __repr__(self) -> str:
        return f"GraphNodes({len(self)} of {int(self.data.num_nodes)} nodes)"

    def __reduce__(self) -> tuple:
        """Pickled with every plain dense CPU tensor of its graph and node ids as :class:`_TensorBytes`, so the
        pickle, and joblib's hash, depend on the values alone (docs/design/training.md)."""
        index = _TensorBytes(self.index) if _plain(self.index) else self.index  # ids on a GPU: PyTorch's pickle
        return (GraphNodes, (_stable_data(self.data), index))
