"""The CUDA path: the same numbers on a GPU. These run only where PyTorch sees a CUDA device (the lent GPU
machines of this project, users' machines); everything else in the suite covers the CPU path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import path_graph

from gca import GCA, GCAConfig
from gca.graph.sparse import SparseMatrix
from gca.objective import bf16_tensor_cores, contrastive_loss, reference_loss

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_blocked_objective_on_cuda_matches_the_reference():
    g = torch.Generator(device="cuda").manual_seed(0)
    u = torch.randn(777, 64, device="cuda", generator=g, requires_grad=True)
    v = torch.randn(777, 64, device="cuda", generator=g, requires_grad=True)
    for block in (0, 100):
        ref = reference_loss(u, v, 0.5)
        ref_grads = torch.autograd.grad(ref, (u, v))
        ours = contrastive_loss(u, v, 0.5, block)
        grads = torch.autograd.grad(ours, (u, v))
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=0)
        for a, b in zip(grads, ref_grads, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5 * float(b.abs().max()))


def test_sparse_matrix_product_and_gradient_on_cuda():
    dense = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]])
    sparse = SparseMatrix(dense.to_sparse_csr()).to("cuda")
    w = torch.randn(3, 4, device="cuda", requires_grad=True)
    out = sparse @ w
    torch.testing.assert_close(out, dense.cuda() @ w)
    out.sum().backward()
    torch.testing.assert_close(w.grad, dense.cuda().t() @ torch.ones(2, 4, device="cuda"))


def test_training_on_cuda_returns_finite_cpu_embeddings():
    data = path_graph(12, torch.rand(12, 5, generator=torch.Generator().manual_seed(0)))
    config = GCAConfig(epochs=5, hidden=8, proj_hidden=8, centrality="degree")
    gpu = GCA(config, device="cuda")
    out = gpu.fit_transform(data)
    assert gpu.device.type == "cuda" and next(gpu.model.parameters()).device.type == "cuda"
    # the measured default on GPUs with bf16 tensor cores; the blocked fp32 kernel on older ones
    expected = ("attention", "bf16") if bf16_tensor_cores(gpu.device) else ("blocked", "fp32")
    assert gpu.model.objective.resolved(gpu.device) == expected
    assert out.device.type == "cpu" and out.shape == (12, 8) and torch.isfinite(out).all()
    assert len(gpu.losses) == 5 and all(torch.isfinite(torch.tensor(gpu.losses)))


@pytest.mark.parametrize("width", [64, 12])  # 12: not a multiple of 8, which the CUDA kernels need (zero-padded)
@pytest.mark.parametrize(
    ("precision", "kernel", "tolerance"),
    [("fp32", "auto", 1e-5), ("tf32", "auto", 3e-3), ("bf16", "flash", 3e-3), ("bf16", "efficient", 3e-3)],
)
def test_attention_backend_on_cuda_matches_the_reference(precision, kernel, tolerance, width):
    from gca.objective import attention_loss

    if precision == "bf16" and not bf16_tensor_cores("cuda"):
        pytest.skip("bf16 and FlashAttention-2 need compute capability 8.0 (Ampere) or later")

    g = torch.Generator(device="cuda").manual_seed(1)
    u = torch.randn(1000, width, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1000, width, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    ref = reference_loss(u, v, 0.5)
    ref_grads = torch.autograd.grad(ref, (u, v))
    loss = attention_loss(u, v, 0.5, precision, kernel)
    grads = torch.autograd.grad(loss, (u, v))
    assert abs(float(loss) - float(ref)) <= tolerance * abs(float(ref))
    for got, want in zip(grads, ref_grads, strict=True):
        assert float((got - want).abs().max()) <= tolerance * float(want.abs().max())


@pytest.mark.parametrize(
    "overrides",
    [
        {"batch_size": 4, "fanout": (2,)},  # mini-batch: sampled on the CPU, embedded on the GPU
        {"loss_backend": "attention", "precision": "bf16"},
    ],
)
def test_minibatch_and_bf16_training_on_cuda_give_finite_embeddings(overrides):
    if overrides.get("precision") == "bf16" and not bf16_tensor_cores("cuda"):
        pytest.skip("bf16 attention needs compute capability 8.0 (Ampere) or later")
    data = path_graph(12, torch.rand(12, 5, generator=torch.Generator().manual_seed(0)))
    config = GCAConfig(epochs=3, hidden=8, proj_hidden=8, centrality="degree", **overrides)
    gpu = GCA(config, device="cuda")
    out = gpu.fit_transform(data)
    assert out.device.type == "cpu" and out.shape == (12, 8) and torch.isfinite(out).all()
    assert len(gpu.losses) == 3 and all(torch.isfinite(torch.tensor(gpu.losses)))
    if overrides.get("precision") == "bf16":  # same seed, same device: the same first views, so the first loss
        fp32 = GCA(GCAConfig(epochs=1, hidden=8, proj_hidden=8, centrality="degree", precision="fp32"), device="cuda")
        fp32.fit(data)  # differs from bf16's only by bf16 rounding
        assert abs(gpu.losses[0] - fp32.losses[0]) <= 1e-2 * abs(fp32.losses[0])


def test_the_sampler_on_cuda_takes_units_stored_on_the_cpu():
    """A prepared graph's stored units are CPU tensors; the sampler of a CUDA graph moves them beside its edges."""
    from torch_geometric.utils import coalesce

    from gca.graph.sampling import NeighborSampler, edge_unit_ids

    edges = coalesce(path_graph(12, torch.ones(12, 1)).edge_index, num_nodes=12)
    units = edge_unit_ids(edges, 12, True)
    sampler = NeighborSampler(edges.cuda(), 12, (2, 2), units=units)
    sub = sampler.sample(torch.tensor([0, 5]))
    assert sub.units.device.type == "cuda"
    assert torch.equal(sub.units.cpu(), units[sub.edge_ids.cpu()].long())


def test_authors_probe_on_cuda_matches_the_cpu():
    # The same initial weights (drawn on the CPU from the seed), so the GPU's classifiers reach the CPU's
    # accuracies up to float rounding (which may move a chosen check by one), dense and sparse input alike.
    import scipy.sparse as sp

    from gca.evaluate.probe import adam_probe
    from gca.evaluate.splits import random_splits

    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=generator)
    x = 0.3 * torch.rand(300, 8, generator=generator)
    x[torch.arange(300), y] += 1.0
    splits = random_splits(300, 4, seed=1, labels=y)
    cpu = adam_probe(x, y, splits, epochs=200)
    for features in (x.cuda(), sp.csr_matrix(x.numpy())):
        test, val, *_ = adam_probe(features, y, splits, epochs=200, device="cuda")
        np.testing.assert_allclose(test, cpu[0], atol=0.02)  # 240 test nodes: a few may differ
        np.testing.assert_allclose(val, cpu[1], atol=1 / 30 + 1e-6)
