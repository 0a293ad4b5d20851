"""``python -m gca`` is the ``gca`` command; ``torchrun … -m gca train …`` runs it on several processes."""

from .cli.console import main

main()
