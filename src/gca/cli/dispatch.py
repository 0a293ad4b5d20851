"""The ``gca`` command: one parser whose sub-commands add their own arguments, and the dispatch to them."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

from .. import __version__
from ..stderr import name_options
from . import embed, prepare, reproduce, train, tune
from .flags import FLAGS
from .guard import Parser, Stop, leave_process_group, run_guarded
from .signals import stop_signals_to

COMMANDS = {"train": train, "embed": embed, "prepare": prepare, "tune": tune, "reproduce": reproduce}


def build_parser() -> Parser:
    parser = Parser(
        prog="gca", description="Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021)."
    )
    parser.add_argument("--version", action="version", version=f"gca {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        return 130
    from ..provenance import command_line, utc_now

    # what a run's record says of its start (gca.provenance)
    args.started, args.command_line = utc_now(), command_line(None if argv is None else list(argv))
    # a batch system's stop (SIGTERM) cleans up staged files as Ctrl-C does; neither is lost in a finalizer, nor
    # cuts short the cleanup after an error
    stop = Stop()
    name_options(FLAGS)  # the warnings a command prints name its flags, as its errors do
    try:
        with stop_signals_to(stop), warnings.catch_warnings():
            if not sys.warnoptions:
                # gca's own warnings are "gca: warning: …" lines; a library's internal warnings (with a source
                # line) are noise to a user. `python -W default -m gca.cli …` shows them for debugging.
                warnings.simplefilter("ignore")
            try:
                return run_guarded(COMMANDS[args.command].run, args)
            finally:
                stop.ended = True  # first, and not a call (Stop's docstring)
                stop.cancel()
    finally:
        name_options(None)
        leave_process_group()


def entry() -> None:
    """The ``gca`` command. After an interruption the results are already safe, so the process ends at once, without the
    interpreter's finalisation."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)
