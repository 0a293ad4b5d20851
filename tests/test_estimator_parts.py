"""A user's encoder and objective in the estimator: what fit trains, what clone copies, deepcopy and pickle.

The rules (gca.train.estimator): the module passed in is never changed; every fit trains a copy of the weights it
had when the estimator was made; clone copies those initial weights, never trained ones; copy.deepcopy and pickle
of a fitted estimator embed exactly as it does. Every comparison is exact (CPU, fixed seeds).
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from torch import nn
from torch_geometric.nn import GCNConv

from gca import GCA, GCAConfig
from gca.config import ConfigError
from gca.datasets import karate_club
from gca.objective import ContrastiveObjective
from gca.train.estimator import clone

CONFIG = GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=3)


def _weights(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in module.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _encoder(seed: int = 0) -> GCNConv:
    torch.manual_seed(seed)
    return GCNConv(34, 8)


@pytest.mark.parametrize("batch_size", [0, 8], ids=["full-graph", "mini-batch"])
def test_fitting_twice_with_a_users_encoder_equals_fitting_once(batch_size):
    config = CONFIG.replace(batch_size=batch_size, fanout=(4, 4))
    estimator = GCA(config, device="cpu", encoder=_encoder())
    first = estimator.fit_transform(karate_club())
    second = estimator.fit_transform(karate_club())
    torch.testing.assert_close(second, first, rtol=0, atol=0)
    once = GCA(config, device="cpu", encoder=_encoder()).fit_transform(karate_club())  # a new estimator, same weights
    torch.testing.assert_close(once, first, rtol=0, atol=0)


def test_the_module_passed_in_is_never_trained_and_the_estimator_keeps_its_initial_weights():
    encoder = _encoder()
    initial = _weights(encoder)
    estimator = GCA(CONFIG, device="cpu", encoder=encoder)
    first = estimator.fit_transform(karate_club())
    assert _same(_weights(encoder), initial)  # not trained in place
    assert estimator.encoder is encoder and estimator.model.encoder is not encoder
    assert not _same(_weights(estimator.model.encoder), initial)  # the copy was trained
    with torch.no_grad():  # a change made after the estimator was made does not reach it
        encoder.lin.weight.add_(1.0)
    torch.testing.assert_close(estimator.fit_transform(karate_club()), first, rtol=0, atol=0)


def test_a_users_objective_is_copied_and_every_fit_starts_from_its_initial_state():
    class LearnedTemperature(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.log_tau = nn.Parameter(torch.tensor(-0.7))
            self.inner = ContrastiveObjective(tau=0.5)

        def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return self.inner(u / self.log_tau.exp(), v)

    objective = LearnedTemperature()
    estimator = GCA(CONFIG, device="cpu", objective=objective)
    first = estimator.fit_transform(karate_club())
    assert objective.log_tau.item() == pytest.approx(-0.7) and estimator.model.objective is not objective
    assert estimator.model.objective.log_tau.item() != pytest.approx(-0.7, abs=1e-6)  # the copy learned
    torch.testing.assert_close(estimator.fit_transform(karate_club()), first, rtol=0, atol=0)


def test_the_built_in_gcn_starts_from_the_same_weights_for_the_same_seed():
    estimator = GCA(CONFIG, device="cpu")
    first = estimator.fit_transform(karate_club())
    torch.testing.assert_close(estimator.fit_transform(karate_club()), first, rtol=0, atol=0)
    torch.testing.assert_close(GCA(CONFIG, device="cpu").fit_transform(karate_club()), first, rtol=0, atol=0)
    other = GCA(CONFIG.replace(seed=4), device="cpu").fit_transform(karate_club())
    assert not torch.equal(other, first)


def test_clone_of_a_fitted_estimator_has_the_initial_weights_passed_in():
    encoder = _encoder()
    initial = _weights(encoder)
    estimator = GCA(CONFIG, device="cpu", encoder=encoder)
    first = estimator.fit_transform(karate_club())
    twin = clone(estimator)
    assert twin.model is None and twin.encoder is not encoder
    assert _same(_weights(twin.encoder), initial)
    torch.testing.assert_close(twin.fit_transform(karate_club()), first, rtol=0, atol=0)
    assert _same(_weights(encoder), initial)


def test_a_module_that_cannot_be_copied_is_one_line(tmp_path):
    class HoldsCSR(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(34, 8)
            self.adjacency = torch.eye(34).to_sparse_csr()  # copy.deepcopy cannot copy a CSR tensor

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
            return self.lin(x)

    with pytest.raises(ConfigError) as error:
        GCA(CONFIG, device="cpu", encoder=HoldsCSR())
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("the encoder HoldsCSR cannot be copied with copy.deepcopy (NotImplementedError")
    trained = GCA(CONFIG.replace(epochs=1), device="cpu")
    trained.fit(karate_club())
    trained.save(tmp_path / "m.pt")
    with pytest.raises(ConfigError) as error:  # the module's fault, not a damaged checkpoint
        GCA.load(tmp_path / "m.pt", device="cpu", encoder=HoldsCSR())
    assert str(error.value) == message


@pytest.mark.parametrize("parts", ["gcn", "users-encoder", "gat"])
def test_deepcopy_and_pickle_of_a_fitted_estimator_embed_as_it_does(parts):
    # karate's identity features are kept as a sparse CSR matrix, the tensor copy.deepcopy cannot copy by itself
    config = CONFIG.replace(encoder="gat") if parts == "gat" else CONFIG
    estimator = GCA(config, device="cpu", encoder=_encoder() if parts == "users-encoder" else None)
    embeddings = estimator.fit_transform(karate_club())
    expected = estimator.embed()
    torch.testing.assert_close(expected, embeddings, rtol=0, atol=0)
    for twin in (copy.deepcopy(estimator), pickle.loads(pickle.dumps(estimator))):
        assert twin.model is not estimator.model and twin.prepared is not estimator.prepared
        torch.testing.assert_close(twin.embed(), expected, rtol=0, atol=0)
        torch.testing.assert_close(twin.embed(karate_club()), expected, rtol=0, atol=0)
        assert twin.losses == estimator.losses
        with torch.no_grad():  # independent: changing the copy leaves the original as it was
            next(twin.model.parameters()).add_(1.0)
        torch.testing.assert_close(estimator.embed(), expected, rtol=0, atol=0)
        torch.testing.assert_close(twin.fit_transform(karate_club()), embeddings, rtol=0, atol=0)  # and it fits alike


def test_deepcopy_of_an_unfitted_estimator_fits_as_it_does():
    estimator = GCA(CONFIG, device="cpu", encoder=_encoder())
    twin = copy.deepcopy(estimator)
    again = estimator.fit_transform(karate_club())
    torch.testing.assert_close(twin.fit_transform(karate_club()), again, rtol=0, atol=0)


def test_a_loaded_users_encoder_is_copied_not_changed(tmp_path):
    estimator = GCA(CONFIG, device="cpu", encoder=_encoder())
    embeddings = estimator.fit_transform(karate_club())
    estimator.save(tmp_path / "m.pt")
    fresh = _encoder(seed=1)
    initial = _weights(fresh)
    loaded = GCA.load(tmp_path / "m.pt", device="cpu", encoder=fresh)
    torch.testing.assert_close(loaded.embed(karate_club()), embeddings, rtol=0, atol=0)
    assert _same(_weights(fresh), initial) and loaded.model.encoder is not fresh


def test_link_prediction_with_a_fitted_estimator_equals_one_with_an_unfitted_one():
    """Every hold-out trains from the encoder's initial weights: fitting the template on the whole graph first
    (test edges included) changes nothing."""
    from gca.datasets import load_dataset
    from gca.run.job import Job
    from gca.run.tasks import link_prediction

    def scores(fit_first: bool) -> list:
        job = Job.open(load_dataset("Karate"), None, {"epochs": 2, "hidden": 8, "proj_hidden": 8, "seed": 4})
        template = GCA(job.config, device="cpu", encoder=_encoder())
        if fit_first:
            template.fit(karate_club())
        job.clean(job.config.feature_norm)
        result, _, embeddings, _ = link_prediction(job, template, runs=2, val=0.1, test=0.2)
        return [result.to_dict(), embeddings]

    (unfitted, z_unfitted), (fitted, z_fitted) = scores(False), scores(True)
    assert fitted == unfitted
    torch.testing.assert_close(z_fitted, z_unfitted, rtol=0, atol=0)


def test_a_model_of_a_users_encoder_says_so_instead_of_damaged(tmp_path, capsys):
    from gca.cli import main
    from gca.train.checkpoint import CheckpointError

    estimator = GCA(CONFIG, device="cpu", encoder=_encoder())
    estimator.fit(karate_club())
    estimator.save(tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match=r"trained with your own encoder \(.*\); load it in Python") as caught:
        GCA.load(tmp_path / "m.pt", device="cpu")
    assert "damaged" not in str(caught.value)
    with pytest.raises(CheckpointError, match="does not fit the weights"):
        GCA.load(tmp_path / "m.pt", device="cpu", encoder=torch.nn.Linear(3, 2))
    assert (
        main(["embed", "--checkpoint", str(tmp_path / "m.pt"), "--dataset", "Karate", "--out", str(tmp_path / "e")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trained with your own encoder" in err[0]
    assert not (tmp_path / "e").exists() or not any((tmp_path / "e").iterdir())
