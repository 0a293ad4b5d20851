"""The processes of one torchrun run, heard once: an error line is printed by the first process that says it, and a
process stopped because another failed does not print its own "interrupted" over that one's reason. The lines meet in
torchrun's agent store (``TORCHELASTIC_USE_AGENT_STORE=True``), under the run's id and restart count; outside torchrun,
or where that store cannot be reached, every line is printed."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from .. import environment
from .signals import signals_held

#: Seconds to reach the agent's store before printing anyway.
STORE_TIMEOUT_S = 5.0

_store: list[Any] = []  # the store once reached (or None where it cannot be), per process


def _run_store() -> Any:
    """The agent's store under this run's prefix, or ``None`` (not under torchrun, or unreachable)."""
    if _store:
        return _store[0]
    store = None
    try:
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and environment.world_size() > 1:
            with signals_held():  # torch's first import must not be cut short inside a native extension
                from datetime import timedelta

                import torch.distributed as dist

                client = dist.TCPStore(
                    os.environ["MASTER_ADDR"],
                    int(os.environ["MASTER_PORT"]),
                    is_master=False,
                    timeout=timedelta(seconds=STORE_TIMEOUT_S),
                    wait_for_workers=False,
                )
                run = os.environ.get("TORCHELASTIC_RUN_ID", "")
                restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
                store = dist.PrefixStore(f"gca/{run}/{restart}/", client)
    except Exception:  # noqa: BLE001 - no store: every process prints its lines
        store = None
    _store.append(store)
    return store


def first_to_say(line: str) -> bool:
    """Whether this process prints the error ``line`` (no other process of its run printed it yet); either way the run
    is marked as failed for :func:`a_peer_failed`."""
    store = _run_store()
    if store is None:
        return True
    try:
        with signals_held():
            store.add("failed", 1)
            return store.add("said/" + hashlib.blake2b(line.encode(), digest_size=16).hexdigest(), 1) == 1
    except Exception:  # noqa: BLE001 - the store went away: say it
        return True


def a_peer_failed() -> bool:
    """Whether another process of this torchrun run stopped with an error line of its own."""
    store = _run_store()
    if store is None:
        return False
    try:
        with signals_held():
            return bool(store.check(["failed"]))
    except Exception:  # noqa: BLE001
        return False
