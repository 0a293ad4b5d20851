import math

import pytest
import torch
from torch.nn import functional as F

from gca.objective import auto_block_size, contrastive_loss, reference_loss


def naive_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> float:
    """Eq. 1–2 with one Python loop per pair: the most literal reading of the paper."""

    def theta(a, b):
        return float(F.cosine_similarity(a, b, dim=0))

    def ell(anchor, other, i):
        pos = math.exp(theta(anchor[i], other[i]) / tau)
        inter = sum(math.exp(theta(anchor[i], other[k]) / tau) for k in range(len(anchor)) if k != i)
        intra = sum(math.exp(theta(anchor[i], anchor[k]) / tau) for k in range(len(anchor)) if k != i)
        return math.log(pos / (pos + inter + intra))

    n = len(u)
    j = sum(ell(u, v, i) + ell(v, u, i) for i in range(n)) / (2 * n)
    return -j


@pytest.mark.parametrize("n,d,tau", [(1, 3, 0.5), (5, 4, 0.4), (9, 2, 0.1)])
def test_reference_and_fast_equal_naive_loop(n, d, tau):
    g = torch.Generator().manual_seed(n)
    u, v = torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(n, d, generator=g, dtype=torch.float64)
    expected = naive_loss(u, v, tau)
    assert float(reference_loss(u, v, tau)) == pytest.approx(expected, rel=1e-12)
    assert float(contrastive_loss(u, v, tau, block_size=2)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n,d,block", [(37, 8, 5), (64, 16, 16), (100, 32, 0), (129, 8, 128)])
def test_fast_matches_reference_value_and_gradient_fp32(n, d, block):
    g = torch.Generator().manual_seed(0)
    u = torch.randn(n, d, generator=g, requires_grad=True)
    v = torch.randn(n, d, generator=g, requires_grad=True)
    ref = reference_loss(u, v, 0.3)
    ref_grads = torch.autograd.grad(ref, (u, v))
    fast = contrastive_loss(u, v, 0.3, block_size=block)
    fast_grads = torch.autograd.grad(fast, (u, v))
    assert float(fast) == pytest.approx(float(ref), rel=1e-5)
    for a, b in zip(fast_grads, ref_grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5 * float(b.abs().max()))


@pytest.mark.parametrize("keep_blocks", [1, 3, 99])
def test_blocks_kept_for_the_backward_pass_give_the_same_bits_as_recomputing(keep_blocks):
    """The forward pass keeps blocks of E within a byte budget (none, some, all) and the backward pass uses them
    instead of recomputing: the same tensors, so the same loss and gradients to the bit — also for a second backward
    pass over the same graph, which finds the kept blocks used up and recomputes them."""
    g = torch.Generator().manual_seed(5)
    n, d, block = 40, 8, 16  # 2N = 80 rows: blocks of 16×80, 16×64, …, 16×16 floats
    u0, v0 = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    first_blocks = sum(16 * (80 - 16 * i) * 4 for i in range(keep_blocks))  # bytes of the first blocks exactly

    def loss_and_grads(keep_bytes, twice=False):
        u, v = u0.clone().requires_grad_(), v0.clone().requires_grad_()
        loss = contrastive_loss(u, v, 0.3, block_size=block, keep_bytes=keep_bytes)
        grads = torch.autograd.grad(loss, (u, v), retain_graph=twice)
        if twice:
            grads = torch.autograd.grad(loss, (u, v))
        return loss, grads

    recomputed = loss_and_grads(0)
    for kept in (loss_and_grads(first_blocks), loss_and_grads(first_blocks, twice=True)):
        assert torch.equal(kept[0], recomputed[0])
        assert all(torch.equal(a, b) for a, b in zip(kept[1], recomputed[1], strict=True))


def test_the_kept_blocks_stay_within_their_budget(monkeypatch):
    import gca.objective.blocked as blocked

    sizes = []
    original = blocked._OffDiagonalLogSumExp.forward

    def forward(ctx, *args):
        out = original(ctx, *args)
        sizes.append(sum(e.numel() * e.element_size() for e in ctx.kept.values()))
        return out

    monkeypatch.setattr(blocked._OffDiagonalLogSumExp, "forward", staticmethod(forward))
    u = torch.randn(40, 8, requires_grad=True)
    for budget in (0, 5_000, 10_000, 10**9):
        contrastive_loss(u, u.detach() + 1, 0.3, block_size=16, keep_bytes=budget).backward()
    # blocks of 16×80, 16×64, 16×48, 16×32, 16×16 floats: 5,120, 4,096, 3,072, 2,048 and 1,024 bytes; each is kept
    # if it fits in what the blocks before it left of the budget
    assert sizes == [0, 4_096, 5_120 + 4_096, 15_360]
    assert blocked.keep_budget("cpu") == blocked.CPU_KEEP_BYTES and blocked.keep_budget("cuda") == 0


def test_fast_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(1)
    u = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: contrastive_loss(a, b, 0.5, block_size=4), (u, v))
    assert torch.autograd.gradcheck(lambda a, b: reference_loss(a, b, 0.5), (u, v))


