"""gca's lines on standard error stay whole when several processes (torchrun's ranks) say theirs at once."""

import os
import subprocess
import sys

from gca.stderr import say


def test_a_line_is_one_write(monkeypatch):
    writes = []

    class Stream:
        def write(self, text):
            writes.append(text)

        def flush(self):
            writes.append("<flush>")

    monkeypatch.setattr(sys, "stderr", Stream())
    say("gca: error: the processes read different graphs")
    assert writes == ["gca: error: the processes read different graphs\n", "<flush>"]


def test_two_processes_saying_lines_at_once_do_not_interleave_them():
    """With PYTHONUNBUFFERED (as in many containers and CI), ``print(line, file=sys.stderr)`` writes the text and
    its newline separately, and two processes on one pipe mix them (``line0line1``, then two newlines)."""
    code = (
        "import sys\nfrom gca.stderr import say\nword = sys.argv[1]\n"
        "for i in range(3000):\n    say(f'gca: error: {word} ' + word * 40)\n"
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    read, write = os.pipe()
    procs = [subprocess.Popen([sys.executable, "-c", code, word], stderr=write, env=env) for word in ("zero", "one")]
    os.close(write)
    with os.fdopen(read, "r") as stream:
        lines = stream.read().split("\n")
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert lines[-1] == ""
    expected = {f"gca: error: {word} " + word * 40 for word in ("zero", "one")}
    assert set(lines[:-1]) == expected and len(lines) - 1 == 6000
