"""Command-line entry point: ``diagnose [OPTIONS] SCRIPT [ARGS...]`` and its subcommands.

Each subcommand lives in ``diagnose.commands.<name>`` with ``add_arguments(parser)`` and
``main(args) -> int``; modules are imported only when their command runs, so that
``diagnose match`` does not pay for importing torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from typing import NoReturn

from diagnose.errors import ExitStatus, UsageError
from diagnose.helptext import HelpFormatter, plain
from diagnose.safetext import one_line

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("diagnose.commands.run", "run a training script under the tracer (the default)"),
    "match": ("diagnose.commands.match", "rank dataset records for an error message or log"),
    "dataset": (
        "diagnose.commands.dataset",
        "validate error-record files, mine skeletons from source",
    ),
    "show": ("diagnose.commands.show", "open a saved report"),
    "rules": ("diagnose.commands.rules", "list the rules or run their test cases"),
    "apply": ("diagnose.commands.apply", "apply a fix's patch from a saved report"),
    "completion": (
        "diagnose.commands.completion",
        "print a shell completion script (bash, zsh, fish)",
    ),
}

USAGE = """\
diagnose [--debug] SCRIPT [ARGS ...]        (the same as diagnose run SCRIPT [ARGS ...])
       diagnose [--debug] COMMAND [OPTIONS ...]
       diagnose --version | --help"""

EPILOG = (
    "Run 'diagnose COMMAND --help' for a command's options. Shell completion: "
    "'diagnose completion bash|zsh|fish' prints a script to source (see its --help)."
)


def _debug_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--debug", action="store_true", help="show diagnose's own traceback on errors"
    )
    return parent


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``commands`` only those commands' own arguments.

    Every command is listed (its name and one-line help cost nothing), but a command's
    module is imported, and its arguments added, only when it is in ``commands``: the one
    command that runs pays for its own imports and no other's.
    """
    parser = argparse.ArgumentParser(
        prog="diagnose",
        usage=USAGE,
        description=(
            "Run a PyTorch training script and find where its first inf/nan was born, "
            "why, and how to fix it."
        ),
        epilog=EPILOG,
        parents=[_debug_parent()],
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show diagnose's version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="diagnose")
    for name, (module_name, help_text) in COMMANDS.items():
        if commands is not None and name not in commands:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        module = importlib.import_module(module_name)
        sp = sub.add_parser(
            name,
            help=help_text,
            description=module.__doc__,
            parents=[_debug_parent()],
            formatter_class=HelpFormatter,
        )
        module.add_arguments(sp)
        _tidy(sp)
        sp.set_defaults(_module=module_name)
    return parser


def _tidy(parser: argparse.ArgumentParser) -> None:
    """Plain help text all the way down (nested actions too), in the paragraph formatter.

    An argument that takes the rest of the command line (a script's arguments) may be empty:
    argparse would list it among the missing ones next to a missing SCRIPT.
    """
    parser.formatter_class = HelpFormatter
    parser.description = plain(parser.description)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS):
            action.help = plain(action.help)
        if action.nargs == argparse.REMAINDER:
            action.required = False
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _tidy(child)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (after :func:`_insert_run`), or None (top-level help)."""
    for token in argv:
        if token.startswith("-"):
            continue
        return token if token in COMMANDS else None
    return None


def _insert_run(argv: list[str]) -> list[str]:
    """``diagnose [OPTIONS] SCRIPT ...`` means ``diagnose run [OPTIONS] SCRIPT ...``."""
    for token in argv:
        if token in ("-h", "--help", "--version"):
            return argv
        if token.startswith("-"):
            continue
        return argv if token in COMMANDS else ["run", *argv]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list[: _script_index(args_list)]
    try:
        argv_run = _insert_run(args_list)
        command = chosen_command(argv_run)
        parser = build_parser(() if command is None else (command,))
        args = parser.parse_args(argv_run)
        if not getattr(args, "_module", None):
            parser.print_help(sys.stderr)
            return ExitStatus.USAGE
        module = importlib.import_module(args._module)
        status = int(module.main(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"diagnose: error: {one_line(exc)}", file=sys.stderr)
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        print("diagnose: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except SystemExit as exc:  # argparse
        return exc.code if isinstance(exc.code, int) else ExitStatus.USAGE
    except Exception as exc:
        return _internal_error(exc, debug)


def _internal_error(exc: Exception, debug: bool) -> int:
    """A bug in diagnose, not in what it was given: one line saying so, the traceback with
    ``--debug``, and its own exit status so that a script can tell it from a usage error."""
    if debug:
        traceback.print_exc()
    hint = "" if debug else " (rerun with --debug for the traceback)"
    print(f"diagnose: internal error: {type(exc).__name__}: {one_line(exc)}{hint}", file=sys.stderr)
    return ExitStatus.INTERNAL


def _stdout_closed() -> int:
    """The reader of our output went away (``diagnose ... | head``): stop quietly.

    What is still buffered goes to the null device, so that the flush at exit does not
    complain either; no traceback, no error line, exit status 141 as after SIGPIPE.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (tests, embedding)
        pass
    return ExitStatus.STDOUT_CLOSED


def _script_index(argv: list[str]) -> int:
    """Index of the first token that belongs to the user's script (options before it are ours)."""
    seen_positional = 0
    for i, token in enumerate(argv):
        if token.startswith("-"):
            continue
        seen_positional += 1
        if token not in COMMANDS or seen_positional > 1:
            return i
    return len(argv)


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (importlib.metadata costs a start-up)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.exit(message=f"diagnose {_version()}\n")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("diagnose")
    except Exception:
        return "0+checkout"


def entry() -> NoReturn:
    """The console script and ``python -m diagnose``: ``main()``, then the process ends.

    After a traced run the interpreter's own teardown of the modules a run loads (torch,
    sympy, the analysis) takes seconds, after the report was shown and the UI quit: the
    shell would wait that long for nothing. What a normal exit does that matters is done
    here, in its order (the script's non-daemon threads joined, its ``atexit`` handlers run:
    a logger's flush, an experiment tracker's upload, the output flushed), then the process
    ends without the teardown.
    """
    status = main()
    finish(status)


def finish(status: int) -> NoReturn:
    """End the process with ``status`` as a normal exit would, minus the module teardown."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:  # not CPython's threading: let the interpreter exit as usual
        sys.exit(status)
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status & 0xFF)


if __name__ == "__main__":
    entry()
