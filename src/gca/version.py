"""gca's version: the one place it is written (``pyproject.toml`` reads it from here); imports nothing."""

__version__ = "0.3.0"
