"""Progress reports: a live bar on a terminal, a plain line now and then in a log file, and one warning when a
run will be long.

tqdm's bar redraws itself with carriage returns, which is right on a terminal and hundreds of lines of noise in a
batch job's log or CI output. :class:`Progress` uses the bar when stderr is a terminal and otherwise prints one
plain line about every tenth of the work, at least one a minute while the work goes on, and one at the end — each
with the seconds spent and, before the end, an estimate of the time left. :func:`phase` makes the progress of a
phase that is usually short (preparing a graph, evaluating, embedding): nothing shows unless it has run for
:data:`PHASE_DELAY` seconds, so a small graph's run prints no more than its results; :func:`step` does the same for
a phase whose work is not counted (building an edge list, storing a prepared graph): one line once it has run
:data:`PHASE_DELAY` seconds, one at its end. :class:`LongRunHint` (an
``on_update`` hook of :meth:`gca.GCA.fit`) projects the run's time from its first updates. :func:`to_stderr`
(:func:`gca.terminal.say`, each line in one write) is the line writer the library's long jobs (``gca tune``'s
search, ``gca reproduce``) report through by default.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from tqdm.auto import tqdm

from .terminal import say as to_stderr  # noqa: F401 - the line writer of the library's long jobs

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
    total
        The units of work.
    desc
        What is done (the line's first word).
    unit
        What a unit is called (singular).
    enabled
        Show anything at all (``False``: ``--quiet``, or not the process that writes).
    initial
        The units already done (a resumed run).
    stream
        Where it goes; ``None`` for stderr.
    delay
        Show nothing until this many seconds have passed (:func:`phase`: :data:`PHASE_DELAY`).
    clock
        The clock the seconds are read from.
    """

    def __init__(self, total: int, desc: str, unit: str, enabled: bool = True, initial: int = 0,
                 stream: TextIO | None = None, *, delay: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.stream = stream or sys.stderr
        self.total, self.done, self.initial, self.desc, self.unit = total, initial, initial, desc, unit
        self.enabled = enabled and total > initial
        self.clock, self.delay = clock, delay
        self.start = self.last_line = clock()
        interactive = self.enabled and _is_terminal(self.stream)
        self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True, file=self.stream,
                        disable=not interactive, delay=delay)  # fmt: skip
        self.every = max(1, total // 10)
        self.plain = self.enabled and not interactive
        self.postfix: dict[str, Any] = {}
        self.shown = False  # a plain line printed

    def update(self, n: int = 1, **postfix: Any) -> None:
        """``n`` more units done; ``postfix`` (name → value) is shown after the count from now on.

        Parameters
        ----------
        n
            The units done since the last update.
        **postfix
            Name → value shown after the count (``loss=5.3121`` → ``, loss 5.3121``), replacing the previous ones;
            none keeps them.
        """
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
        """The plain line of the work done so far: the count, the postfix, the seconds and the time left.

        Parameters
        ----------
        now
            The time on the progress's clock to report at; ``None``: read the clock now.
        """
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
    has run :data:`PHASE_DELAY` seconds (read when the phase starts), so small graphs print nothing.

    Parameters
    ----------
    total
        The units of work.
    desc
        What is done.
    unit
        What a unit is called (singular).
    enabled
        Show anything at all.
    """
    return Progress(total, desc, unit, enabled=enabled, delay=PHASE_DELAY)


@contextlib.contextmanager
def step(desc: str, enabled: bool = True, *, delay: float | None = None, clock: Callable[[], float] = time.monotonic,
         timer: Callable[..., Any] = threading.Timer, emit: Callable[[str], None] | None = None) -> Iterator[None]:
    """A phase whose work is not counted in units (building the undirected edge list, storing the prepared graph):
    once it has run ``delay`` seconds (default :data:`PHASE_DELAY`) and still runs, the line ``DESC: under way,
    3.0 s`` (a timer thread says it; with no delay it is said at once); at its end, where that line was said,
    ``DESC: done, 12.4 s`` (``DESC: stopped, 12.4 s`` where the work raised). A step shorter than the delay says
    nothing, so small graphs print no more than before.

    Parameters
    ----------
    desc
        What is done.
    enabled
        Show anything at all.
    delay
        Seconds before the first line; ``None`` for :data:`PHASE_DELAY` (read when the step starts).
    clock
        The clock the seconds are read from (from the step's start).
    timer
        Makes the timer that says the first line: ``timer(seconds, function)`` with ``start()`` and ``cancel()``
        (:class:`threading.Timer`).
    emit
        Where a line goes; ``None`` for stderr, above a progress bar.
    """
    if not enabled:
        yield
        return
    write = emit or _print_above_progress
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
    """``12.3 s``, ``4.6 min`` or ``1.3 h``.

    Parameters
    ----------
    seconds
        The time.
    """
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


#: Projected training time above which ``gca train`` says, once, how to make the run shorter.
LONG_RUN_SECONDS = 3600.0


class LongRunHint:
    """``on_update`` hook (:meth:`gca.GCA.fit`): once the first updates are timed — :attr:`FIRST_UPDATES` of them,
    or fewer where they took :attr:`FIRST_SECONDS` already (one update of exact training on a large graph) — if
    the rest of the run would take over ``limit`` seconds, one warning line saying how long and what shortens it:
    ``--fast`` (mini-batches) for exact training on a graph that large, fewer updates for a mini-batch run. A user
    sees it within seconds instead of after an epoch or hours; training goes on unchanged.

    Parameters
    ----------
    config
        The run's configuration (its ``epochs``, ``batch_size`` and ``steps_per_epoch``).
    num_nodes
        The graph's nodes.
    limit
        Warn when the remaining updates would take longer than this many seconds.
    clock
        The clock the first updates are timed with (from the hook's making).
    emit
        Where the warning line goes; ``None`` for stderr, above a progress bar.
    device
        The device training runs on: exact training is told of ``--fast`` where the fast path would choose
        mini-batches there (:func:`gca.train.fast.fast_choice`).
    exact_asked
        The run trains exactly because ``--exact`` asked for it (the warning then says what dropping it does).
    """

    #: Updates timed before the projection, at most.
    FIRST_UPDATES = 3
    #: Seconds of updates that are enough to project from, whatever their number.
    FIRST_SECONDS = 2.0

    def __init__(self, config: Any, num_nodes: int, limit: float = LONG_RUN_SECONDS, clock=time.perf_counter,
                 emit=None, device: Any = "cpu", exact_asked: bool = False) -> None:  # fmt: skip
        self.config, self.num_nodes, self.limit, self.clock = config, num_nodes, limit, clock
        self.emit = emit or _print_above_progress
        self.device, self.exact_asked = device, exact_asked
        self.start = clock()
        self.timed = 0  # updates this process made so far
        self.done = False

    def __call__(self, update: int, updates: int | None) -> None:
        """After update ``update`` (counted from 1 over the run, on from a resumed checkpoint's) of ``updates``."""
        if self.done or not updates:
            return
        self.timed += 1
        spent = self.clock() - self.start
        if self.timed < self.FIRST_UPDATES and spent < self.FIRST_SECONDS and update < updates:
            return
        self.done = True
        left = updates - update
        remaining = spent / self.timed * left
        if remaining <= self.limit:
            return
        config, n = self.config, self.num_nodes
        what = "epoch" if not config.batch_size else "update"
        first = f"the first {what}" if self.timed == 1 else f"the first {self.timed} {what}s"
        head = f"{first} took {spent:,.1f} s, so the other {left:,} {what}s need about {duration(remaining)}"
        if not config.batch_size:
            from .train.fast import fast_choice

            if fast_choice(n, self.device).mini_batch:
                advice = (f"exact training compares all {2 * n:,}² pairs of the two views' nodes at every update; "
                          "for a graph this large mini-batches are far cheaper: --fast "
                          f"{'instead of --exact ' if self.exact_asked else ''}trains in mini-batches of 1,024 "
                          "anchors, as many updates (README: Large graphs)")  # fmt: skip
            else:
                advice = "lower --epochs, or train on a GPU (--device cuda)"
        else:
            steps = config.steps_per_epoch or -(-n // config.batch_size)
            advice = (f"each epoch makes {steps:,} updates; fewer epochs or --set steps_per_epoch=N shorten it "
                      "(updates, not epochs, set how far training goes: README: Large graphs)")  # fmt: skip
        self.emit(f"gca: warning: {head}; {advice}")


def _print_above_progress(line: str) -> None:
    tqdm.write(line + "\n", file=sys.stderr, end="")  # the line and its newline in one write (gca.terminal)
