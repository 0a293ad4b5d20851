"""Ctrl-C and SIGTERM held back while modules load, and left alone where the process was started ignoring them.

A signal the process was started with ignored stays ignored throughout, as Python itself leaves it: a shell
without job control starts ``gca … &`` with SIGINT ignored, so that a Ctrl-C meant for the foreground does not end
the background run — not even while it loads. This module imports nothing of gca's: the command's first module
uses it before anything else is loaded.
"""

import contextlib
import signal

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
