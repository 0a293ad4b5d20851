"""The one base class of every error a user can cause and fix.

Each module raises its own subclass (``ConfigError``, ``DatasetError``, ``GraphError``, ``TrainingError``, …) with
a message of one line that says what is wrong and what to do; the command line prints it as ``gca: error: …`` and
exits with status 2. Kept free of heavy imports so the command line can catch it before loading PyTorch.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input, settings or environment; ``str(error)`` is one line meant for them."""


class DatasetError(UserError, RuntimeError):
    """A dataset cannot be found or read; the message is one line meant for the user (:mod:`gca.datasets`, and the
    edge lists :mod:`gca.graph.edges` builds from a file's)."""
