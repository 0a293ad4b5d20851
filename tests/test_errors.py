"""A library error names Python parameters; the command line says the same error with its flags."""

import pickle
from pathlib import Path

import pytest

from gca.cli import main
from gca.cli.flags import FLAGS
from gca.config import ConfigError, GCAConfig
from gca.errors import UserError, option, quoted, render
from gca.evaluate.splits import EvaluationError, SplitSetting
from gca.stderr import name_options, spoken, warn


def _message() -> str:
    return (
        f"give {option('shots', 3)} with {option('SplitSetting.scheme', 'fewshot')}; {option('out', Path('runs/a'))}, "
        f"{option('resume', True)}, {option('cache', False)}, {option('evaluate', False)}, "
        f"{option('fanout', [10, 10], '10,10')}, {option('warmup_steps', command_line='N')}, {option('epochs')}, "
        f"{option('training', 'exact')}, {option('hold_out_edges.val')}"
    )


def test_str_says_python_parameters_and_the_command_line_says_its_flags():
    error = ConfigError(_message())
    assert str(error) == (
        "give shots=3 with scheme='fewshot'; out='runs/a', resume=True, cache=False, evaluate=False, "
        "fanout=[10, 10], warmup_steps, epochs, training='exact', val"
    )
    assert error.for_command_line(FLAGS) == (
        "give --shots 3 with --eval-split fewshot; --out runs/a, --resume, --no-cache, --no-eval, "
        "--set fanout=10,10, --set warmup_steps=N, --epochs, --exact, --link-val"
    )
    assert render("no option here", FLAGS) == "no option here" == str(UserError("no option here"))


def test_an_error_pickles_with_its_options_and_a_quoting_error_keeps_them():
    error = pickle.loads(pickle.dumps(EvaluationError(_message())))
    assert type(error) is EvaluationError and str(error).startswith("give shots=3 with scheme='fewshot'")
    assert error.for_command_line(FLAGS).startswith("give --shots 3 with --eval-split fewshot")
    outer = ConfigError(f"cannot run: {quoted(error)}")
    assert str(outer).startswith("cannot run: give shots=3") and "--shots 3" in outer.for_command_line(FLAGS)


def test_a_library_error_in_python_and_on_the_command_line(tmp_path, capsys):
    with pytest.raises(EvaluationError, match=r"shots \(training nodes per class\) goes with scheme='fewshot'"):
        SplitSetting("random", shots=3).check()
    with pytest.raises(ConfigError, match=r"e\.g\. fanout=\[10, 10\]"):
        GCAConfig(batch_size=8, fanout=(10, 10, 10)).validate()
    assert main(["train", "--shots", "3", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--shots (training nodes per class) goes with --eval-split fewshot" in err and "shots=" not in err


def test_printed_lines_name_options_as_the_process_does(capsys):
    line = f"lower {option('epochs')}, or train on a GPU ({option('device', 'cuda')})"
    assert spoken(line) == "lower epochs, or train on a GPU (device='cuda')"
    warn(line)
    name_options(FLAGS)
    try:
        assert spoken(line) == "lower --epochs, or train on a GPU (--device cuda)"
        warn(line)
    finally:
        name_options(None)
    assert capsys.readouterr().err.splitlines() == [
        "gca: warning: lower epochs, or train on a GPU (device='cuda')",
        "gca: warning: lower --epochs, or train on a GPU (--device cuda)",
    ]
