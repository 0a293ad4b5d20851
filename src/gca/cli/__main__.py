"""``python -m gca.cli`` is the ``gca`` command."""

from .console import main

main()
