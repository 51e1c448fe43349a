"""One traced training run inside a framework's loop, shared by the framework callbacks.

A callback starts a ``TracedRun`` when training begins and finishes it when training ends,
normally or by an exception. Two things make this more than ``with Tracer():``:

- the framework built the optimizer, scheduler and arguments before training began, so they
  are handed to the tracer's config capture (``observe``) instead of being seen as they are
  constructed;
- under ``diagnose train.py`` a tracer is already running the whole script. A second tracer
  would race the first one to the event and leave the runner's report without it, so the run
  joins the running tracer instead: it hands over the framework's objects and leaves starting,
  stopping and reporting to the runner.

The report a callback writes is analysed like the command line's (symptoms, ranked fixes,
patches against the script in ``sys.argv[0]``) unless ``analyze=False``.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from diagnose.interrupts import Terminated
from diagnose.report import Event, Location, Report

log = logging.getLogger(__name__)

Observer = Callable[[Any], None]
"""Called with the tracer's ``ConfigCapture`` to hand over what the framework built."""


def running_tracer() -> Any:
    """The diagnose Tracer attached to this process right now, or None.

    Found through torch's global optimizer step pre-hooks, where every active Tracer
    registers a bound method for its whole life (its global module hooks come and go with
    its detailed steps): no registry of our own to keep in step.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    from diagnose.tracer import Tracer

    optim = sys.modules.get("torch.optim.optimizer")
    hooks = [
        *getattr(optim, "_global_optimizer_pre_hooks", {}).values(),
        *getattr(torch.nn.modules.module, "_global_forward_hooks", {}).values(),
    ]
    for hook in hooks:
        owner = getattr(hook, "__self__", None)
        if isinstance(owner, Tracer) and getattr(owner, "_active", False):
            return owner
    return None


def capture_of(tracer: Any) -> Any:
    """The ConfigCapture entered beside the tracer, or None when config capture is
    unavailable."""
    return getattr(tracer, "capture", None)


class TracedRun:
    """A tracer owned by a callback, or a running one that the callback joined."""

    def __init__(
        self, tracer_options: dict[str, Any], observe: Observer, optimizers: Iterable[Any] = ()
    ) -> None:
        from diagnose.learning.watch import LearningWatch
        from diagnose.tracer import Tracer
        from diagnose.tracer.beside import CapturedConfig

        outer = running_tracer()
        self.joined = outer is not None
        self.learning: Any = None  # the runner's own watch sees a joined run
        if outer is not None:
            self.tracer = outer
        else:
            self.tracer = Tracer(**{"config": CapturedConfig(), **tracer_options})
            self.tracer.__enter__()
            # beside the tracer, as the runner enters it: a run that stays finite but does
            # not learn is judged from what this watch sees
            self.learning = LearningWatch().__enter__()
        for optimizer in optimizers:
            # built before training began: the run steps by it, not by each backward pass
            optimizer = getattr(optimizer, "optimizer", optimizer)  # accelerate's wrapper
            self.tracer.optimizer_known(optimizer)
            if self.learning is not None:
                self.learning.optimizer_known(optimizer)
        capture = capture_of(self.tracer)
        if capture is not None:
            try:
                observe(capture)
            except Exception as exc:  # the config is evidence, never a reason to stop training
                capture.errors.record("framework callback", exc)

    def finish(self, exc: BaseException | None = None) -> Report:
        """Stop the tracer unless it belongs to the runner; the report of the run so far."""
        if not self.joined:
            info = (type(exc), exc, exc.__traceback__) if exc is not None else (None, None, None)
            self.learning.__exit__(*info)
            self.tracer.__exit__(*info)
        report = self.tracer.report()
        if self.learning is not None:
            report.learning = self.learning.evidence()
        event = getattr(exc, "event", None)
        if event is not None and report.event is None:
            report = report.model_copy(update={"status": "nonfinite", "event": event})
        elif exc is not None and report.event is None and _is_failure(exc):
            report = report.model_copy(
                update={"status": "exception", "event": exception_event(exc)}
            )
        elif isinstance(exc, KeyboardInterrupt | Terminated):
            from diagnose.runner import mark_interrupted

            cause = "SIGTERM" if isinstance(exc, Terminated) else "KeyboardInterrupt"
            mark_interrupted(report, cause, getattr(self.tracer, "step", 0))
        return report


def _is_failure(exc: BaseException) -> bool:
    """Training stopped by an error, not by the user (Ctrl-C) or a clean ``sys.exit``."""
    if isinstance(exc, KeyboardInterrupt):
        return False
    if isinstance(exc, SystemExit):
        return exc.code not in (None, 0)
    return isinstance(exc, Exception)


def exception_event(exc: BaseException) -> Event:
    """The exception that ended training, as the report's event (its frames, innermost last).

    The location is the innermost frame outside site-packages: the user's own training code.
    """
    name = type(exc).__qualname__
    if type(exc).__module__ not in ("builtins", "__main__"):
        name = f"{type(exc).__module__}.{name}"
    message = str(exc).strip() or name
    location = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if "site-packages" not in filename and not filename.startswith("<"):
            location = Location(file=filename, line=line, function=frame.f_code.co_name)
    event = Event(
        kind="exception",
        exception_type=name,
        message=message.splitlines()[0],
        details=message.splitlines()[1:8],
        location=location,
        traceback="".join(traceback.format_exception(exc)),
    )
    script = _training_script(exc)
    if script is not None:
        from diagnose.crash import explain_crash

        event.crash = explain_crash(exc, script)
    return event


def _training_script(exc: BaseException) -> Path | None:
    """The outermost frame of the user's own code: the training script the callback is in."""
    ours = Path(__file__).resolve().parent.parent
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if (
            "site-packages" not in filename
            and not filename.startswith("<")
            and ours not in Path(filename).resolve().parents
        ):
            return Path(filename)
    return None


