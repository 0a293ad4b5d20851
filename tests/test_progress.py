"""Progress reports: the long-run hint projected from the first epoch, and the library's line writer."""

from __future__ import annotations

from gca.progress import LongRunHint, to_stderr


def _hint_lines(config, nodes: int, first_epoch_seconds: float, epoch: int = 1) -> list[str]:
    times = iter([0.0, first_epoch_seconds])
    lines: list[str] = []
    hint = LongRunHint(config, nodes, clock=lambda: next(times), emit=lines.append)
    hint(epoch)
    hint(epoch + 1)  # said once at most
    return lines


def test_a_run_projected_past_an_hour_says_so_once_with_what_shortens_it():
    from gca import GCAConfig

    exact = GCAConfig(epochs=500)
    assert _hint_lines(exact, 169_343, 7.0) == []  # 499 × 7 s = 58 min: no warning
    (line,) = _hint_lines(exact, 169_343, 8.0)  # 499 × 8 s = 1.1 h
    assert line.startswith("gca: warning: the first epoch took 8.0 s, so the other 499 epochs need about 1.1 h")
    assert "338,686² pairs" in line and "--set batch_size=1024" in line
    (line,) = _hint_lines(exact, 5_000, 8.0)  # a small graph: mini-batches are not the answer
    assert "--epochs" in line and "batch_size" not in line
    (line,) = _hint_lines(GCAConfig(epochs=500, batch_size=1024), 169_343, 60.0)
    assert "each epoch makes 166 updates" in line and "steps_per_epoch" in line
    (line,) = _hint_lines(exact, 169_343, 30.0, epoch=301)  # resumed at epoch 300: 199 epochs are left
    assert "the other 199 epochs need about 1.7 h" in line


def test_the_library_reports_lines_on_stderr_by_default_and_nothing_when_told(tmp_path, capsys):
    import inspect

    from gca.reproduce import Reproduction
    from gca.tune import Search

    to_stderr("trial 3: 81.2")
    assert capsys.readouterr() == ("", "trial 3: 81.2\n")  # stdout stays the command's results
    for kind in (Search, Reproduction):
        assert inspect.signature(kind).parameters["log"].default is to_stderr