def test_small_temperature_stays_finite_and_exact():
    g = torch.Generator().manual_seed(2)
    u, v = torch.randn(12, 8, generator=g), torch.randn(12, 8, generator=g)
    # τ = 0.01 puts e^{100} in the plain formula (inf in fp32); the shifted blocks keep the fast version exact
    assert not torch.isfinite(reference_loss(u, v, 0.01))
    loss = contrastive_loss(u, v, 0.01)
    assert float(loss) == pytest.approx(naive_loss(u.double(), v.double(), 0.01), rel=1e-5)


def test_identical_views_score_better_than_random_views():
    g = torch.Generator().manual_seed(3)
    u = torch.randn(40, 16, generator=g)
    assert contrastive_loss(u, u, 0.5) < contrastive_loss(u, torch.randn(40, 16, generator=g), 0.5)


def test_auto_block_size_bounds():
    assert auto_block_size(10) == 10
    assert 64 <= auto_block_size(10**6) <= 10**6
    with pytest.raises(ValueError):
        contrastive_loss(torch.randn(3, 2), torch.randn(4, 2), 0.5)


@pytest.mark.parametrize(("n", "d", "tau"), [(7, 3, 0.5), (300, 32, 0.5), (513, 16, 0.2), (200, 64, 1.0)])
def test_attention_backend_matches_the_reference(n, d, tau):
    """PyTorch's fused attention kernels (lse and P·Z) with the diagonal removed analytically: fp32 within 1e-5."""
    from gca.objective import attention_loss

    g = torch.Generator().manual_seed(n)
    u = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
    ref = reference_loss(u, v, tau)
    ref_grads = torch.autograd.grad(ref, (u, v))
    loss = attention_loss(u, v, tau)
    grads = torch.autograd.grad(loss, (u, v))
    assert abs(float(loss) - float(ref)) <= 1e-5 * abs(float(ref))
    for got, want in zip(grads, ref_grads, strict=True):
        assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max())


