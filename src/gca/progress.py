"""Progress reports: a live bar on a terminal, a plain line now and then in a log file.

tqdm's bar redraws itself with carriage returns, which is right on a terminal and hundreds of lines of noise in a
batch job's log or CI output. :class:`Progress` uses the bar when stderr is a terminal and otherwise prints one
plain line about every tenth of the work (and at the end).
"""

from __future__ import annotations

import sys
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
