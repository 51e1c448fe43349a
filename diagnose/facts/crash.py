"""Facts about a crash the live run explained (``event.crash``), for the crash family's rules.

``crash.family`` is the symptom the exception belongs to; ``crash.explained`` says the run
showed its cause (a module, a site, an edit) rather than the message alone; ``crash.edit``
names the kind of change the run found (layer-size, out-of-place, detach, cast).
"""

from __future__ import annotations

from typing import Any

from diagnose.report import Report

Facts = dict[str, Any]


def crash_facts(report: Report, facts: Facts) -> None:
    event = report.event
    crash = getattr(event, "crash", None) if event is not None else None
    if crash is None:
        return
    facts["crash.family"] = crash.family
    facts["crash.explained"] = bool(
        crash.module or crash.sites or crash.edit or crash.input_shape is not None
    )
    facts["crash.module_type"] = crash.module_type
    facts["crash.edit"] = crash.edit.kind if crash.edit is not None else None
    facts["crash.sites"] = sorted({site.role for site in crash.sites}) or None
