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


def test_every_parameter_a_message_names_is_a_flag_the_command_line_has():
    """Each ``option(...)`` in the library, said as the command line says it, names a flag some ``gca`` command
    takes: a parameter whose name is no flag (and is missing from gca.cli.flags) would send a user to a flag that
    does not exist."""
    import argparse
    import ast

    from gca.cli.dispatch import build_parser

    known: set[str] = set()

    def collect(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            known.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    collect(sub)

    collect(build_parser())
    said = []
    for path in sorted((Path(__file__).resolve().parents[1] / "src" / "gca").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "option" and node.args):
                continue
            if not isinstance(node.args[0], ast.Constant):
                continue
            args = [a.value if isinstance(a, ast.Constant) else "X" for a in node.args]
            text = render(option(*args), FLAGS)
            said.append((path.name, args[0], text))
    assert len(said) > 50  # the library's messages were found
    missing = [(name, param, text) for name, param, text in said if text.split()[0].split("=")[0] not in known]
    assert missing == []
