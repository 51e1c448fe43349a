"""The ``--report PATH`` file: settled before the script runs, written so nothing is lost.

- The path is resolved once, before the script starts: a script that calls ``os.chdir``
  does not move the report, and the messages name the file actually written.
- A folder that does not exist or cannot be written to is a usage error before the run
  (exit 2), not a failure after it; so is a path whose file the report must not replace: the
  script or another input of the run, another user's file (through a link), or any file that
  is not a diagnose report (``userwrite.check_report_target``).
- The path is claimed at once with a report saying the run has not finished, so a report
  left there by an earlier run can never pass for this one's, even if this process is
  killed outright; the run's own report replaces it, atomically, as soon as the run ends.
- A write that fails after the run (a full disk) costs the report, not the diagnosis: one
  line says so and the diagnosis is still shown; the start-of-run report is removed rather
  than left saying the run may still be going. A file the script put at the path while it ran
  (its own output, not a report) is kept: the write is refused the same way.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from diagnose.atomic import is_stream
from diagnose.errors import UsageError
from diagnose.report import Report
from diagnose.userwrite import RunInput, check_report_target


class ReportFile:
    """Where ``--report`` goes; ``failure`` holds why the last write failed, if it did."""

    def __init__(self, given: Path) -> None:
        self.given = given
        self.stream = is_stream(given)  # /dev/stdout, a pipe: written to, never replaced
        self.path = Path(os.path.abspath(given) if self.stream else os.path.realpath(given))
        self.failure: str | None = None
        self._claimed = False  # the file at path is still the start-of-run report
        self.default = False  # the default place (diagnose.reportstore), not --report's

    @classmethod
    def check(cls, given: Path, inputs: Iterable[RunInput] = ()) -> ReportFile:
        """The resolved target, or a UsageError saying in one line why it cannot be written
        (``inputs``: the files the run reads, never to be replaced by its report)."""
        target = cls(given)
        check_report_target(given, inputs)
        path = target.path
        if path.is_dir():
            raise UsageError(f"--report {given}: is a folder, not a file")
        if target.stream:
            if not os.access(path, os.W_OK):
                raise UsageError(f"--report {given}: cannot write to it")
            return target
        folder = path.parent
        if not folder.is_dir():
            raise UsageError(f"--report {given}: no such folder {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"--report {given}: cannot write in the folder {folder}")
        return target

    def claim(self, report: Report) -> None:
        """Write the start-of-run report; a UsageError when even that cannot be written."""
        if self.stream:
            return
        try:
            report.write(self.path)
        except OSError as exc:
            raise UsageError(
                f"--report {self.given}: cannot write {self.path}: {exc.strerror or exc}"
            ) from None
        self._claimed = True

    def checkpoint(self, report: Report) -> None:
        """Write what is known so far, to be replaced by the final report; a stream (which
        cannot be replaced, only appended to) gets the final report alone."""
        if not self.stream:
            self.write(report)

    def write(self, report: Report) -> bool:
        """Write ``report``; False (with ``failure`` set) when the write failed. The
        start-of-run report is then removed: no report is better than one saying the run
        may still be going when it is over."""
        if not self.stream:
            try:  # the script may have put its own file there while it ran
                check_report_target(self.path)
            except UsageError:
                self.failure = (
                    "the file there is no longer this run's report (another file was put "
                    "there during the run); it is kept as it is"
                )
                self._claimed = False  # that file is not ours to remove
                return False
        try:
            report.write(self.path)
        except OSError as exc:
            self.failure = exc.strerror or str(exc)
            if self._claimed:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                self._claimed = False
            return False
        self.failure = None
        self._claimed = False
        return True
