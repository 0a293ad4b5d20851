"""``python -m gca.cli`` is the ``gca`` command."""

from .startup import main

main()
