"""The ``gca`` command's first module: Ctrl-C and SIGTERM are held back before anything else is imported, and a held
interrupt ends the command with one line and exit status 130 once the command line's own module is loaded."""

import os
import sys

from .signals import signals_held


def main() -> None:
    with signals_held() as held:
        from .dispatch import entry
    if held:
        sys.stderr.write("gca: interrupted before the command started; nothing was written\n")
        sys.stderr.flush()
        os._exit(130)
    entry()


if __name__ == "__main__":  # pragma: no cover
    main()
