"""Run a training script under the tracer: ``diagnose [OPTIONS] SCRIPT [SCRIPT_ARGS...]``.

Everything after SCRIPT goes to the script untouched, as with ``python -m cProfile``.
Exit status: 0 a clean run that trained, 1 a problem was diagnosed (or no training step ran),
2 a usage or input error, 130 / 143 a run stopped by Ctrl-C / SIGTERM (its report holds what
it saw so far); a script that exited non-zero on its own with nothing diagnosed: its status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.commands.output import UI, add_format_argument, choose_format, show
from diagnose.commands.report_file import ReportFile
from diagnose.errors import ExitStatus, UsageError
from diagnose.options import MAX_NPROC, OptionError, at_least_one, flag
from diagnose.safetext import one_line
from diagnose.userwrite import RunInput

if TYPE_CHECKING:
    from diagnose.runner import RunOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="write the JSON report to PATH (default: a new file in $DIAGNOSE_REPORT_DIR, "
        "else ~/.local/state/diagnose/reports, which `diagnose show` opens)",
    )
    add_format_argument(parser)
    parser.add_argument(
        "--dataset",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="add error-record files to the built-in dataset (repeatable)",
    )
    parser.add_argument(
        "--rules",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="add rule files or folders; same id overrides a built-in rule",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="YAML/JSON training config facts the run cannot see",
    )
    parser.add_argument(
        "--frames",
        type=int,
        default=21,
        metavar="N",
        help="module calls kept before the event (default 21)",
    )
    parser.add_argument(
        "--no-backward",
        action="store_true",
        help="do not check gradients flowing through modules (faster)",
    )
    parser.add_argument(
        "--sample-every",
        type=int,
        default=1,
        metavar="K",
        help="check every K-th optimizer step in full (default 1: all)",
    )
    parser.add_argument(
        "--detail-every",
        type=int,
        default=16,
        metavar="K",
        help="hook every module call on every K-th step and after warning "
        "signs; the steps between check the model's outputs, loss, "
        "gradients and weights, and replay the step in detail at an "
        "event (default 16; 1: every step in detail)",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        metavar="N",
        help="stop the script cleanly after N optimizer steps (backward passes without torch.optim)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="re-run the script with each top fix applied to a temporary copy",
    )
    parser.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help="run the script on N local processes with torchrun's launcher "
        "(DDP/FSDP); one report names the rank where it began",
    )
    parser.add_argument("script", metavar="SCRIPT", help="the training script to run")
    parser.add_argument(
        "script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script"
    )


def main(args: argparse.Namespace) -> int:
    options = _options(args)
    for path in [*args.dataset, *args.rules]:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
    from diagnose.distributed.context import DistContext

    launched = args.nproc is not None and args.nproc > 1
    ctx = None if launched else DistContext.from_env()
    target = (
        ReportFile.check(args.report, run_inputs(args))
        if args.report
        else _default_target(args, None if ctx is None else ctx.rank)
    )
    if target is not None:
        options.before_run = target.claim
    if launched:
        return _run_launched(args, options, target, choose_format(args.format))
    if ctx is not None:  # one rank of a torchrun launch: the ranks share the terminal
        return _run_rank(ctx, args, options, target, choose_format(args.format, ui=False))
    return _run_here(args, options, target, choose_format(args.format))


def run_inputs(args: argparse.Namespace) -> list[RunInput]:
    """The files the run reads or may write, which its report must never replace: the
    script, the ``--config``, ``--dataset`` and ``--rules`` files, and every file the
    script's arguments name (``data.csv``, ``--out=model.pt``, existing or not)."""
    named = [RunInput(args.script, "the script of this run")]
    if args.config is not None:
        named.append(RunInput(args.config, "the run's --config file"))
    named += [RunInput(path, "a --dataset file of this run") for path in args.dataset]
    named += [RunInput(path, "a --rules file of this run") for path in args.rules]
    for arg in args.script_args:  # existing or not: the script may be about to write it
        for value in {arg, arg.partition("=")[2]} - {""}:
            named.append(RunInput(value, "a file named in the script's arguments"))
    return named


def _default_target(args: argparse.Namespace, rank: int | None) -> ReportFile | None:
    """Where the report is kept without ``--report`` (``diagnose.reportstore``); None, said
    in one line, when that folder cannot be written: the run goes on without a copy."""
    from diagnose.reportstore import StoreError, new_report_path

    try:
        target = ReportFile.check(new_report_path(args.script, rank), run_inputs(args))
    except (StoreError, UsageError) as exc:
        _say(f"not keeping this run's report: {exc}")
        return None
    target.default = True
    return target


