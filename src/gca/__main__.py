"""``python -m gca`` is the ``gca`` command; ``torchrun … -m gca train …`` runs it on several processes."""

from .cli.startup import main

main()
