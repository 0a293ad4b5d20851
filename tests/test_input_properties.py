"""Property-based tests (hypothesis) over what users type and the files they give: any input either trains to
finite embeddings or ends with exit status 2, one `gca: error:` line, and an untouched output folder."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gca.cli import main
from gca.config import RANGES, GCAConfig, build_config
from gca.datasets import karate_club
from gca.errors import UserError

KEYS = sorted(GCAConfig().to_dict())
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 0.5, 1e-300, 2**31, 2**32, 65_536, 65_537]),
)
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "0x10", "1_000", " 2 ", "", "relu", "PReLU", "uniform", "true"]),
)
VALUES = st.one_of(NUMBERS, TEXT, st.booleans(), st.none(), st.lists(st.integers(), max_size=2))


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_any_config_value_is_valid_or_one_config_error(key, value):
    try:
        config = build_config(None, None, {key: value})
    except UserError as exc:
        assert "\n" not in str(exc) and key in str(exc)
        return
    config.validate()
    accepted = getattr(config, key)
    if key in RANGES:
        assert math.isfinite(accepted)


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def karate_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("karate")
    data = karate_club()
    ei = data.edge_index[:, data.edge_index[0] < data.edge_index[1]].numpy()
    (folder / "e.csv").write_text("".join(f"{u},{v}\n" for u, v in ei.T))
    np.save(folder / "x.npy", np.eye(34, dtype=np.float32))
    out = folder / "out"
    assert (
        main(
            [
                "train",
                "--edges",
                str(folder / "e.csv"),
                "--features",
                str(folder / "x.npy"),
                "--epochs",
                "1",
                "--no-eval",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return folder


SET_TEXT = st.one_of(
    st.sampled_from(
        [
            "nan",
            "inf",
            "-1",
            "0",
            "1",
            "2",
            "0.5",
            "1e9",
            "abc",
            "",
            "0.99",
            "100",
            "relu",
            "elu",
            "uniform",
            "paper",
            "authors",
            "binary",
            "dense",
            "none",
        ]
    ),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(
        [k for k in KEYS if k not in ("epochs", "hidden", "proj_hidden", "layers", "first_layer_factor", "block_size")]
    ),
    value=SET_TEXT,
)
def test_any_set_value_trains_finite_or_fails_cleanly(karate_run, key, value, capsys):
    out = karate_run / "out"
    before = _digest(out)
    code = main(
        [
            "train",
            "--edges",
            str(karate_run / "e.csv"),
            "--features",
            str(karate_run / "x.npy"),
            "--epochs",
            "1",
            "--no-eval",
            "--quiet",
            "--set",
            f"{key}={value}",
            "--out",
            str(out),
        ]
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    if code == 0:
        assert np.isfinite(np.load(out / "embeddings.npy")).all()
    else:
        assert code == 2 and [line for line in err if line.startswith("gca: error:")] == err[-1:]
        assert not any("Traceback" in line for line in err)
        assert _digest(out) == before


TOKENS = st.sampled_from(
    [
        "0",
        "1",
        "2",
        "3",
        "-1",
        "a",
        "b",
        "1.5",
        "1,5",
        "nan",
        "inf",
        "",
        " ",
        '"',
        "#",
        "source",
        "id",
        "1e400",
        "007",
        "x",
    ]
)
LINES = st.lists(st.lists(TOKENS, min_size=1, max_size=4), min_size=0, max_size=6)
DELIMITERS = st.sampled_from([",", "\t", ";", " "])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=LINES, features=LINES, labels=st.one_of(st.none(), LINES), delimiter=DELIMITERS)
def test_any_files_load_to_a_valid_graph_or_one_error(tmp_path, edges, features, labels, delimiter):
    from gca.datasets import load_files
    from gca.graph.graph import prepare_graph

    paths = {}
    for name, lines in (("e", edges), ("x", features), ("y", labels)):
        if lines is not None:
            paths[name] = tmp_path / f"{name}.csv"
            paths[name].write_text("".join(delimiter.join(row) + "\n" for row in lines))
    try:
        loaded = load_files(paths["e"], paths["x"], paths.get("y"))
        graph = prepare_graph(loaded.data)
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    x = graph.raw_features
    values = x.data if hasattr(x, "data") and not isinstance(x, np.ndarray) else np.asarray(x)
    assert np.isfinite(values).all() and graph.num_nodes == loaded.data.num_nodes
    assert int(graph.edge_index.max()) < graph.num_nodes if graph.edge_index.numel() else True


PADDED_IDS = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(0, 9), st.booleans()),
    min_size=2,
    max_size=12,
    unique_by=lambda t: t[0],
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=PADDED_IDS, suffix=st.sampled_from([".csv", ".tsv", ".parquet"]))
def test_zero_padded_ids_come_back_as_written_in_every_export(tmp_path, ids, suffix):
    """Ids written with leading zeros are kept as text: the export's id column holds them byte for byte, each on the
    row of its own node (the features encode the id)."""
    import pyarrow.parquet as pq

    from gca.datasets import load_files
    from gca.outputs.export import export_embeddings

    written = [str(n).zfill(n_digits + len(str(n))) if padded else str(n) for n, n_digits, padded in ids]
    if all(text == str(int(text)) for text in written):  # none padded: a zero-padded one added
        written[0] = "0" + written[0]
    rows = "".join(f"{text},{int(text)},{i}\n" for i, text in enumerate(written))
    (tmp_path / "x.csv").write_text(f"id,value,place\n{rows}")
    (tmp_path / "e.csv").write_text("".join(f"{a},{b}\n" for a, b in zip(written, written[1:], strict=False)))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    assert loaded.node_ids == written
    out = tmp_path / f"emb{suffix}"
    export_embeddings(out, loaded.data.x.numpy(), loaded.node_ids)
    if suffix == ".parquet":
        table = pq.read_table(out)
        exported, values = table.column("node_id").to_pylist(), table.column("e0").to_pylist()
    else:
        lines = out.read_bytes().decode().splitlines()[1:]
        fields = [line.split("\t" if suffix == ".tsv" else ",") for line in lines]
        exported, values = [f[0] for f in fields], [float(f[1]) for f in fields]
    assert exported == written
    assert values == [float(int(text)) for text in written]  # each id on its own node's row
