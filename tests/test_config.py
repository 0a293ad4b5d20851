import pytest

from gca.config import ConfigError, GCAConfig, build_config, parse_overrides, shipped_config

TABLE_5 = {  # Zhu et al., WWW 2021, Table 5
    "Wiki-CS": (0.2, 0.4, 0.1, 0.1, 0.7, 0.6, 0.01, 3000, 256, "prelu"),
    "Amazon-Computers": (0.5, 0.5, 0.2, 0.1, 0.7, 0.1, 0.01, 1500, 128, "prelu"),
    "Amazon-Photo": (0.3, 0.5, 0.1, 0.1, 0.7, 0.3, 0.1, 2000, 256, "relu"),
    "Coauthor-CS": (0.3, 0.2, 0.3, 0.4, 0.7, 0.4, 0.0005, 1000, 256, "rrelu"),
    "Coauthor-Physics": (0.4, 0.1, 0.1, 0.4, 0.7, 0.5, 0.01, 1500, 128, "rrelu"),
}
KEYS = ("p_e1", "p_e2", "p_f1", "p_f2", "p_tau", "tau", "lr", "epochs", "hidden", "activation")


@pytest.mark.parametrize("dataset", list(TABLE_5))
def test_shipped_configs_are_table_5(dataset):
    config = build_config(dataset)
    assert tuple(getattr(config, k) for k in KEYS) == TABLE_5[dataset]
    assert config.weight_decay == 1e-5 and config.layers == 2


def test_every_named_dataset_ships_a_config():
    for name in ("Cora", "CiteSeer", "PubMed", "Karate", *TABLE_5):
        assert shipped_config(name), name


def test_precedence_and_types(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('tau = 0.9\nepochs = 7\nactivation = "elu"\n')
    config = build_config("Cora", path, parse_overrides(["epochs=3", "lr=1e-3", "activation=PReLU"]))
    assert (config.tau, config.epochs, config.lr, config.activation) == (0.9, 3, 1e-3, "prelu")
    assert config.hidden == 256  # from the Cora file


def test_invalid_values_are_one_line_errors(tmp_path):
    for bad, message in [
        ({"p_e1": 1.0}, "p_e1"),
        ({"p_f2": -0.1}, "p_f2"),
        ({"p_tau": 1.0}, "p_tau"),
        ({"tau": 0}, "tau must be a finite number in \\(0, 100\\]"),
        ({"epochs": "ten"}, "epochs must be a number"),
        ({"epochs": 2.5}, "epochs must be an integer"),
        ({"activation": "tanh"}, "activation must be one of"),
        ({"layers": 1}, "layers"),
    ]:
        with pytest.raises(ConfigError, match=message) as info:
            GCAConfig().replace(**bad)
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="did you mean 'p_tau'"):
        GCAConfig().replace(ptau=0.5)
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["tau"])
    broken = tmp_path / "broken.toml"
    broken.write_text("tau = = 1")
    with pytest.raises(ConfigError, match="not valid"):
        build_config(None, broken)
    with pytest.raises(ConfigError, match="does not exist"):
        build_config(None, tmp_path / "missing.toml")


def test_table5_stays_the_default_and_the_authors_setting_is_named(tmp_path, monkeypatch):
    from gca.config import build_config

    photo = build_config("Amazon-Photo")
    assert (photo.lr, photo.tau, photo.hidden, photo.proj_hidden) == (0.1, 0.3, 256, 64)  # width from the authors
    computers, theirs = build_config("Amazon-Computers"), build_config("Amazon-Computers", "authors")
    assert (computers.p_e1, computers.tau, computers.activation, computers.epochs) == (0.5, 0.1, "prelu", 1500)
    assert (theirs.p_e1, theirs.p_e2, theirs.p_f1, theirs.p_f2) == (0.6, 0.3, 0.2, 0.3)
    assert (theirs.tau, theirs.activation, theirs.hidden, theirs.epochs) == (0.2, "rrelu", 128, 2000)
    wikics = build_config("Wiki-CS", "authors")
    assert (wikics.p_e2, wikics.tau) == (0.3, 0.4) and build_config("Wiki-CS").tau == 0.6
    assert build_config("Amazon-Photo", "authors", {"tau": 0.5}).tau == 0.5  # --set still wins
    with pytest.raises(ConfigError, match="config_file='authors': no such setting is shipped for Cora"):
        build_config("Cora", "authors")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "authors").write_text("tau = 0.9\n")  # a file of that name is read as a file
    assert build_config("Amazon-Photo", "authors").tau == 0.9


def test_the_automatic_warmup_starts_every_run_at_lr_0_001():
    assert GCAConfig(lr=0.1).warmup_updates == 100  # Amazon-Photo's Table 5 rate
    assert GCAConfig(lr=0.01).warmup_updates == 10
    assert GCAConfig(lr=5e-4).warmup_updates == 1 and GCAConfig(lr=1e-3).warmup_updates == 1  # none: Algorithm 1
    assert GCAConfig(lr=0.1, warmup_steps=0).warmup_updates == 0
    assert GCAConfig(lr=0.1, warmup_steps=7).warmup_updates == 7
    with pytest.raises(ConfigError, match=r"warmup_steps must be an integer in \[-1, 10000000\] \(-1 chooses"):
        GCAConfig(warmup_steps=-2)


def test_an_integer_beyond_a_floats_range_is_one_line_not_an_overflow():
    with pytest.raises(ConfigError, match="hidden must be an integer in .* got a number of 400 digits"):
        GCAConfig(hidden=int("9" * 400))
    with pytest.raises(ConfigError, match="lr must be"):
        GCAConfig(lr=int("9" * 400))
