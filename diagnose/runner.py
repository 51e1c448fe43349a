"""Run an unmodified training script under the tracer and turn what happened into a Report.

The script runs in this process through ``runpy`` exactly as ``python -m cProfile`` runs it:
``sys.argv`` is the script and its arguments, it runs as ``__main__``, its folder is first on
``sys.path`` and the working directory is left alone. Its own output is not touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from diagnose.errors import UsageError
from diagnose.forks import disarmed_in_children
from diagnose.interrupts import HardExitGuard, SignalWatch, Terminated
from diagnose.options import check_run
from diagnose.report import Config, Event, Interruption, Location, MatchRef, Report, ScriptInfo
from diagnose.safetext import strip_escapes
from diagnose.stops import RunStopped, stopped_by

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class RunOptions:
    """How to run and what to add to the evidence; the CLI flags map onto these one to one."""

    frames: int = 21
    backward: bool = True
    sample_every: int = 1
    detail_every: int = 16
    max_steps: int | None = None
    config_file: Path | None = None
    rules: list[Path] = field(default_factory=list)
    datasets: list[Path] = field(default_factory=list)
    verify: bool = False
    verify_top: int = 3
    match_limit: int = 5
    debug: bool = False
    on_tracer: Callable[[Any], None] | None = field(default=None, repr=False, compare=False)
    """Called with the Tracer once it is installed (a distributed rank watches its progress)."""
    before_run: Callable[[Report], None] | None = field(default=None, repr=False, compare=False)
    """Called once the script and config file are known good, just before the script runs,
    with a report of the run as it starts (the CLI claims the ``--report`` path with it)."""
    on_early_sign: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    """Called with one line when a finding about not learning is already sure mid-run (the
    run goes on; it is judged again at its end)."""
    on_hard_exit: Callable[[Report, int], None] | None = field(
        default=None, repr=False, compare=False
    )
    """Called with the run's report and the code when the script calls ``os._exit``; the
    process then ends with that code (the script asked not to unwind)."""

    def __post_init__(self) -> None:
        check_run(
            frames=self.frames,
            sample_every=self.sample_every,
            detail_every=self.detail_every,
            max_steps=self.max_steps,
        )


class StepLimitReached(RunStopped):
    """Raised from an optimizer step hook to end a run cleanly after ``max_steps`` steps.

    A RunStopped (a BaseException), so that a script's own ``except Exception`` cannot
    swallow it.
    """


def check_script(path: str | Path) -> tuple[Path, str]:
    """The script's path and source, or a UsageError saying in one line why it cannot run."""
    script = Path(path)
    if not script.exists():
        raise UsageError(f"{path}: no such script")
    if script.is_dir():
        raise UsageError(f"{path}: is a folder, not a Python script")
    from diagnose.userfiles import SCRIPT_CAP, UserFileError, read_bytes

    try:
        raw = read_bytes(script, SCRIPT_CAP)  # a FIFO or a device is refused, never waited on
    except UserFileError as exc:
        raise UsageError(str(exc)) from None
    if b"\x00" in raw[:4096]:
        raise UsageError(f"{path}: not a Python script (binary file)")
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: not a Python script (not UTF-8 text at byte {exc.start})"
        ) from None
    try:
        compile(source, str(script), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not valid Python: {exc.msg}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not a Python script: {exc}") from None
    return script, source


def diagnose_script(
    path: str | Path, argv: Sequence[str] = (), options: RunOptions | None = None, **kwargs: Any
) -> Report:
    """Run ``path`` with ``argv`` under the tracer and return the full Report.

    Keyword arguments are RunOptions fields (``diagnose_script("train.py", ["--lr", "1"],
    max_steps=20)``). Raises UsageError for a script that cannot run or a bad config file;
    everything the script itself does wrong ends up in the Report.
    """
    options = options or RunOptions(**kwargs)
    return enrich(trace_script(path, argv, options), path, options)


def trace_script(path: str | Path, argv: Sequence[str], options: RunOptions) -> Report:
    """The run's evidence only: event, frames, history and config, before any analysis.

    Split from the analysis so that a distributed run can trace every rank and analyse the
    one combined report once.
    """
    script, source = check_script(path)
    _load_user_config(options.config_file)  # a bad config file is a usage error before the run
    info = ScriptInfo(
        path=str(path), argv=list(argv), sha256=hashlib.sha256(source.encode()).hexdigest()
    )
    if options.before_run is not None:
        options.before_run(unfinished_report(info))
    report = _run(script, list(argv), options, info)
    return _stamp(report, info)


def unfinished_report(info: ScriptInfo) -> Report:
    """The report of a run that has started and not ended: what stands at ``--report`` until
    the run's own replaces it, so that a report left by an earlier run is never taken for
    this one's, even when this process is killed outright."""
    return _stamp(
        Report(
            status="interrupted",
            interruption=Interruption(
                cause="unfinished",
                pid=os.getpid(),
                message=(
                    f"the run did not finish: diagnose (pid {os.getpid()}) is still running it, "
                    "or was killed (SIGKILL, out of memory, a crash) before it could write what "
                    "the run saw"
                ),
            ),
            script=info,
        ),
        info,
    )


def _stamp(report: Report, info: ScriptInfo) -> Report:
    report.script = info.model_copy()
    report.diagnose_version = _version()
    return report


def load_analysis() -> None:
    """Import what the analysis runs, before a Ctrl-C may stop it: an import cut short by a
    KeyboardInterrupt leaves its package half made, and the report of what the run saw,
    written next, would need it (yaml, the rules, the records)."""
    import diagnose.engine
    import diagnose.matcher
    import diagnose.patches
    import diagnose.records
    import diagnose.render
    import diagnose.verify  # noqa: F401


def enrich(report: Report, path: str | Path, options: RunOptions) -> Report:
    """Add the config file, ranked fixes, patches, dataset matches and verification."""
    script = Path(path)
    user_config = _load_user_config(options.config_file)
    if user_config:
        report = _stage(report, "config file", options, lambda r: _merge_config(r, user_config))
    report = _stage(report, "rule engine", options, lambda r: _analyze(r, options))
    report = _stage(report, "patches", options, lambda r: _attach_patches(r, script))
    report = _stage(report, "matcher", options, lambda r: _add_matches(r, options))
    if options.verify and report.fixes and report.interruption is None:
        report = _stage(report, "verification", options, lambda r: _verify(r, options))
    return report


def _run(script: Path, argv: list[str], options: RunOptions, info: ScriptInfo) -> Report:
    from diagnose.learning.watch import LearningWatch
    from diagnose.tracer import NonFiniteDetected, NonFiniteStop, Tracer
    from diagnose.tracer.beside import CapturedConfig

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.resolve().parent))
    tracer = Tracer(
        frames=options.frames,
        backward=options.backward,
        sample_every=options.sample_every,
        detail_every=options.detail_every,
        stop_with=NonFiniteStop,
        config=CapturedConfig(),  # entered beside the tracer's hooks, inside its patches
    )
    learning = LearningWatch(on_early=options.on_early_sign, thread=tracer.thread)
    remove_limit = _install_step_limit(None, tracer)
    outcome: BaseException | None = None
    exit_code: int | None = None  # what the script's own sys.exit asked for
    stopped: str | None = None  # what interrupted the run
    signals = SignalWatch()
    hard_exit = HardExitGuard(lambda code: _on_hard_exit(tracer, code, script, info, options))
    parent = os.getpid()
    in_child = disarmed_in_children(lambda: (tracer.disarm(), signals.disarm()))
    try:
        with signals, hard_exit, tracer, learning, in_child, _quiet_thread_stops():
            # After the tracer's own step hooks: the last step is recorded before the stop.
            remove_limit = _install_step_limit(options.max_steps, tracer)
            if options.on_tracer is not None:
                options.on_tracer(tracer)
            try:
                # the absolute path, as python gives ``__file__``: still right after a chdir
                runpy.run_path(os.path.abspath(script), run_name="__main__")
            finally:
                if os.getpid() != parent:
                    _end_forked_child()
    except (RunStopped, NonFiniteDetected):
        pass  # stopped on purpose; the tracer holds the event, if any
    except SystemExit as exc:
        # A script or framework that caught the stop and exited is stopped, not failing.
        if stopped_by(exc) is None:
            outcome, exit_code = _exit_outcome(exc)
    except (KeyboardInterrupt, Terminated) as exc:
        stopped = signals.cause(exc)
    except Exception as exc:  # the user's script failed: that is a diagnosis, not our error
        if stopped_by(exc) is None:  # unless it is what a handler of the stop raised
            outcome = exc
    finally:
        remove_limit()
        sys.argv, sys.path[:] = saved_argv, saved_path

    report = tracer.report()
    report.learning = learning.evidence()
    report.exit_code = exit_code
    if outcome is not None and report.status != "nonfinite":
        report.status = "exception"
        report.event = _exception_event(outcome, script)
        report.event.crash = _explain_crash(outcome, script)
    if stopped is not None:
        mark_interrupted(report, stopped, tracer.step)
    mark_untrained(report)
    return report


