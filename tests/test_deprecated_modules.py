"""Modules renamed for what they hold: the old names still import, give the new module itself and warn."""

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("gca.run.cache", "gca.run.store", ["PreparedStore", "GraphSource", "input_digests", "sampled_digest"]),
        ("gca.terminal", "gca.stderr", ["say", "warn"]),
        ("gca.train.memory", "gca.train.fit_cache", ["fit_key", "remembered", "check_memory"]),
        ("gca.datasets.tables", "gca.datasets.files.tables", ["BLOCK_BYTES"]),
    ],
)
def test_an_old_module_name_gives_the_new_module_with_a_deprecation_warning(old, new, names, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert all(hasattr(module, name) for name in names)