def _options(args: argparse.Namespace) -> RunOptions:
    """The run's options from the flags; a value out of bounds is a usage error that names
    the flag, in the words ``Tracer(...)`` and ``RunOptions(...)`` use for it."""
    from diagnose.runner import RunOptions

    try:
        if args.nproc is not None:
            at_least_one("nproc", args.nproc, at_most=MAX_NPROC)
        return RunOptions(
            frames=args.frames,
            backward=not args.no_backward,
            sample_every=args.sample_every,
            detail_every=args.detail_every,
            max_steps=args.max_steps,
            config_file=args.config,
            rules=args.rules,
            datasets=args.dataset,
            verify=args.verify,
            debug=args.debug,
        )
    except OptionError as exc:
        raise UsageError(exc.says(flag(exc.name))) from None


def _run_launched(args: argparse.Namespace, options, target: ReportFile | None, fmt: str) -> int:
    """``--nproc N``: torchrun's launcher runs the ranks; the combined report is shown here."""
    from diagnose.runner import check_script, unfinished_report

    if target is not None:
        from diagnose.report import ScriptInfo

        check_script(args.script)
        target.claim(unfinished_report(ScriptInfo(path=args.script, argv=list(args.script_args))))
    return _emit(_launch(args, options), target, fmt, sys.stdout)


def _run_rank(ctx, args: argparse.Namespace, options, target: ReportFile | None, fmt: str) -> int:
    """One rank of a launch; only the rank that combines the evidence writes ``--report``."""
    from diagnose.distributed.rank import run_rank

    stdout = sys.stdout
    if not ctx.combines:
        options.before_run = None
    output = ScriptOutput(fmt)
    with output:
        return run_rank(
            ctx,
            args.script,
            args.script_args,
            options,
            lambda report: output.restore() or _emit(report, target, fmt, stdout),
            report_path=target.path if target is not None and ctx.combines else None,
        )


def _run_here(args: argparse.Namespace, options, target: ReportFile | None, fmt: str) -> int:
    """The script in this process: traced, analysed, written and shown."""
    from diagnose.runner import trace_script

    stdout = sys.stdout
    script = Path(os.path.abspath(args.script))  # patched where it is, even after a chdir
    output = ScriptOutput(fmt)
    options.on_hard_exit = lambda raw, code: (
        output.restore() or _hard_exit(raw, code, script, options, target, fmt, stdout)
    )
    options.on_early_sign = lambda line: _say(f"{args.script}: {line} (the run goes on)")
    with output:
        raw = trace_script(args.script, args.script_args, options)
        report, stopped = analyse(raw, script, options, target)
    status = _emit(report, target, fmt, stdout, analysis_stopped=stopped)
    if status == ExitStatus.DIAGNOSED:  # under torchrun, its failure table names the diagnosis
        from diagnose.distributed.elastic import record_diagnosis

        record_diagnosis(None, report, target.path if target is not None else None)
    return status


def _say(line: str) -> None:
    """One line of diagnose's own on stderr while the script runs (its output untouched)."""
    from diagnose.safetext import one_line

    print(f"diagnose: {one_line(line)}", file=sys.stderr, flush=True)


