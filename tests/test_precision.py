"""The update's precision: bf16 mixed precision agrees with fp32, keeps fp32 weights, and ``auto`` is read off the
device — on a CPU, its kind's entry of gca.precision.CPU_AUTO — never from a timing, so one command trains alike on
every run."""

from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data

import gca.precision as precision
from gca import GCA, GCAConfig
from gca.augment.prepared import prepare
from gca.nn.model import GCAModel
from gca.objective import resolve_objective
from gca.precision import objective_reason
from gca.train.batches import batch_source
from gca.train.loop import train_step

# bf16 keeps 8 bits of mantissa: a product's output is within 2⁻⁸ of the fp32 one relative to its size, and the
# loss and gradients of an update, summed over many such products, agree to these bounds (stated in the docs)
LOSS_RTOL = 5e-3
GRADIENT_COSINE = 0.99
GRADIENT_NORM_RTOL = 0.05


def _planted(n: int = 240, classes: int = 4, features: int = 48, sparse: bool = False) -> Data:
    """A graph of ``classes`` planted communities: dense (or bag-of-words) features drawn per class, edges mostly
    inside a class."""
    generator = torch.Generator().manual_seed(3)
    y = torch.arange(n) % classes
    centres = torch.rand(classes, features, generator=generator)
    x = (
        (centres[y] + 0.3 * torch.rand(n, features, generator=generator) > 0.8).float()
        if sparse
        else centres[y] + 0.1 * torch.randn(n, features, generator=generator)
    )
    source = torch.randint(0, n, (6 * n,), generator=generator)
    same = torch.rand(6 * n, generator=generator) < 0.85
    target = torch.where(
        same,
        (source + classes * torch.randint(1, n // classes, (6 * n,), generator=generator)) % n,
        torch.randint(0, n, (6 * n,), generator=generator),
    )
    edges = torch.stack([source, target])
    edges = torch.cat([edges, edges.flip(0)], 1)
    return Data(x=x, edge_index=edges[:, edges[0] != edges[1]], y=y)


def _gradients(
    config: GCAConfig, data: Data, step_precision: str, device: str = "cpu"
) -> tuple[float, list[torch.Tensor], GCAModel]:
    """One update of ``config`` at ``step_precision`` on ``device`` from the same weights, draws and batch: the
    loss, each parameter's gradient (on the CPU), and the model after it (an optimiser that does not move: lr 0)."""
    prepared = prepare(data, config)
    torch.manual_seed(0)
    model = GCAModel.from_config(prepared.graph.num_features, config).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    generator = torch.Generator(device=device).manual_seed(1)
    torch.manual_seed(2)
    source = batch_source(prepared.graph.to(device), prepared.views, config, torch.device(device))
    batch = next(iter(source.batches(0, generator)))
    loss = train_step(model, optimizer, batch, generator, step_precision)
    return loss, [p.grad.cpu().clone() for p in model.parameters()], model


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch_size", [0, 64], ids=["exact", "mini-batch"])
@pytest.mark.parametrize(
    ("sparse", "features"),
    [(False, 48), (False, 96), (True, 96)],
    ids=["dense-aggregated-first", "dense-multiplied-first", "sparse-features"],
)
def test_a_bf16_update_agrees_with_the_fp32_one_within_bf16_precision(batch_size, sparse, features, device):
    # the first layer is 64 wide: 48 features aggregate first, (M X) W; 96 are multiplied first, M (X W)
    data = _planted(features=features, sparse=sparse)
    config = GCAConfig(
        hidden=32,
        proj_hidden=32,
        batch_size=batch_size,
        fanout=(5,),
        loss_backend="attention",
        feature_weighting="binary" if sparse else "auto",
    )
    loss32, grads32, _ = _gradients(config.replace(precision="fp32"), data, "fp32", device)
    loss16, grads16, model = _gradients(config.replace(precision="bf16"), data, "bf16", device)
    # the same update as the fp32 default on a CPU (blocked objective): the backends agree to fp32 rounding
    blocked, _, _ = _gradients(config.replace(precision="fp32", loss_backend="blocked"), data, "fp32", device)
    assert blocked == pytest.approx(loss32, rel=1e-5)
    assert loss16 == pytest.approx(loss32, rel=LOSS_RTOL) and loss16 != loss32  # bf16 did compute
    for name, (g32, g16) in zip(
        [n for n, _ in model.named_parameters()], zip(grads32, grads16, strict=True), strict=True
    ):
        assert g16.dtype == torch.float32, name
        if g32.norm() == 0:
            continue
        cosine = torch.nn.functional.cosine_similarity(g32.flatten(), g16.flatten(), dim=0)
        assert cosine >= GRADIENT_COSINE, (name, float(cosine))
        assert float(g16.norm() / g32.norm()) == pytest.approx(1.0, abs=GRADIENT_NORM_RTOL), name


def test_a_bf16_update_keeps_fp32_weights_and_optimiser_state():
    config = GCAConfig(hidden=16, proj_hidden=16, loss_backend="attention", precision="bf16")
    prepared = prepare(_planted(), config)
    model = GCAModel.from_config(prepared.graph.num_features, config)
    before = copy.deepcopy(model.state_dict())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    source = batch_source(prepared.graph, prepared.views, config, torch.device("cpu"))
    for batch in source.batches(0, generator):
        train_step(model, optimizer, batch, generator, "bf16")
    for name, value in model.state_dict().items():
        assert value.dtype == torch.float32 and not torch.equal(value, before[name]) or "bias" in name, name
    for state in optimizer.state.values():
        assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == torch.float32


def test_training_in_bf16_embeds_in_fp32():
    config = GCAConfig(hidden=16, proj_hidden=16, epochs=3, loss_backend="attention", precision="bf16")
    embeddings = GCA(config, device="cpu").fit_transform(_planted())
    assert embeddings.dtype == torch.float32 and torch.isfinite(embeddings).all()


def test_a_message_passing_encoder_trains_in_bf16():
    data = _planted()
    config = GCAConfig(hidden=16, proj_hidden=16, encoder="sage", loss_backend="attention")
    loss32 = _gradients(config.replace(precision="fp32"), data, "fp32")[0]
    loss16 = _gradients(config.replace(precision="bf16"), data, "bf16")[0]
    assert loss16 == pytest.approx(loss32, rel=LOSS_RTOL)


def test_auto_is_fp32_on_a_cpu_without_bf16_units(monkeypatch):
    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: None)
    assert precision.resolve_precision("auto", "cpu") == "fp32"
    assert resolve_objective("auto", "auto", "cpu") == ("blocked", "fp32")
    assert objective_reason("auto", "auto", "cpu") == "no bf16 matrix units (AMX, AVX512-BF16) on this CPU"
    assert precision.resolve_precision("bf16", "cpu") == "bf16"  # told to, it does, and says it is emulated
    assert objective_reason("attention", "bf16", "cpu").startswith("as set; this CPU has no bf16 units")
    assert objective_reason("blocked", "fp32", "cpu") == "as set"


@pytest.mark.parametrize("units", [None, "AVX512-BF16", "AMX"])
def test_auto_on_a_cpu_is_its_kinds_entry_of_the_table(monkeypatch, units):
    """On a CPU ``auto`` is CPU_AUTO's entry for its bf16 units, whose reason names them; the objective follows it
    (attention under bf16, blocked under fp32); no entry is bf16 where bf16 would be emulated, and the entry of a
    kind with bf16 units names what was measured on it."""
    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: units)
    chosen, why = precision.CPU_AUTO[units]
    assert chosen in ("fp32", "bf16") and (units is not None or chosen == "fp32")
    assert resolve_objective("auto", "auto", "cpu") == ("attention" if chosen == "bf16" else "blocked", chosen)
    assert objective_reason("auto", "auto", "cpu") == why and (units or "no bf16 matrix units") in why
    assert units is None or "measured" in why


