"""Progress reports: a live bar on a terminal, a plain line now and then in a log file, and one warning when a
run will be long.

tqdm's bar redraws itself with carriage returns, which is right on a terminal and hundreds of lines of noise in a
batch job's log or CI output. :class:`Progress` uses the bar when stderr is a terminal and otherwise prints one
plain line about every tenth of the work (and at the end). :class:`LongRunHint` (an ``on_epoch`` hook of
:meth:`gca.GCA.fit`) projects the run's time from its first epoch. :func:`to_stderr` is the line writer the
library's long jobs (``gca tune``'s search, ``gca reproduce``) report through by default.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm.auto import tqdm


class Progress:
    def __init__(self, total: int, desc: str, unit: str, enabled: bool = True, initial: int = 0,
                 stream: TextIO | None = None) -> None:  # fmt: skip
        self.stream = stream or sys.stderr
        self.total, self.done, self.desc, self.unit = total, initial, desc, unit
        self.enabled = enabled and total > initial
        interactive = self.enabled and _is_terminal(self.stream)
        self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True, file=self.stream,
                        disable=not interactive)  # fmt: skip
        self.every = max(1, total // 10)
        self.plain = self.enabled and not interactive

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.done += n
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(n)
        if self.plain and (self.done % self.every == 0 or self.done == self.total):
            details = "".join(f", {k} {v}" for k, v in postfix.items())
            print(f"{self.desc}: {self.done}/{self.total} {self.unit}s{details}", file=self.stream, flush=True)

    def describe(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=True)

    def close(self) -> None:
        self.bar.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def to_stderr(message: str) -> None:
    """One line to standard error, flushed at once (a log file shows it as it happens).

    Parameters
    ----------
    message
        The line (without its newline).
    """
    print(message, file=sys.stderr, flush=True)


#: Projected training time above which ``gca train`` says, once, how to make the run shorter.
LONG_RUN_SECONDS = 3600.0


class LongRunHint:
    """``on_epoch`` hook: after the first epoch, if all epochs would take over ``limit`` seconds, one warning line
    saying how long and what shortens it — mini-batches for exact training on a large graph, fewer updates for a
    mini-batch run. A user sees it within one epoch instead of after hours; training goes on unchanged.

    Parameters
    ----------
    config
        The run's configuration (its ``epochs``, ``batch_size`` and ``steps_per_epoch``).
    num_nodes
        The graph's nodes.
    limit
        Warn when the remaining epochs would take longer than this many seconds.
    clock
        The clock the first epoch is timed with.
    emit
        Where the warning line goes; ``None`` for stderr, above a progress bar.
    """

    def __init__(self, config: Any, num_nodes: int, limit: float = LONG_RUN_SECONDS, clock=time.perf_counter,
                 emit=None) -> None:  # fmt: skip
        self.config, self.num_nodes, self.limit, self.clock = config, num_nodes, limit, clock
        self.emit = emit or _print_above_progress
        self.start = clock()
        self.done = False

    def __call__(self, epoch: int, embed: Any = None) -> None:
        if self.done:
            return
        self.done = True  # the first epoch this process ran (epoch counts from 1, and on from a resumed checkpoint)
        per_epoch = self.clock() - self.start
        remaining = per_epoch * (self.config.epochs - epoch)
        if remaining <= self.limit:
            return
        config, n = self.config, self.num_nodes
        head = (f"the first epoch took {per_epoch:,.1f} s, so the other {config.epochs - epoch:,} epochs need about "
                f"{remaining / 3600:,.1f} h")  # fmt: skip
        if not config.batch_size:
            advice = (f"exact training compares all {2 * n:,}² pairs of the two views' nodes every epoch; for a graph "
                      "this large, sampled mini-batches are far cheaper (--set batch_size=1024; README: Large graphs)"
                      if n >= 20_000 else "lower --epochs, or train on a GPU (--device cuda)")  # fmt: skip
        else:
            steps = config.steps_per_epoch or -(-n // config.batch_size)
            advice = (f"each epoch makes {steps:,} updates; fewer epochs or --set steps_per_epoch=N shorten it "
                      "(updates, not epochs, set how far training goes: README: Large graphs)")  # fmt: skip
        self.emit(f"gca: warning: {head}; {advice}")


def _print_above_progress(line: str) -> None:
    tqdm.write(line, file=sys.stderr)