@contextlib.contextmanager
def _quiet_thread_stops() -> Iterator[None]:
    """A stop on purpose raised in a thread the script started (the tracer follows the first
    thread that trains) ends that thread without a traceback: the report tells the event."""
    import threading

    previous = threading.excepthook

    def hook(args: Any) -> None:
        if isinstance(args.exc_value, BaseException) and stopped_by(args.exc_value) is None:
            previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        if threading.excepthook is hook:
            threading.excepthook = previous


def _end_forked_child() -> None:
    """A child the script forked (``os.fork()``) ran to the script's end: it ends as it would
    under python, never reaching diagnose's report. Called while what ended it, if anything,
    is being raised."""
    from diagnose.interrupts import real_exit

    exc = sys.exc_info()[1]
    code = 0
    if isinstance(exc, SystemExit):
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    elif exc is not None:
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = 1
    import atexit

    atexit._run_exitfuncs()
    real_exit(code)


def mark_untrained(report: Report) -> None:
    """A run that ended before its first training step checked nothing: it is "untrained",
    never clean (a mistyped flag that made argparse exit 2, the script's own ``--help``). A
    run that went through backward passes did train, even with no optimizer step (a step
    never taken is the learning watch's finding, not an untrained run)."""
    learned = report.learning is not None and (
        report.learning.backward_passes > 0 or report.learning.optimizer_steps > 0
    )
    never = report.status == "clean" and not report.history and report.interruption is None
    if never and not learned:
        report.status = "untrained"


