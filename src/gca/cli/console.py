"""The ``gca`` command's first module: Ctrl-C and SIGTERM are held back before anything else is imported.

An interrupt that lands while the standard library's or gca's modules load would otherwise print a traceback
(``KeyboardInterrupt`` raised inside an ``import``). Held, it ends the command with one line and exit status 130
once the command line's own module is loaded; from there :mod:`gca.cli` handles interrupts itself (and holds them
again while PyTorch loads). Only what Python imports at start-up runs before this module.

A signal the process was started with ignored stays ignored throughout, as Python itself leaves it: a shell
without job control starts ``gca … &`` with SIGINT ignored, so that a Ctrl-C meant for the foreground does not end
the background run — not even while it loads.
"""

import contextlib
import os
import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def catchable(number: int) -> bool:
    """Whether gca may handle signal ``number``: not one the process was started with ignored."""
    return signal.getsignal(number) is not signal.SIG_IGN


@contextlib.contextmanager
def signals_held():
    """Within the block, Ctrl-C and SIGTERM are recorded instead of acted on; yields the list they are recorded in.
    Outside the main thread, where signals are not ours to hold, nothing is held."""
    held: list[int] = []
    previous = {}
    try:
        for number in filter(catchable, STOP_SIGNALS):
            previous[number] = signal.signal(number, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread
        pass
    try:
        yield held
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


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