def analyze(report: Report) -> Report:
    """Symptoms, ranked fixes and patches, as ``diagnose train.py`` adds them.

    Patches are made against ``sys.argv[0]`` when that is a Python file (the script that
    called ``trainer.train()``); without one, fixes come without patches. A failing stage
    leaves a warning in the report, as on the command line.
    """
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    try:
        if script is not None and script.suffix == ".py" and script.is_file():
            from diagnose.runner import RunOptions, enrich

            return enrich(report, script, RunOptions())
        from diagnose.engine import analyze as rank_fixes

        return rank_fixes(report)
    except Exception as exc:
        log.debug("analysis failed", exc_info=True)
        report.warnings.append(f"analysis failed: {type(exc).__name__}: {exc}")
        return report


def write(report: Report, path: Path | None) -> None:
    """Write the callback's report atomically (a reader never sees half of it)."""
    if path is not None:
        report.write(path)


class ReportingCallback:
    """What the framework callbacks share: the options, the traced run and its report.

    Mixed into each framework's own callback base class, which supplies the event methods.
    """

    report_path: Path | None
    analyze: bool
    tracer_options: dict[str, Any]
    run: TracedRun | None
    report: Report | None

    def _setup(
        self, report_path: str | Path | None, analyze: bool, tracer_options: dict[str, Any]
    ) -> None:
        # Resolved now: a training script that changes its working directory later does not
        # move the report. Checked now too: it must not replace the training script or any
        # file that is not a diagnose report (UsageError, before training starts).
        self.report_path = Path(os.path.abspath(report_path)) if report_path is not None else None
        if self.report_path is not None:
            from diagnose.userwrite import RunInput, check_report_target

            script = (
                [RunInput(sys.argv[0], "the running script")] if sys.argv and sys.argv[0] else []
            )
            check_report_target(self.report_path, script, flag="report_path")
        self.analyze = analyze
        self.tracer_options = tracer_options
        self.run = None
        self.report = None

    @property
    def tracer(self) -> Any:
        """The tracer while training runs, else None."""
        return self.run.tracer if self.run is not None else None

    def start(self, observer: Observer, optimizers: Iterable[Any] = ()) -> None:
        """Begin a traced run; a second fit()/train() call starts afresh.

        ``optimizers``: those the framework built before training began.
        """
        self.finish()
        self.report = None
        self.run = TracedRun(self.tracer_options, observer, optimizers)

    def finish(self, exc: BaseException | None = None) -> Report | None:
        """Stop the tracer (if running), build the report and write it; idempotent."""
        run, self.run = self.run, None
        if run is None:
            return self.report
        report = run.finish(exc)
        if self.analyze:
            report = analyze(report)
        self.report = report
        write(report, self.report_path)
        return report
