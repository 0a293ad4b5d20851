import numpy as np
import scipy.sparse as sp
import torch
from conftest import path_graph, undirected
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from gca.graph.graph import prepare_graph
from gca.graph.sparse import normalized_adjacency, scipy_to_sparse
from gca.nn.gcn import GCNEncoder, ProjectionHead
from gca.nn.model import GCAModel
from gca.objective import ContrastiveObjective


def test_normalized_adjacency_equals_dense_formula():
    edges = undirected([(0, 1), (1, 2), (2, 3), (0, 2)])
    a = torch.zeros(4, 4)
    a[edges[0], edges[1]] = 1
    a_hat = a + torch.eye(4)
    d = a_hat.sum(1).rsqrt()
    expected = d[:, None] * a_hat * d[None, :]
    got = normalized_adjacency(edges, 4, symmetric=True).to_dense()
    assert torch.allclose(got, expected)
    graph = prepare_graph(Data(x=torch.ones(4, 1), edge_index=edges))  # coalesced: the sort-free construction
    fast = normalized_adjacency(graph.edge_index, 4, symmetric=True, coalesced=True)
    assert torch.allclose(fast.to_dense(), expected)
    for r in range(4):  # columns sorted within every row, as CSR products expect
        lo, hi = fast.matrix.crow_indices()[r], fast.matrix.crow_indices()[r + 1]
        assert bool((fast.matrix.col_indices()[lo:hi].diff() > 0).all())


def _encoder_like(conv: GCNConv, out_channels: int, factor: int) -> GCNEncoder:
    """An encoder whose first layer has ``conv``'s weights."""
    encoder = GCNEncoder(conv.in_channels, out_channels, num_layers=2, first_layer_factor=factor)
    with torch.no_grad():
        encoder.layers[0].weight.copy_(conv.lin.weight.t())
        encoder.layers[0].bias.copy_(conv.bias)
    return encoder


def test_gcn_layer_matches_pyg_gcnconv_on_directed_graph():
    edges = torch.tensor([[0, 1, 2, 3, 0], [1, 2, 0, 1, 3]])
    x = torch.randn(4, 5)
    conv = GCNConv(5, 3)
    layer = _encoder_like(conv, 3, 1).layers[0]
    adjacency = normalized_adjacency(edges, 4, symmetric=False)
    assert torch.allclose(layer(x, adjacency), torch.relu(conv(x, edges)), atol=1e-6)


def test_a_widening_layer_aggregates_first_with_pyg_gcnconv_values_and_gradients():
    """F < F': (M X) W moves fewer columns through the sparse product; same output and weight gradient."""
    edges = torch.tensor([[0, 1, 2, 3, 0, 2], [1, 2, 0, 1, 3, 3]])
    x = torch.randn(4, 3)
    conv = GCNConv(3, 8)
    encoder = _encoder_like(conv, 4, 2)
    layer = encoder.layers[0]
    adjacency = normalized_adjacency(edges, 4, symmetric=False)
    out = layer(x, adjacency)
    want = torch.relu(conv(x, edges))
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
    out.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(layer.weight.grad, conv.lin.weight.grad.t(), rtol=1e-5, atol=1e-6)
    mask = torch.tensor([1.0, 0.0, 1.0])  # masking W's rows is masking X's columns on this path too
    torch.testing.assert_close(encoder(x, adjacency, mask), encoder(x * mask, adjacency), rtol=1e-6, atol=1e-7)


def test_masking_weight_rows_equals_masking_features_sparse_and_dense():
    torch.manual_seed(0)
    x = (torch.rand(6, 10) < 0.3).float()
    mask = (torch.rand(10) < 0.6).float()
    graph = prepare_graph(path_graph(6, features=x))
    adjacency = normalized_adjacency(graph.edge_index, 6, symmetric=True)
    encoder = GCNEncoder(10, 4, activation="prelu")
    sparse_x = scipy_to_sparse(sp.csr_matrix(x.numpy()))
    masked = encoder(x * mask, adjacency)
    assert torch.allclose(encoder(x, adjacency, mask), masked, atol=1e-6)
    assert torch.allclose(encoder(sparse_x, adjacency, mask), masked, atol=1e-6)
    # gradients through the sparse path equal the dense ones
    encoder(sparse_x, adjacency, mask).sum().backward()
    sparse_grad = encoder.layers[0].weight.grad.clone()
    encoder.zero_grad()
    encoder(x * mask, adjacency).sum().backward()
    assert torch.allclose(sparse_grad, encoder.layers[0].weight.grad, atol=1e-6)


def test_sparse_matrix_backward_uses_the_transpose():
    m = sp.random(5, 7, density=0.4, random_state=0, format="csr")
    op = scipy_to_sparse(m)
    h = torch.randn(7, 3, dtype=torch.float32, requires_grad=True)
    (op @ h).pow(2).sum().backward()
    dense = torch.tensor(m.toarray(), dtype=torch.float32)
    h2 = h.detach().clone().requires_grad_(True)
    (dense @ h2).pow(2).sum().backward()
    assert torch.allclose(h.grad, h2.grad, atol=1e-5)