class ScriptOutput:
    """With JSON on stdout, everything the script writes there goes to stderr instead: its
    prints, and at the OS level file descriptor 1 itself (``os.write(1, ...)``, a C library's
    output, the subprocesses it starts), which is a copy of stderr's until ``restore``, so
    that stdout holds the report's JSON alone."""

    def __init__(self, fmt: str) -> None:
        self._on = fmt == "json"
        self._saved_fd: int | None = None
        self._redirect: contextlib.AbstractContextManager | None = None

    def __enter__(self) -> ScriptOutput:
        if not self._on:
            return self
        self._redirect = contextlib.redirect_stdout(sys.stderr)
        self._redirect.__enter__()
        with contextlib.suppress(OSError, ValueError):
            if sys.__stdout__ is not None:
                sys.__stdout__.flush()
            saved = os.dup(1)
            try:
                os.dup2(2, 1)
            except OSError:
                os.close(saved)
                raise
            self._saved_fd = saved
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        """Give stdout back to diagnose (the script's output so far flushed where it went)."""
        for stream in (sys.stdout, sys.__stdout__, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if self._saved_fd is not None:
            with contextlib.suppress(OSError):
                os.dup2(self._saved_fd, 1)
            with contextlib.suppress(OSError):
                os.close(self._saved_fd)
            self._saved_fd = None
        redirect, self._redirect = self._redirect, None
        if redirect is not None:
            redirect.__exit__(None, None, None)


def analyse(raw, script: Path, options, target: ReportFile | None):
    """The full analysis of a traced run, with the run's evidence written first.

    The evidence goes to ``--report`` as soon as the run ends, so that a Ctrl-C during the
    analysis (or a long ``--verify``) still leaves what the run saw; such a Ctrl-C stops the
    analysis and the evidence alone is shown.
    """
    from diagnose.interrupts import Terminated
    from diagnose.runner import enrich, load_analysis

    load_analysis()
    try:  # a Ctrl-C while the evidence is being written (its folder synced) stops here too
        if target is not None:
            target.checkpoint(raw)
        return enrich(raw, script, options), False
    except KeyboardInterrupt:
        raw.warnings.append("analysis interrupted (Ctrl-C): no symptoms, fixes or matches")
        return raw, True
    except Terminated as exc:  # raised during --verify, its re-runs ended
        raw.warnings.append(f"analysis interrupted ({exc}): no symptoms, fixes or matches")
        return raw, str(exc)


def _hard_exit(
    raw, code: int, script: Path, options, target: ReportFile | None, fmt: str, stdout
) -> None:
    """The script called ``os._exit``: analyse (no verification), write, show, then it exits."""
    options.verify = False
    print(
        f"diagnose: the script called os._exit({code}); what the run saw follows", file=sys.stderr
    )
    report, _ = analyse(raw, script, options, target)
    _emit(report, target, "text" if fmt == UI else fmt, stdout)


def _emit(
    report, target: ReportFile | None, fmt: str, stdout, analysis_stopped: bool | str = False
) -> int:
    """Write ``--report``, show the report on the real stdout, and return the exit status.

    A report that cannot be written is said in one line; the diagnosis is shown all the same.
    The line comes after what is shown, so that it is the last thing on the terminal once
    the UI has quit.
    """
    written = target is not None and target.write(report)
    if target is not None and target.default:
        from diagnose.reportstore import prune

        prune()
    try:
        with contextlib.redirect_stdout(stdout):
            show(report, fmt, report_path=target.path if written and target else None)
    finally:
        if target is not None:
            _said_where(target, written)
    return exit_status(report, analysis_stopped)


def _said_where(target: ReportFile, written: bool) -> None:
    """One line on stderr: where the report is, or why it is not there."""
    path = one_line(target.path)
    if not written:
        _say(f"could not write the report to {path}: {one_line(target.failure)}")
    elif target.default:
        _say(f"report kept in {path} (`diagnose show` opens the newest)")
    else:
        _say(f"report written to {path}")


def exit_status(report, analysis_stopped: bool | str = False) -> int:
    """0 a clean run that trained, 1 diagnosed; a run (or its analysis) stopped by SIGTERM 143,
    by SIGHUP 129, by Ctrl-C 130, as a shell reports a command ended by that signal.

    Where nothing was diagnosed (a clean run, or one that never trained) a script that
    exited non-zero on its own gives its own status, so that a mistyped flag fails a CI job
    or a sweep as it would without diagnose; an untrained run that exited 0 is
    ``ExitStatus.UNTRAINED``, never clean."""
    stopped = report.interruption
    cause = stopped.cause if stopped is not None else analysis_stopped
    if cause == "SIGTERM":
        return ExitStatus.TERMINATED
    if cause == "SIGHUP":
        return ExitStatus.HANGUP
    if (stopped is not None and stopped.cause != "unfinished") or analysis_stopped:
        return ExitStatus.INTERRUPTED
    if report.status in ("clean", "untrained") and report.exit_code:
        return report.exit_code
    if report.status == "untrained":
        return ExitStatus.UNTRAINED
    return ExitStatus.CLEAN if report.status == "clean" else ExitStatus.DIAGNOSED


def _launch(args: argparse.Namespace, options):
    """``--nproc N``: every rank gets the tracing options; analysis happens here, once."""
    from diagnose.distributed.launch import launch

    rank_args = [
        "--frames",
        str(args.frames),
        "--sample-every",
        str(args.sample_every),
        "--detail-every",
        str(args.detail_every),
    ]
    if args.no_backward:
        rank_args.append("--no-backward")
    if args.max_steps is not None:
        rank_args += ["--max-steps", str(args.max_steps)]
    if args.debug:
        rank_args.append("--debug")
    return launch(args.script, args.script_args, args.nproc, options, rank_args)
