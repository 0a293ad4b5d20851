"""The guard around every command: argparse errors as one line, Ctrl-C and SIGTERM held while the libraries
load, every error a user can cause turned into one ``gca: error:`` line and exit status 2 (130 after an
interrupt), and the process group left cleanly under torchrun."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import UserError
from ..stderr import say, spoken
from . import peers
from .flags import FLAGS
from .signals import signals_held


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one ``gca: error:`` line (not a usage block) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"gca: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class Stop:
    """Ctrl-C and SIGTERM while a command runs end it with ``KeyboardInterrupt`` — except inside an object's finalizer,
    and while an error is being handled (for at most :attr:`patience_s` seconds), where the signal is sent again a
    moment later. Once the command has returned (``ended``, then :meth:`cancel`), a signal changes nothing. Design
    notes: docs/design/data-and-runs.md."""

    again_s = 0.05
    patience_s = 2.0

    def __init__(self) -> None:
        self.ended = False
        self._waiting_since: dict[int, float] = {}
        self._timers: list = []

    def __call__(self, signum, frame) -> None:
        if self.ended:
            return
        now = time.monotonic()
        if _in_finalizer(frame) or (
            sys.exc_info()[1] is not None and now - self._waiting_since.setdefault(signum, now) < self.patience_s
        ):
            self._send_again(signum)
            return
        self._waiting_since.pop(signum, None)
        raise KeyboardInterrupt

    def _send_again(self, signum: int) -> None:
        timer = threading.Timer(self.again_s, os.kill, (os.getpid(), signum))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def cancel(self) -> None:
        """Send no signal again (the command has ended)."""
        for timer in self._timers:
            timer.cancel()


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def imports_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back while the block imports, then acted on as a ``KeyboardInterrupt``: an interrupt
    inside a native extension's initialisation cannot unwind through it (pybind11 aborts, ``_ssl`` raises a
    ``TypeError``). Every import a command makes before its work goes through here."""
    with signals_held() as held:
        yield
    if held:
        raise KeyboardInterrupt


def import_libraries() -> None:
    """Import PyTorch, PyG, SciPy and scikit-learn with Ctrl-C and SIGTERM held back (:func:`imports_held`)."""
    # Matplotlib logs warnings of its own when HOME is unusable (it then works from a temporary folder): not the
    # user's concern, so only its errors are shown.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    with imports_held():
        from .. import datasets  # noqa: F401 - imported for their libraries
        from ..run import pipeline  # noqa: F401
        from ..train import estimator  # noqa: F401


_OUT_OF_MEMORY = (
    "ran out of memory; lower hidden, proj_hidden or block_size (--set key=value), train a large graph on "
    "sampled mini-batches (--set batch_size=1024; README: Large graphs), or use a machine or device with more memory"
)


def _is_out_of_memory(exc: RuntimeError) -> bool:
    """PyTorch reports a failed allocation as a RuntimeError (CPU: "DefaultCPUAllocator: can't allocate memory") or
    torch.OutOfMemoryError."""
    text = str(exc).lower()
    words = ("out of memory", "not enough memory", "can't allocate memory")
    return type(exc).__name__ == "OutOfMemoryError" or any(w in text for w in words)


def _process_group():
    """torch.distributed if this process joined a process group (under torchrun), else ``None``; never imports torch
    itself (an interrupted import may have left it half-loaded)."""
    dist = sys.modules.get("torch.distributed")
    try:
        return dist if dist is not None and dist.is_available() and dist.is_initialized() else None
    except Exception:  # noqa: BLE001 - a module whose import was interrupted
        return None


def _is_peer_failure(exc: RuntimeError) -> bool:
    """A collective of a distributed run failed because another rank died or timed out."""
    return _process_group() is not None and (
        "Dist" in type(exc).__name__ or any(w in str(exc) for w in ("Connection", "gloo", "NCCL", "Timed out"))
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _error(line: str) -> int:
    """Say ``gca: error: line``, once over the processes of a torchrun run, and return the exit status 2."""
    line = f"gca: error: {line}"
    if peers.first_to_say(spoken(line)):
        say(line)
    return 2


def interrupted(line: str) -> None:
    """Say ``gca: interrupted; line`` — unless torchrun stopped this process because another one failed with its own
    error line (:func:`.peers.a_peer_failed`)."""
    if not peers.a_peer_failed():
        say(f"gca: interrupted; {line}")


def run_guarded(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``command(args)``, with every error a user can cause turned into one line and exit status 2."""
    try:
        return command(args)
    except UserError as exc:
        return _error(_one_line(exc.for_command_line(FLAGS)))
    except MemoryError:
        return _error(_OUT_OF_MEMORY)
    except OSError as exc:  # e.g. a full disk or a vanished folder; result files are staged, so none is half-written
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{where}{exc.strerror or exc}")
    except RuntimeError as exc:
        if _is_out_of_memory(exc):
            return _error(_OUT_OF_MEMORY)
        if _is_peer_failure(exc):
            if not peers.a_peer_failed():  # a peer that failed with its own line has said why
                say(
                    "gca: error: another process of this distributed run stopped or cannot be reached; see its "
                    "message (this one made no result files)"
                )
            return 2
        raise
    except KeyboardInterrupt:
        # gca train and gca embed say what their output folder holds (RunOutputs.after_stop), gca tune and gca
        # reproduce what they saved; this is any other moment's line
        interrupted("files written before are kept as they were, and none is left half-written")
        return 130


def leave_process_group() -> None:
    """End this process's part in a torchrun process group, if it joined one."""
    dist = _process_group()
    if dist is not None:
        dist.destroy_process_group()