def test_layer_widths_and_glorot_init():
    encoder = GCNEncoder(100, 32, num_layers=3, activation="elu")
    assert [tuple(layer.weight.shape) for layer in encoder.layers] == [(100, 64), (64, 64), (64, 32)]
    bound = np.sqrt(6 / (100 + 64))
    w = encoder.layers[0].weight
    assert float(w.abs().max()) <= bound and float(w.std()) > 0.5 * bound / np.sqrt(3)
    head = ProjectionHead(32, 16)
    assert head(torch.randn(5, 32)).shape == (5, 32)
    for name in ("relu", "prelu", "rrelu", "elu"):
        GCNEncoder(4, 2, activation=name)


def test_model_loss_is_differentiable():
    data = Data(x=torch.eye(5), edge_index=undirected([(0, 1), (1, 2), (3, 4)]))
    graph = prepare_graph(data)
    model = GCAModel(GCNEncoder(5, 4), ProjectionHead(4, 4), ContrastiveObjective(tau=0.5))
    adjacency = normalized_adjacency(graph.edge_index, 5, symmetric=True)
    h = model(graph.features, adjacency)
    loss = model.loss(h, h)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_model_takes_its_parts():
    """Any objective with the (u, v) → loss call plugs in; from_config builds the paper's parts."""
    from gca.config import GCAConfig

    calls = []

    class MeanDistance(torch.nn.Module):
        def forward(self, u, v):
            calls.append(u.shape)
            return (u - v).pow(2).sum(1).mean()

    data = Data(x=torch.eye(5), edge_index=undirected([(0, 1), (1, 2), (3, 4)]))
    graph = prepare_graph(data)
    adjacency = normalized_adjacency(graph.edge_index, 5, symmetric=True)
    model = GCAModel(GCNEncoder(5, 4), ProjectionHead(4, 3), MeanDistance())
    h = model(graph.features, adjacency)
    model.loss(h, h + 1).backward()
    assert calls == [torch.Size([5, 4])]
    built = GCAModel.from_config(5, GCAConfig(hidden=8, tau=0.3))
    assert isinstance(built.objective, ContrastiveObjective) and built.objective.tau == 0.3
    assert set(built.state_dict()) == {k for k in built.state_dict() if k.startswith(("encoder.", "projector."))}


def test_chunked_inference_equals_the_whole_graph_pass():
    """Over row blocks (sparse and dense input, directed and undirected graphs — the latter's operator built
    block by block —, PReLU, layers handing H W over to the next): the same embeddings as one whole pass."""
    from gca.config import GCAConfig
    from gca.train.inference import encode_graph

    g = torch.Generator().manual_seed(0)
    n = 203
    edges = torch.randint(0, n, (2, 900), generator=g)
    # 40 → 32 → 32 → 16 aggregates M (H W); 8 → 32 aggregates the narrower (M X) W first; and sparse input
    for x in (
        torch.rand(n, 40, generator=g),
        torch.rand(n, 8, generator=g),
        (torch.rand(n, 300, generator=g) < 0.03).float(),
    ):
        for directed in (True, False):
            pairs = edges if directed else torch.cat([edges, edges.flip(0)], 1)
            graph = prepare_graph(Data(x=x, edge_index=pairs), directed=directed)
            for layers in (2, 3):
                config = GCAConfig(hidden=16, proj_hidden=16, activation="prelu", layers=layers)
                model = GCAModel.from_config(x.shape[1], config)
                whole = encode_graph(model, graph, chunk_rows=0)
                for rows in (1, 17, 64, 202):
                    chunked = encode_graph(model, graph, chunk_rows=rows)
                    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)


def test_adjacency_rows_equal_the_whole_operator():
    """Blocks of AdjacencyRows hold exactly the entries of the same rows of the full normalised adjacency
    (isolated nodes, the first and last rows, one-row blocks)."""
    from gca.graph.sparse import AdjacencyRows

    graph = prepare_graph(Data(x=torch.ones(7, 1), edge_index=undirected([(0, 1), (1, 2), (1, 5), (2, 5), (3, 6)])))
    whole = normalized_adjacency(graph.edge_index, 7, symmetric=True, coalesced=True).to_dense()
    rows = AdjacencyRows(graph.edge_index, 7)
    for start, stop in ((0, 7), (0, 1), (1, 4), (4, 5), (6, 7)):
        block = rows.row_slice(start, stop)
        assert torch.equal(block.to_dense(), whole[start:stop])
        assert torch.equal(block.col_indices(), block.to_sparse_coo().coalesce().indices()[1])  # columns sorted
    # node 4 has no edge: its row is its self-loop alone, 1 / (0 + 1)
    assert rows.row_slice(4, 5).to_dense()[0].tolist() == [0, 0, 0, 0, 1.0, 0, 0]