def mark_interrupted(report: Report, cause: str, step: int) -> None:
    """The run was stopped from outside: say so, and how far it got. What the tracer had
    already found (a non-finite event the script caught and went on from) stays the status."""
    by = (
        "by the script raising KeyboardInterrupt" if cause == "KeyboardInterrupt" else f"by {cause}"
    )
    report.interruption = Interruption(
        cause=cause,
        stopped_at_step=step,
        pid=os.getpid(),  # type: ignore[arg-type]
        message=f"interrupted at step {step} {by}: the report holds what the run saw so far",
    )
    if report.status == "clean":
        report.status = "interrupted"


def _on_hard_exit(
    tracer: Any, code: int, script: Path, info: ScriptInfo, options: RunOptions
) -> None:
    """The script called ``os._exit(code)``: report what the run saw, as at a normal end."""
    if options.on_hard_exit is None:
        return
    report = tracer.report()
    report.exit_code = code
    if code != 0 and report.status != "nonfinite":
        report.status = "exception"
        report.event = Event(
            kind="exception",
            exception_type="SystemExit",
            message=f"the script called os._exit({code})",
            location=_caller_location(script),
        )
    mark_untrained(report)
    options.on_hard_exit(_stamp(report, info), code)


def _caller_location(script: Path) -> Location | None:
    """The innermost frame of the user's own code on the current stack."""
    folder = script.resolve().parent
    frame = sys._getframe(1)
    while frame is not None:
        filename = Path(frame.f_code.co_filename)
        try:
            resolved = filename.resolve()
        except OSError:
            resolved = filename
        if resolved == script.resolve() or (
            folder in resolved.parents
            and "site-packages" not in resolved.parts
            and not _is_ours(str(filename))
        ):
            location = Location(
                file=str(filename), line=frame.f_lineno, function=frame.f_code.co_name
            )
            location.code = _source_line(location.file, location.line)
            return location
        frame = frame.f_back
    return None


def _install_step_limit(max_steps: int | None, tracer: Any) -> Callable[[], None]:
    """Stop the run after ``max_steps`` optimizer steps, or backward passes when the run has
    no torch optimizer (an update written by hand): the steps its history counts."""
    if not max_steps:
        return lambda: None
    from torch.optim.optimizer import register_optimizer_step_post_hook

    steps = 0

    def count(optimizer: Any, args: Any, kwargs: Any) -> None:
        nonlocal steps
        if not tracer.thread.mine():  # another thread's loop, which the tracer does not watch
            return
        steps += 1
        if steps >= max_steps:
            raise StepLimitReached(f"stopped after {steps} optimizer steps (--max-steps)")

    def count_stepless(done: int) -> None:
        if done >= max_steps:
            raise StepLimitReached(f"stopped after {done} backward passes (--max-steps)")

    handle = register_optimizer_step_post_hook(count)
    tracer.on_stepless_step = count_stepless

    def remove() -> None:
        handle.remove()
        tracer.on_stepless_step = None

    return remove


def _exit_outcome(exc: SystemExit) -> tuple[BaseException | None, int]:
    """What a script's own ``sys.exit`` means: the exception it exited while handling (an
    ``except Exception: sys.exit(1)`` around a failing loop), or nothing, with its status.

    An exit by itself, whatever its status, is the script's own verdict on a run the tracer
    watched to its end: a clean run that exited N (the report keeps N). The status is the
    one Python's interpreter would exit with (None: 0, an int: itself, anything else: 1)."""
    code = exc.code
    status = 0 if code is None else code if isinstance(code, int) else 1
    handled = exc.__cause__ or exc.__context__
    if isinstance(handled, Exception) and status != 0:
        return handled, status
    return None, status


