"""Progress reports: a live bar on a terminal and a plain line now and then in a log file.

:class:`Progress` uses tqdm's bar when stderr is a terminal and otherwise prints one plain line about every tenth of
the work, at least one a minute while the work goes on, and one at the end — each with the seconds spent and, before
the end, an estimate of the time left. :func:`phase` makes the progress of a phase that is usually short (preparing
a graph, evaluating, embedding): nothing shows unless it has run :data:`PHASE_DELAY` seconds; :func:`step` does the
same for a phase whose work is not counted: one line once it has run :data:`PHASE_DELAY` seconds, one at its end.
:func:`print_above_progress` writes a warning above a bar (:class:`gca.train.fast.LongRunHint`). :func:`to_stderr`
(:func:`gca.stderr.say`) is the line writer the library's long jobs (``gca tune``, ``gca reproduce``) report through
by default. Why: docs/design/application.md.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from tqdm.auto import tqdm

from .stderr import say as to_stderr  # noqa: F401 - the line writer of the library's long jobs

#: A phase shows its progress once it has run this many seconds (:func:`phase`); shorter phases show nothing.
PHASE_DELAY = 3.0
#: Without a terminal, a line at least this often (seconds) while the work goes on, besides every tenth of it.
LINE_EVERY_SECONDS = 60.0


class Progress:
    """The progress of ``total`` units of work: a tqdm bar when ``stream`` (default stderr) is a terminal, else a
    plain line at every tenth of the work, at least every :data:`LINE_EVERY_SECONDS` while it goes on, and at its
    end, e.g. ``GCA: 146/1,465 updates, epoch 1/1, loss 5.3121, 31.2 s, about 4.6 min left``.

    Parameters
    ----------
    unit
        What a unit is called (singular).
    enabled
        Show anything at all (``False``: no progress asked for, or not the process that writes).
    initial
        The units already done (a resumed run).
    delay
        Show nothing until this many seconds have passed (:func:`phase`: :data:`PHASE_DELAY`).
    """

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        enabled: bool = True,
        initial: int = 0,
        stream: TextIO | None = None,
        *,
        delay: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.total, self.done, self.initial, self.desc, self.unit = total, initial, initial, desc, unit
        self.enabled = enabled and total > initial
        self.clock, self.delay = clock, delay
        self.start = self.last_line = clock()
        interactive = self.enabled and _is_terminal(self.stream)
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit=unit,
            dynamic_ncols=True,
            file=self.stream,
            disable=not interactive,
            delay=delay,
        )
        self.every = max(1, total // 10)
        self.plain = self.enabled and not interactive
        self.postfix: dict[str, Any] = {}
        self.shown = False  # a plain line printed

    def update(self, n: int = 1, **postfix: Any) -> None:
        """``n`` more units done; ``postfix`` (``loss=5.3121`` → ``, loss 5.3121``) is shown after the count from
        now on, replacing the previous one (none keeps it)."""
        before = self.done
        self.done += n
        if postfix:
            self.postfix = postfix
            self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(n)
        if not self.plain:
            return
        now = self.clock()
        if now - self.start < self.delay:
            return
        tenth = self.done // self.every > before // self.every
        late = self.delay > 0 and not self.shown  # a delayed phase says what it does as soon as it shows
        if tenth or late or self.done >= self.total or now - self.last_line >= LINE_EVERY_SECONDS:
            self.last_line, self.shown = now, True
            print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float | None = None) -> str:
        """The plain line of the work done so far, at ``now`` (default: the clock now): the count, the postfix, the
        seconds and the time left."""
        now = self.clock() if now is None else now
        spent = now - self.start
        details = "".join(f", {k} {v}" for k, v in self.postfix.items())
        text = f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s{details}, {duration(spent)}"
        if self.initial < self.done < self.total:
            left = spent / (self.done - self.initial) * (self.total - self.done)
            text += f", about {duration(left)} left"
        return text

    def describe(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=True)

    def close(self) -> None:
        self.bar.close()


def phase(total: int, desc: str, unit: str, enabled: bool = True) -> Progress:
    """The progress of a phase that is usually short — preparing a graph, evaluating, embedding: shown only once it
    has run :data:`PHASE_DELAY` seconds (read when the phase starts), so small graphs print nothing."""
    return Progress(total, desc, unit, enabled=enabled, delay=PHASE_DELAY)


@contextlib.contextmanager
def step(
    desc: str,
    enabled: bool = True,
    *,
    delay: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    timer: Callable[..., Any] = threading.Timer,
    emit: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """A phase whose work is not counted in units (building the undirected edge list, storing the prepared graph):
    once it has run ``delay`` seconds (default :data:`PHASE_DELAY`) and still runs, the line ``DESC: under way,
    3.0 s`` (a timer thread says it; with no delay it is said at once); at its end, where that line was said,
    ``DESC: done, 12.4 s`` (``DESC: stopped, 12.4 s`` where the work raised). A step shorter than the delay says
    nothing, so small graphs print no phase lines.

    Parameters
    ----------
    delay
        Seconds before the first line; ``None`` for :data:`PHASE_DELAY` (read when the step starts).
    timer
        Makes the timer that says the first line: ``timer(seconds, function)`` with ``start()`` and ``cancel()``
        (:class:`threading.Timer`).
    emit
        Where a line goes; ``None`` for stderr, above a progress bar.
    """
    if not enabled:
        yield
        return
    write = emit or print_above_progress
    said: list[bool | None] = [False]  # the first line said; None once the step ended
    start, lock = clock(), threading.Lock()

    def under_way() -> None:
        with lock:
            if said[0] is None:  # ended meanwhile
                return
            said[0] = True
            write(f"{desc}: under way, {duration(clock() - start)}")

    delay = PHASE_DELAY if delay is None else delay
    waiting = timer(delay, under_way) if delay > 0 else None
    if waiting is None:
        under_way()  # no delay: said at once (in this thread)
    else:
        waiting.daemon = True
        waiting.start()
    ended = "stopped"  # a step whose work raised is not said to be done; its error is said after
    try:
        yield
        ended = "done"
    finally:
        if waiting is not None:
            waiting.cancel()
        with lock:
            if said[0]:
                write(f"{desc}: {ended}, {duration(clock() - start)}")
            said[0] = None


def duration(seconds: float) -> str:
    """``12.3 s``, ``4.6 min`` or ``1.3 h``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def print_above_progress(line: str) -> None:
    """Write ``line`` (without its newline) to stderr above a progress bar that is showing."""
    tqdm.write(line + "\n", file=sys.stderr, end="")  # the line and its newline in one write (gca.stderr)
