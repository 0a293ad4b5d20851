"""``python -m gca`` is the ``gca`` command; ``torchrun … -m gca train …`` runs it on several processes."""

import sys

from .cli import main

sys.exit(main())