def _explain_crash(exc: BaseException, script: Path) -> Any:
    """What the live run shows about the exception (diagnose.crash), while its frames live."""
    from diagnose.crash import explain_crash

    return explain_crash(exc, script)


def _exception_event(exc: BaseException, script: Path) -> Event:
    tb = traceback.TracebackException.from_exception(exc)
    # Drop the frames of diagnose and runpy above the script's own module frame.
    stack = [f for f in tb.stack if not _is_ours(f.filename)]
    tb.stack = traceback.StackSummary.from_list(stack)
    name = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", "__main__"):
        name = f"{module}.{name}"
    # Libraries style their messages (torch's bold): the styling is dropped, the words kept.
    message = strip_escapes(str(exc)).strip() or name
    return Event(
        kind="exception",
        exception_type=name,
        message=message.splitlines()[0] if message else name,
        location=_user_location(exc.__traceback__, script),
        traceback=strip_escapes("".join(tb.format())),
        details=message.splitlines()[1:8],
    )


def _is_ours(filename: str) -> bool:
    if filename.startswith("<frozen runpy"):
        return True
    path = Path(filename)
    return path.name == "runpy.py" or Path(__file__).resolve().parent in path.resolve().parents


def _user_location(tb: TracebackType | None, script: Path) -> Location | None:
    """The deepest traceback frame in the user's own code (the script or its folder)."""
    folder = script.resolve().parent
    best = None
    for frame, line in traceback.walk_tb(tb):
        filename = Path(frame.f_code.co_filename)
        try:
            resolved = filename.resolve()
        except OSError:
            continue
        if resolved == script.resolve() or (
            folder in resolved.parents and "site-packages" not in resolved.parts
        ):
            best = Location(file=str(filename), line=line, function=frame.f_code.co_name)
    if best is not None:
        best.code = _source_line(best.file, best.line)
    return best


def _source_line(file: str, line: int) -> str | None:
    import linecache

    text = linecache.getline(file, line)
    return text.rstrip("\n") or None


def _stage(
    report: Report, name: str, options: RunOptions, work: Callable[[Report], Report]
) -> Report:
    """Run one enrichment stage; a failure there must not cost the user the diagnosis."""
    try:
        return work(report)
    except UsageError:
        raise
    except Exception as exc:
        if options.debug:
            raise
        log.debug("stage %s failed", name, exc_info=True)
        report.warnings.append(f"{name} failed: {type(exc).__name__}: {strip_escapes(str(exc))}")
        return report


def _load_user_config(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    from diagnose.capture import load_config_file

    return load_config_file(path)


def _merge_config(report: Report, user: dict[str, Any]) -> Report:
    from diagnose.capture import merge_config

    merged = merge_config(report.config.model_dump(mode="json"), user)
    report.config = Config.model_validate(merged)
    return report


def _analyze(report: Report, options: RunOptions) -> Report:
    from diagnose.engine import analyze

    return analyze(report, extra_rules=options.rules)


def _attach_patches(report: Report, script: Path) -> Report:
    if not report.fixes:
        return report
    from diagnose.patches import attach_patches

    return attach_patches(report, script)


def _add_matches(report: Report, options: RunOptions) -> Report:
    """Dataset records for the script's exception, or related to a non-finite event's symptoms."""
    event = report.event
    if event is None:
        return report
    from diagnose.records import load_records

    records = list(load_records().records)
    if options.datasets:
        records += list(load_records(*options.datasets).records)
    if event.kind != "exception":
        from diagnose.related import related_records

        report.matches = related_records(
            report.symptoms,
            records,
            limit=options.match_limit,
            libraries=report.config.libraries,
        )
        return report
    from diagnose.matcher import Matcher

    text = event.traceback or f"{event.exception_type}: {event.message}"
    matcher = Matcher(records)
    matches = matcher.match(text, limit=options.match_limit)
    report.warnings += [f"record {r.id}: {why}" for r, why in matcher.problems]
    report.warnings += [
        f"record {r.id}: its messagePattern ran past its time bound and was counted as not matching"
        for r in matcher.timeouts
    ]
    report.matches = [
        MatchRef(
            record_id=m.record.id,
            slug=m.record.slug,
            score=round(float(m.score), 4),
            reason=getattr(m, "reason", None),
            error_message=m.record.errorMessage,
            solutions=list(m.record.solutions or []),
            example_fix=m.record.exampleFix,
            kind=getattr(m, "kind", None),
        )
        for m in matches
    ]
    return report


def _verify(report: Report, options: RunOptions) -> Report:
    from diagnose.verify import verify_fixes
    from diagnose.verify_progress import terminal_progress

    return verify_fixes(report, top=options.verify_top, progress=terminal_progress())


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("diagnose")
    except Exception:
        return None
