"""Ctrl-C and SIGTERM held back while modules load, and left alone where the process was started ignoring them (as
Python itself leaves them). This module imports nothing of gca's: the command's first module uses it before anything
else is loaded."""

import contextlib
import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def catchable(number: int) -> bool:
    """Whether gca may handle signal ``number``: not one the process was started with ignored."""
    return signal.getsignal(number) is not signal.SIG_IGN


@contextlib.contextmanager
def stop_signals_to(handler):
    """Within the block, Ctrl-C and SIGTERM go to ``handler(signum, frame)``, each unless the process was started
    ignoring it; outside the main thread nothing changes."""
    previous = {}
    try:
        for number in filter(catchable, STOP_SIGNALS):
            previous[number] = signal.signal(number, handler)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for number, earlier in previous.items():
            signal.signal(number, earlier)


@contextlib.contextmanager
def signals_held():
    """Within the block, Ctrl-C and SIGTERM are recorded instead of acted on; yields the list they are recorded in."""
    held: list[int] = []
    with stop_signals_to(lambda signum, frame: held.append(signum)):
        yield held
