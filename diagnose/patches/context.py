"""What a patch kind gets to work with: the parsed script, the report, and the event's line."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from diagnose.patches.source import Edit, NoPatch, Script
from diagnose.report import Report

# An eps per dtype: big enough to survive the dtype's rounding next to values of order 1e-3,
# small enough not to change a healthy result.
EPS = {"float16": "1e-4", "bfloat16": "1e-6"}
DEFAULT_EPS = "1e-6"


@dataclass
class Patched:
    """A patch kind's answer: the new source and, optionally, a note on how to read it;
    or, for a setting that lives elsewhere, the command line to run instead (``argv``) or
    another file's new text (``file``, ``file_source``)."""

    source: str | None
    note: str | None = None
    argv: list[str] | None = None
    file: str | None = None
    file_source: str | None = None


@dataclass
class PatchContext:
    script: Script
    report: Report
    path: Path
    # every Edit the patcher made: make_patch checks the patch against what they declared
    edits: list[Edit] = field(default_factory=list)

    @property
    def event_line(self) -> int | None:
        """The event's line when it is in this script (not in a library or a sibling module)."""
        event = self.report.event
        loc = event.location if event else None
        if loc is None or not same_file(loc.file, self.path):
            return None
        return loc.line

    @property
    def eps(self) -> str:
        dtype = (self.report.event.dtype if self.report.event else None) or ""
        return EPS.get(dtype.removeprefix("torch."), DEFAULT_EPS)

    def edit(self) -> Edit:
        edit = Edit(self.script)
        self.edits.append(edit)
        return edit

    def ran_at(self, kind: str) -> list[int] | None:
        """The script's lines that called ``kind`` (backward, step, zero_grad) in the run;
        None when the report does not say (an older report, or a capture that did not run)."""
        calls = self.report.config.training_calls
        if calls is None:
            return None
        return sorted(
            {site.line for site in getattr(calls, kind) if same_file(site.file, self.path)}
        )

    def torch_name(self) -> str:
        name = self.script.imports_torch_as()
        if name is None:
            raise NoPatch("the script does not `import torch`, which the patch needs")
        return name

    def nodes_at_event(
        self, kind: type[cst.CSTNode] | tuple, what: str, accept=lambda node: True
    ) -> list:
        """Nodes of ``kind`` on the event's line; else those on the script's only line with
        such nodes; else NoPatch saying where they are."""
        line = self.event_line
        if line is not None:
            found = [n for n in self.script.on_line(line, kind) if accept(n)]
            if found:
                return found
        everywhere = [n for n in self.script.nodes(kind) if accept(n)]
        if everywhere and len({self.script.line(n) for n in everywhere}) == 1:
            return everywhere
        where = self._where()
        if not everywhere:
            raise NoPatch(f"no {what} in the script{where}")
        lines = ", ".join(sorted({str(self.script.line(n)) for n in everywhere}, key=int)[:6])
        raise NoPatch(
            f"{len(everywhere)} places with {what} (lines {lines}){where}: "
            "apply the example to the one that met the bad value"
        )

    def _where(self) -> str:
        event = self.report.event
        loc = event.location if event else None
        if loc is None:
            return " and the event has no line in it"
        if not same_file(loc.file, self.path):
            return f"; the event is in {loc.file}:{loc.line}, not in the script"
        return f" on line {loc.line}, where the event was"


def same_file(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).name == b.name and not Path(a).is_absolute()