def test_attention_backend_in_bf16_is_within_its_documented_tolerance():
    """bf16 inputs to the kernels (8 bits of mantissa): loss within 1e-4, gradients within 3e-3 of their largest
    entry (README, docs/method.md)."""
    from gca.objective import attention_loss

    g = torch.Generator().manual_seed(11)
    u = torch.randn(400, 32, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(400, 32, generator=g, dtype=torch.float64, requires_grad=True)
    for tau in (0.2, 0.5):
        ref = reference_loss(u, v, tau)
        ref_grads = torch.autograd.grad(ref, (u, v))
        loss = attention_loss(u, v, tau, precision="bf16")
        grads = torch.autograd.grad(loss, (u, v))
        assert abs(float(loss) - float(ref)) <= 1e-4 * abs(float(ref))
        for got, want in zip(grads, ref_grads, strict=True):
            assert float((got - want).abs().max()) <= 3e-3 * float(want.abs().max())


@pytest.mark.parametrize(
    ("n", "d", "tau", "precision", "resolved"),
    [
        (6, 16, 0.2, "bf16", True),
        (4, 128, 0.4, "bf16", True),
        (4, 128, 0.1, "fp32", True),
        (4, 128, 0.1, "bf16", False),
    ],
)
def test_attention_backend_on_small_graphs_is_right_or_refused(n, d, tau, precision, resolved):
    """On a few well-separated rows the off-diagonal mass is below bf16's rounding of e^{1/τ}: removing the diagonal
    as e^{1/τ} gave a NaN or a wrong loss (4.82 for 2.37); with the diagonal as the kernels read it the loss is within
    1e-3, and where the kernels cannot resolve the rest at all the backend says so in one line."""
    from gca.errors import UserError
    from gca.objective import attention_loss

    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        u = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
        v = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
        if not resolved:
            with pytest.raises(UserError, match="cannot resolve this graph's similarities.*use loss_backend=blocked"):
                attention_loss(u, v, tau, precision=precision)
            continue
        ref = reference_loss(u, v, tau)
        ref_grads = torch.autograd.grad(ref, (u, v))
        loss = attention_loss(u, v, tau, precision=precision)
        grads = torch.autograd.grad(loss, (u, v))
        assert abs(float(loss) - float(ref)) <= 1e-3 * abs(float(ref))
        for got, want in zip(grads, ref_grads, strict=True):
            assert float((got - want).abs().max()) <= 3e-2 * float(want.abs().max())


def test_attention_backend_resolves_a_graph_with_a_few_rows_far_from_the_rest():
    """Two nodes whose views point away from 498 clustered ones: their rows' off-diagonal shares are 7e-4, but the
    harmonic mean of all shares (what the loss's error scales with) is 0.15, so bf16 is within 1e-3 of the reference
    — no refusal for a few outlying rows."""
    from gca.objective import attention_loss

    g = torch.Generator().manual_seed(0)
    n, d, tau = 500, 64, 0.07
    base = F.normalize(torch.randn(d, generator=g, dtype=torch.float64), dim=0)
    u, v = (base + 0.25 * torch.randn(n, d, generator=g, dtype=torch.float64) / d**0.5 for _ in range(2))
    for i in (0, 1):
        for views in (u, v):
            away = torch.randn(d, generator=g, dtype=torch.float64)
            views[i] = F.normalize(away - (away @ base) * base, dim=0)
    ref = float(reference_loss(u, v, tau))
    for precision, tolerance in (("fp32", 1e-5), ("bf16", 1e-3)):
        assert abs(float(attention_loss(u, v, tau, precision=precision)) - ref) <= tolerance * ref


def test_backend_and_precision_are_checked_together():
    from gca.config import ConfigError, GCAConfig
    from gca.objective import ContrastiveObjective

    with pytest.raises(ConfigError, match="precision=bf16 needs loss_backend=attention"):
        GCAConfig(precision="bf16", loss_backend="blocked")
    assert GCAConfig(precision="bf16", loss_backend="attention").precision == "bf16"
    assert GCAConfig(precision="bf16").loss_backend == "auto"  # auto becomes attention for bf16
    with pytest.raises(ValueError, match="precision=bf16 needs loss_backend=attention"):
        ContrastiveObjective(0.5, backend="blocked", precision="bf16")


@pytest.mark.parametrize(
    ("backend", "precision", "device", "tensor_cores", "expected"),
    [
        ("auto", "auto", "cpu", False, ("blocked", "fp32")),  # CPUs: bf16 brought no speed (docs/benchmarks.md)
        ("auto", "auto", "cuda", True, ("attention", "bf16")),  # H100: 7.6–10× faster, same accuracy
        ("auto", "auto", "cuda:1", True, ("attention", "bf16")),
        ("auto", "auto", "cuda", False, ("blocked", "fp32")),  # a V100 or T4: no bf16 tensor cores, no flash
        ("auto", "fp32", "cuda", True, ("blocked", "fp32")),  # explicit settings stay
        ("auto", "tf32", "cuda", True, ("blocked", "tf32")),
        ("blocked", "auto", "cuda", True, ("blocked", "fp32")),  # auto precision never asks blocked for bf16
        ("attention", "auto", "cpu", False, ("attention", "fp32")),
        ("attention", "auto", "cuda", True, ("attention", "bf16")),
        ("auto", "bf16", "cpu", False, ("attention", "bf16")),
    ],
)
def test_auto_objective_settings_resolve_per_device(backend, precision, device, tensor_cores, expected):
    from gca.objective import bf16_tensor_cores, resolve_objective

    assert resolve_objective(backend, precision, device, tensor_cores) == expected
    if not torch.cuda.is_available():  # asked of the device itself: a CPU, or CUDA that is not there
        assert not bf16_tensor_cores(device)
        assert resolve_objective(backend, precision, device)[1] in ("fp32", "tf32", precision)


def test_the_record_names_the_objective_that_ran(tmp_path):
    from conftest import path_graph

    from gca import GCA, GCAConfig
    from gca.run.pipeline import run_gca

    data = path_graph(8, torch.eye(8))
    estimator = GCA(GCAConfig(epochs=1, hidden=4, proj_hidden=4), device="cpu")
    result = run_gca(estimator, estimator.prepare(data), dataset="path")
    assert result.record["objective"] == "blocked fp32" and "gpu_peak_mb" not in result.record


def test_the_run_says_why_auto_chose_its_objective(monkeypatch):
    import gca.precision as precision
    import gca.precision as selection

    assert selection.objective_reason("blocked", "fp32", "cpu") == "as set"
    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: None)
    assert selection.objective_reason("auto", "auto", "cpu") == "no bf16 matrix units (AMX, AVX512-BF16) on this CPU"
    assert selection.resolve_objective("auto", "auto", "cpu") == ("blocked", "fp32")
    monkeypatch.undo()
    assert isinstance(selection.cpu_bf16_matrix_units(), bool)
