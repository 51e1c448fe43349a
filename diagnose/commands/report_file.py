"""The ``--report PATH`` file: settled before the script runs, written so nothing is lost.

- The path is resolved once, before the script starts: a script that calls ``os.chdir``
  does not move the report, and the messages name the file actually written.
- A folder that does not exist or cannot be written to is a usage error before the run
  (exit 2), not a failure after it.
- The path is claimed at once with a report saying the run has not finished, so a report
  left there by an earlier run can never pass for this one's, even if this process is
  killed outright; the run's own report replaces it, atomically, as soon as the run ends.
- A write that fails after the run (a full disk) costs the report, not the diagnosis: one
  line says so and the diagnosis is still shown; the start-of-run report is removed rather
  than left saying the run may still be going.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from diagnose.atomic import is_stream
from diagnose.errors import UsageError
from diagnose.report import Report


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
    def check(cls, given: Path) -> ReportFile:
        """The resolved target, or a UsageError saying in one line why it cannot be written."""
        target = cls(given)
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
