"""The ``gca`` command line: :mod:`.main` (parser and dispatch), :mod:`.shell` (signals, error lines, exit codes),
:mod:`.common` (what commands share) and one module per command, each adding its own arguments."""

from .main import entry, main
from .train import LongRunHint

__all__ = ["LongRunHint", "entry", "main"]
