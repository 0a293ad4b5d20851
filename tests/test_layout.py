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


def test_a_packages_modules_are_its_attributes_after_import_gca():
    """``import gca`` then ``gca.augment.prepare``, as ``torch_geometric.nn.GCNConv`` after ``import torch_geometric``:
    each module loads when it is first named, and ``import gca`` alone loads no PyTorch."""
    code = (
        "import sys\n"
        "import gca\n"
        "print('torch' in sys.modules)\n"
        "print(gca.augment.prepare is __import__('gca.augment.prepared', fromlist=['x']).prepare)\n"
        "print(gca.nn.model.GCAModel is gca.GCAModel, gca.datasets.karate_club().num_nodes)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "True", "34"], done.stdout + done.stderr


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


#: The method's core: a researcher's model, augmentation, objective, training and evaluation.
CORE = ("gca.graph", "gca.augment", "gca.nn", "gca.objective", "gca.train", "gca.evaluate")
#: The application around it: the command line, runs and their folders, file readers, stores of runs,
#: reproduction, tuning and the metric loggers (the core reaches these through gca.logger_protocol only).
APPLICATION = ("gca.cli", "gca.run", "gca.outputs", "gca.datasets", "gca.reproduce", "gca.tune", "gca.loggers")


def _imports(path, module):
    """The absolute names of the modules ``path`` (module ``module``) imports, anywhere in the file."""
    import ast

    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def test_the_core_imports_nothing_of_the_application():
    """No module of the core imports the application, at its top or inside a function: the model, its training and
    its evaluation can be read, used and tested without the command line, the stores or the readers."""
    from pathlib import Path

    root = Path(importlib.import_module("gca").__file__).parent
    wrong = []
    for package in CORE:
        for path in sorted((root / package.removeprefix("gca.").replace(".", "/")).rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            wrong += [
                f"{module} imports {name}"
                for name in sorted(_imports(path, module))
                if any(name == app or name.startswith(app + ".") for app in APPLICATION)
            ]
    assert not wrong, wrong


@pytest.mark.parametrize("rooms", ["packages", "modules"])
def test_the_imports_run_one_way_without_a_circle(rooms):
    """Between gca's packages (``gca.train``, ``gca.config``, …) and between its modules, the imports anywhere in a
    file form no circle, so every module stands above all it imports and none imports back up. A package's
    ``__init__`` hands its names on lazily (gca.lazy): importing from it is an arrow into the package, and its own
    list of names is none out of it."""
    import graphlib
    from pathlib import Path

    root = Path(importlib.import_module("gca").__file__).parent
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def room(name):
        parts = name.split(".")
        return ".".join(parts[:2]) if rooms == "packages" else name

    arrows = {}
    for module, path in modules.items():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        for name in _imports(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != "gca" and room(name) != room(module):
                arrows.setdefault(room(module), set()).add(room(name))
    assert len(arrows) > (15 if rooms == "packages" else 80)  # the walk found the house's arrows
    try:
        graphlib.TopologicalSorter(arrows).prepare()
    except graphlib.CycleError as circle:
        pytest.fail(f"an import circle: {' -> '.join(circle.args[1])}")


#: The files one training step runs code of, in reading order: the step, the two views, the model, its encoder and
#: operator, the objective and its kernel, the precision. A step that needs one more file is a decision, not drift.
STEP_FILES = {
    "train/loop.py",
    "augment/augmentors.py",
    "nn/model.py",
    "nn/gcn.py",
    "graph/sparse.py",
    "objective/__init__.py",
    "objective/blocked.py",
    "precision.py",
}


@pytest.mark.parametrize("batch_size", [0, 12], ids=["exact", "mini-batch"])
def test_one_training_step_reads_at_most_eight_files(batch_size):
    """Every gca function that runs in one ``train_step`` (after a first step has filled the caches), traced:
    exact and mini-batch steps run the code of the same eight files."""
    from pathlib import Path

    import torch

    import gca
    from gca.augment.prepared import prepare
    from gca.config import GCAConfig
    from gca.datasets import karate_club
    from gca.nn.model import GCAModel
    from gca.train.batches import batch_source
    from gca.train.loop import train_step

    config = GCAConfig(hidden=8, proj_hidden=8, batch_size=batch_size, loss_backend="blocked", precision="fp32")
    prepared = prepare(karate_club(), config)
    model = GCAModel.from_config(prepared.graph.num_features, config)
    optimizer, generator = torch.optim.Adam(model.parameters()), torch.Generator().manual_seed(0)
    source = batch_source(prepared.graph, prepared.views, config, torch.device("cpu"))
    train_step(model, optimizer, next(iter(source.batches(0, generator))), generator)
    batch = next(iter(source.batches(1, generator)))
    root, entered = str(Path(gca.__file__).parent) + "/", set()

    def seen(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            entered.add(frame.f_code.co_filename.removeprefix(root))

    sys.setprofile(seen)
    try:
        train_step(model, optimizer, batch, generator)
    finally:
        sys.setprofile(None)
    assert entered == STEP_FILES
