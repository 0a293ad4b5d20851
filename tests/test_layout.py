"""The packages' faces: each public name a package hands on is the object its module defines, found on first use;
and the modules the command line checks arguments with load without PyTorch."""

import importlib
import subprocess
import sys

import pytest

from gca.lazy import declared_exports

PACKAGES = [
    "gca",
    "gca.cli",
    "gca.graph",
    "gca.augment",
    "gca.nn",
    "gca.train",
    "gca.evaluate",
    "gca.run",
    "gca.outputs",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_a_package_hands_on_is_its_modules_own(name):
    package = importlib.import_module(name)
    declared = declared_exports(package.__file__)
    assert sorted(declared) == package.__all__ and package.__all__
    for public, module in declared.items():
        defined = getattr(importlib.import_module(module, name), public)
        assert getattr(package, public) is defined, (name, public)
        assert public in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def test_the_modules_that_check_arguments_load_without_pytorch():
    code = (
        "import sys\n"
        "import gca, gca.cli.common, gca.config, gca.evaluate.splits, gca.outputs.folder, gca.train, gca.evaluate\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stdout + done.stderr


@pytest.mark.parametrize("name", PACKAGES)
def test_type_checkers_see_every_name_a_package_hands_on(name):
    """The ``if TYPE_CHECKING:`` imports of each package face are its lazy exports, each as ``Name as Name`` from the
    module that defines it: what mypy and IDEs see is what ``import`` gives at run time, from one list."""
    import ast
    from pathlib import Path

    package = importlib.import_module(name)
    tree = ast.parse(Path(package.__file__).read_text())
    (guarded,) = [
        node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
    ]
    aliases = [alias for node in guarded.body for alias in node.names]
    assert all(alias.asname == alias.name for alias in aliases)
    assert sorted(alias.name for alias in aliases) == package.__all__


def test_the_package_declares_its_types():
    from pathlib import Path

    import gca

    assert (Path(gca.__file__).parent / "py.typed").is_file()