def test_an_explicit_blocked_objective_is_fp32_under_auto(monkeypatch):
    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: "AVX512-BF16")
    assert resolve_objective("blocked", "auto", "cpu") == ("blocked", "fp32")
    assert objective_reason("blocked", "auto", "cpu") == "the blocked objective computes in fp32"


def test_one_command_trains_alike_whatever_the_clocks_of_its_runs_measure(tmp_path):
    """The same ``gca train`` twice on a CPU with bf16 units (AVX512-BF16, faked), each process's clock running at
    another pace, as a loaded machine would make any timing taken in the run: the precision of the CPU's entry in
    both records, and the same embeddings bit for bit."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    import numpy as np

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent("""\
        import os
        import time

        import torch

        torch.cpu._is_amx_tile_supported = lambda: False
        torch.cpu._is_avx512_bf16_supported = lambda: True
        pace, now = float(os.environ["GCA_TEST_PACE"]), [0.0, 1e-3]

        def clock():
            now[1] *= pace  # each reading further on than the last by a step that grows or shrinks
            now[0] += now[1]
            return now[0]

        time.perf_counter = time.monotonic = clock
        """)
    )
    records = []
    for pace in ("0.9", "1.1"):
        out = tmp_path / pace
        path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, "-m", "gca", "train", "--dataset", "Karate", "--epochs", "4", "--no-eval", "--quiet"]
            + ["--set", "hidden=16", "--set", "proj_hidden=16", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": path, "GCA_TEST_PACE": pace, "OMP_NUM_THREADS": "1"},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        records.append((json.loads((out / "results.json").read_text()), np.load(out / "embeddings.npy")))
    (first, a), (second, b) = records
    chosen, why = precision.CPU_AUTO["AVX512-BF16"]
    assert first["objective"] == second["objective"] == ("attention bf16" if chosen == "bf16" else "blocked fp32")
    assert first["objective_reason"] == second["objective_reason"] == why
    assert first["losses"] == second["losses"] and np.array_equal(a, b)


def test_processes_settle_on_the_first_ones_choice(monkeypatch):
    from gca.train.distributed import Placement

    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: "AMX")  # this process alone would keep fp32
    broadcast = []

    def first_process_says_bf16(code, src):
        broadcast.append(src)
        code.fill_(precision.PRECISIONS.index("bf16"))

    monkeypatch.setattr("torch.distributed.broadcast", first_process_says_bf16)
    try:
        Placement(torch.device("cpu"), 1, 2).settle_precision()
        assert broadcast == [0] and resolve_objective("auto", "auto", "cpu") == ("attention", "bf16")
        assert objective_reason("auto", "auto", "cpu").startswith("the first process's choice (here: fp32, AMX")
        Placement(torch.device("cpu")).settle_precision()  # one process: nothing exchanged, nothing changed
        assert broadcast == [0]
    finally:
        precision.settle("cpu", None)
    assert resolve_objective("auto", "auto", "cpu") == ("blocked", "fp32")


def test_a_users_objective_that_does_not_resolve_trains_in_fp32_under_auto(monkeypatch):
    from gca.train.fitting import _update_precision

    class Plain(torch.nn.Module):
        def forward(self, u, v):
            return (u - v).pow(2).mean()

    from gca.objective import ContrastiveObjective

    config = GCAConfig()
    precision.settle("cpu", "bf16", "as the first process chose")  # auto is bf16 here
    try:
        assert _update_precision(Plain(), config, torch.device("cpu")) == "fp32"
        assert _update_precision(Plain(), config.replace(precision="bf16"), torch.device("cpu")) == "bf16"
        assert _update_precision(ContrastiveObjective(precision="fp32"), config, torch.device("cpu")) == "fp32"
        assert _update_precision(ContrastiveObjective(), config, torch.device("cpu")) == "bf16"
    finally:
        precision.settle("cpu", None)


def test_a_compile_that_fails_trains_on_eagerly_with_one_line_and_the_same_run(monkeypatch, caplog):
    # the random state is put back before the eager step: an RReLU encoder draws from the global generator too
    from torch._dynamo.exc import TorchDynamoException

    import gca.train.compiled as compiled

    calls = []

    def failing_compile(function, **options):
        def run(*args, **kwargs):
            calls.append(options)
            raise TorchDynamoException("sparse CSR operands cannot be traced\nmore detail")

        return run

    monkeypatch.setattr(compiled.torch, "compile", failing_compile)
    config = GCAConfig(hidden=16, proj_hidden=16, epochs=4, batch_size=64, fanout=(5,), activation="rrelu")
    eager = GCA(config, device="cpu").fit(_planted())
    with caplog.at_level("WARNING", logger="gca"):
        tried = GCA(config.replace(compile="on"), device="cpu").fit(_planted())
    assert calls == [{"dynamic": True}]  # tried once, then eager for the rest of the run
    lines = [r.getMessage() for r in caplog.records if "torch.compile" in r.getMessage()]
    assert lines == [
        "torch.compile failed (TorchDynamoException: sparse CSR operands cannot be traced); training on in eager mode"
    ]
    assert tried.losses == eager.losses and torch.equal(tried.embedding_, eager.embedding_)  # the step was redone
    assert not _compiled(tried.model.encoder) and not _compiled(tried.model.projector)


def _compiled(module: torch.nn.Module) -> bool:
    return module.__dict__.get("_compiled_call_impl") is not None


def test_compiled_parts_copy_and_pickle_as_eager_modules_and_pause_for_inference():
    import pickle

    import gca.train.compiled as compiled

    model = GCAModel.from_config(8, GCAConfig(hidden=4, proj_hidden=4))
    parts = compiled.CompiledParts(model)
    assert _compiled(model.encoder) and _compiled(model.projector)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):  # their own weights, run eagerly
        assert not _compiled(twin.encoder) and not _compiled(twin.projector)
        assert twin.projector.fc1.weight is not model.projector.fc1.weight
    with parts.paused():
        assert not _compiled(model.encoder) and not _compiled(model.projector)
    assert _compiled(model.encoder) and _compiled(model.projector)
    parts.restore()
    assert not _compiled(model.encoder) and not _compiled(model.projector)
