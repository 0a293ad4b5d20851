"""The output folder's lock (``filelock``): a holder killed with SIGKILL leaves a lock the next run takes, and
waiters in one process take turns."""

import os
import signal
import subprocess
import sys
import threading

import pytest

from gca.io import OutputError, hold_folder, release_folder


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_lock_whose_holder_was_killed_is_taken_by_the_next_run(tmp_path):
    code = (
        "import sys, time; from pathlib import Path; from gca.outputs.folder import hold_folder; "
        "held = hold_folder(Path(sys.argv[1])); print('held', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputError, match=rf"in use by another gca run \(process {holder.pid}\)"):
            hold_folder(tmp_path)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(60)
    lock = hold_folder(tmp_path)  # the killed holder's file is still there, its lock gone with the process
    assert (tmp_path / ".gca-lock").read_text() == str(os.getpid())
    release_folder(lock)
    assert not (tmp_path / ".gca-lock").exists()


def test_waiters_in_one_process_take_turns(tmp_path):
    events: list[str] = []
    first = hold_folder(tmp_path, ".turns.lock", wait=True)
    started = threading.Event()

    def second() -> None:
        started.set()
        lock = hold_folder(tmp_path, ".turns.lock", wait=True)
        events.append("second holds")
        release_folder(lock)

    thread = threading.Thread(target=second)
    thread.start()
    started.wait(60)
    events.append("first releases")
    release_folder(first)
    thread.join(60)
    assert events == ["first releases", "second holds"]
