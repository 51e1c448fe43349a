"""A crashing script explained from the live run: which family its exception belongs to, and
what the frames, modules and tensors at the crash show about its cause.

``explain_crash(exc, script)`` is called by the runner while the exception's frames are still
alive. Each family is a module with ``matches(message)`` and ``explain(scene) -> Crash``; the
first family whose message matches explains it. Where the run does not show the cause, the
Crash says what was checked (``checked``) and carries no edit, so no patch is offered.
"""

from __future__ import annotations

import logging
from pathlib import Path

from diagnose.report import Crash

log = logging.getLogger(__name__)


def _families() -> list:
    from diagnose.crash import cut, dtypes, indices, inplace, shapes, twice

    return [shapes, inplace, twice, cut, dtypes, indices]


def explain_crash(exc: BaseException, script: Path) -> Crash | None:
    """What the run shows about ``exc``; None for an exception of no known family."""
    from diagnose.crash.live import Scene

    scene = Scene.of(exc, script)
    message = scene.message
    for family in _families():
        if not family.matches(message):
            continue
        try:
            return family.explain(scene)
        except Exception:  # the analysis must never cost the user the report
            log.debug("explaining %s failed", type(exc).__name__, exc_info=True)
            return Crash(
                family=family.FAMILY,
                chain=scene.chain(),
                checked=["the live analysis of this exception failed; the message alone is read"],
            )
    return None
