"""Crafted and damaged .npy feature files (gca.datasets.files.read_npy): the header is read and checked against the
file's size before anything is mapped, and what is wrong is said in one line naming the file — never a pickle
warning for a truncated file, an out-of-memory error for a header claiming 10¹² rows, or a traceback."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from gca.cli import main
from gca.datasets import DatasetError, karate_club, load_files, read_features


def _header(shape, descr: str | list = "<f4", fortran: bool = False, version: int = 1) -> bytes:
    """An .npy header as numpy.save writes it, for any shape (NumPy's own writer checks nothing)."""
    out = io.BytesIO()
    write = np.lib.format.write_array_header_1_0 if version == 1 else np.lib.format.write_array_header_2_0
    write(out, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return out.getvalue()


def _truncated(path: Path, array: np.ndarray, cut: int) -> Path:
    np.save(path, array)
    path.write_bytes(path.read_bytes()[:-cut])
    return path


def test_a_truncated_float16_file_is_called_truncated_not_a_pickle(tmp_path):
    path = _truncated(tmp_path / "x16.npy", np.ones((100, 8), dtype=np.float16), cut=50)
    with pytest.raises(DatasetError) as caught:
        read_features(path)
    # 100 × 8 × 2 bytes = 1,600 promised; 50 bytes cut off the end leave 1,550
    assert str(caught.value) == (
        f"feature file {path} is truncated: its header says 100×8 float16 (1,600 bytes) but the file holds 1,550 "
        "bytes after the header; write it again with numpy.save"
    )


def test_a_truncated_float32_file_is_called_truncated(tmp_path):
    path = _truncated(tmp_path / "x32.npy", np.ones((10, 3), dtype=np.float32), cut=1)
    with pytest.raises(
        DatasetError,
        match=r"is truncated: its header says 10×3 float32 \(120 bytes\) but the file "
        r"holds 119 bytes after the header",
    ):
        read_features(path)


def test_a_header_claiming_a_trillion_rows_is_refused_before_anything_is_allocated(tmp_path):
    path = tmp_path / "huge.npy"
    path.write_bytes(_header((10**12, 4)) + bytes(62))
    assert path.stat().st_size == 190  # the tester's file: a 128-byte header and 62 bytes of data
    with pytest.raises(DatasetError) as caught:
        read_features(path)
    # 10¹² × 4 × 4 bytes = 1.6·10¹³
    assert str(caught.value).startswith(
        f"feature file {path} is truncated: its header says 1000000000000×4 float32 (16,000,000,000,000 bytes) but "
        "the file holds 62 bytes after the header"
    )


def test_a_negative_shape_is_a_damaged_header(tmp_path):
    path = tmp_path / "neg.npy"
    path.write_bytes(_header((-3, 4)) + bytes(48))
    with pytest.raises(DatasetError) as caught:
        read_features(path)
    assert str(caught.value) == f"feature file {path} has a damaged .npy header: its shape (-3, 4) has a negative size"


def test_an_object_array_is_refused_without_unpickling(tmp_path):
    path = tmp_path / "obj.npy"
    np.save(path, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    with pytest.raises(DatasetError, match=r"holds Python objects, which are not loaded \(pickles can run code\)"):
        read_features(path)


def test_a_fortran_ordered_array_loads_with_its_values_in_place(tmp_path):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "f.npy", np.asfortranarray(values))
    matrix, ids = read_features(tmp_path / "f.npy")
    assert ids is None and matrix.shape == (3, 4) and np.array_equal(np.asarray(matrix), values)
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    assert np.array_equal(load_files(tmp_path / "e.csv", tmp_path / "f.npy").data.x.numpy(), values)


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ((2, 3, 4), "must hold a 2-D numeric array, got float32 (2, 3, 4)"),
        ((5,), "must hold a 2-D numeric array, got float32 (5,)"),
    ],
)
def test_an_array_that_is_not_2d_is_refused(tmp_path, shape, words):
    np.save(tmp_path / "x.npy", np.ones(shape, dtype=np.float32))
    with pytest.raises(DatasetError) as caught:
        read_features(tmp_path / "x.npy")
    assert str(caught.value) == f"feature file {tmp_path / 'x.npy'} {words}"


def test_other_damage_is_named(tmp_path):
    cases = {
        "extra.npy": (
            _header((2, 2)) + bytes(20),
            "does not match its header: its header says 2×2 float32 (16 bytes) "
            "but the file holds 20 bytes after the header",
        ),
        "cut.npy": (_header((2, 2))[:30], "has a damaged .npy header (EOF: reading array header"),
        "magic.npy": (b"\x93NUMPY\x01", "is not a readable .npy file (its header is cut short)"),
        "shape.npy": (_header((2, 2)).replace(b"(2, 2)", b"'ab'  "), "has a damaged .npy header (shape is not valid"),
        "bools.npy": (_header((2, 2), descr="|b1") + bytes(4), "must hold a 2-D numeric array, got bool (2, 2)"),
        "fields.npy": (_header((2, 2), descr=[("a", "<f4")]) + bytes(16), "must hold a 2-D numeric array"),
        "unclosed.npy": (
            b"\x93NUMPY\x01\x00\x76\x00{'descr': __import__(" + b" " * 96 + b"\n",
            "has a damaged .npy header",
        ),
    }
    for name, (content, words) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DatasetError) as caught:
            read_features(tmp_path / name)
        assert str(caught.value).startswith(f"feature file {tmp_path / name} {words}"), str(caught.value)


def test_sound_headers_of_every_kind_load(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    (tmp_path / "v2.npy").write_bytes(_header((3, 2), version=2) + values.tobytes())
    (tmp_path / "be.npy").write_bytes(_header((3, 2), descr=">f4") + values.astype(">f4").tobytes())
    for name in ("v2.npy", "be.npy"):
        assert np.array_equal(np.asarray(read_features(tmp_path / name)[0]), values)
    np.save(tmp_path / "h.npy", values.astype(np.float16))
    half = read_features(tmp_path / "h.npy")[0]
    assert half.dtype == np.float16 and np.array_equal(half, values)  # float16 kept as stored
    (tmp_path / "empty.npy").write_bytes(_header((0, 3)))
    assert read_features(tmp_path / "empty.npy")[0].shape == (0, 3)  # load_files says "one row per node"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            lambda: _truncated_bytes(np.ones((34, 4), dtype=np.float16), 10),
            "is truncated: its header says 34×4 float16",
        ),
        (lambda: _header((10**12, 4)) + bytes(62), "is truncated: its header says 1000000000000×4 float32"),
        (lambda: _header((-34, 4)) + bytes(16), "has a damaged .npy header: its shape (-34, 4) has a negative size"),
    ],
)
def test_gca_train_names_the_damaged_file_in_one_line(tmp_path, capsys, content, words):
    data = karate_club()
    edges = data.edge_index[:, data.edge_index[0] < data.edge_index[1]].numpy()
    (tmp_path / "e.csv").write_text("".join(f"{u},{v}\n" for u, v in edges.T))
    (tmp_path / "f.npy").write_bytes(content())
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"earlier": true}')
    code = main(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "f.npy"),
            "--epochs",
            "1",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"gca: error: feature file {tmp_path / 'f.npy'} {words}"), err
    assert (out / "results.json").read_text() == '{"earlier": true}'


def _truncated_bytes(array: np.ndarray, cut: int) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()[:-cut]
