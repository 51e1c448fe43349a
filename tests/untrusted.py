"""Hostile text for the tests of every output: strategies, sample attacks and the checks.

What a crafted report, log or dataset record can carry: terminal escape sequences (OSC 52
writes the clipboard, ESC c resets the terminal, CSI 2J clears the screen), 8-bit C1 controls,
backspaces and NULs, and Rich/Textual markup (an action link, a file link).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

MARKUP = "[@click=app.quit]Q[/] [link=file:///etc/passwd]L[/link]"
ATTACKS = (
    "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J",  # OSC 52 to the clipboard, then clear the screen
    "\x1bc",  # full terminal reset
    "\x1b#8",  # DEC screen alignment test: fills the screen with E
    "\x1b(0",  # line-drawing character set
    "\x08\x08\x08",  # backspaces over what was shown
    "\x00",
    "\x9b2J",  # 8-bit CSI
    "\x9d0;title\x9c",  # 8-bit OSC, 8-bit ST
    "\x1b[1m",  # torch's own bold
    "\x1b[0m",
    "\x1bP+q544e\x1b\\",  # DCS (XTGETTCAP)
    "\x1b]8;;file:///etc/passwd\x1b\\",  # OSC 8 hyperlink
    "\r",
    "\x7f",
    "\x85",
    MARKUP,
)
# Fragments glued together, so that sequences also come cut, nested and back to back.
hostile_text = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(ATTACKS)), max_size=4).map(
    "".join
)

# Any C0 control but newline and tab, DEL, any C1 control.
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def examples(n: int) -> settings:
    """``n`` examples, the same on every run (CI stays deterministic), no deadline (a busy box)."""
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


def assert_no_controls(out: str, where: str = "output") -> None:
    """No byte of ``out`` is a control a terminal would act on (newline and tab allowed)."""
    bad = FORBIDDEN.search(out)
    assert bad is None, (
        f"{where}: control {bad.group()!r} at {bad.start()}: {out[max(0, bad.start() - 40) : bad.start() + 40]!r}"
    )


def report_data(t: Callable[[], str], status: str, verified: bool | None = None) -> dict:
    """Report data (for ``Report.model_validate``) whose every string field is a ``t()``."""
    texts = lambda: [t(), t()]  # noqa: E731

    def location() -> dict:
        return {"file": t(), "line": 3, "function": t(), "code": t(), "via": t()}

    def stats() -> dict:
        return {"name": t(), "dtype": t(), "shape": [2, 3], "abs_max": 7.0, "inf": 1}

    event = None
    if status != "clean":
        event = {
            "kind": status,
            "phase": "forward",
            "step": 2,
            "module": t(),
            "module_type": t(),
            "op": t(),
            "location": location(),
            "dtype": t(),
            "message": t(),
            "value": t(),
            "op_inputs": [stats()],
            "details": texts(),
            "exception_type": t(),
            "traceback": t(),
            "op_value": t(),
            "op_input_sources": [
                {"input": 0, "op": t(), "numbers": [1e-8], "location": location()}
            ],
            "call_chain": [
                {"file": t(), "line": 9, "function": t()},
                {"file": t(), "line": 3, "function": t()},
            ],
            "cross_check": {"method": t(), "agreed": False, "first": t(), "detail": t()},
            "accumulation": {"op": t(), "compute_dtype": t(), "dtype_max": 65504.0},
        }
    frame = {
        "index": 0,
        "step": 1,
        "phase": "loss",
        "module": t(),
        "module_type": t(),
        "inputs": [stats()],
        "outputs": [stats()],
        "weights": [stats()],
        "producer": True,
    }

    def fix() -> dict:
        return {
            "id": t(),
            "score": 0.9,
            "title": t(),
            "why": t(),
            "example_patch": t(),
            "patch": t(),
            "rules": texts(),
            "evidence": texts(),
            "patch_note": t(),
            "verify_note": t(),
            "verified": verified,
        }

    return {
        "status": status,
        "script": {"path": t(), "argv": texts()},
        "event": event,
        "frames": [frame],
        "history": [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 2.0}],
        "config": {
            "precision": t(),
            "optimizer": t(),
            "lr": 0.1,
            "transformers": {"precision": t(), "notes": texts()},
            t(): t(),
        },
        "symptoms": [{"id": t(), "confidence": 0.5, "evidence": texts(), "title": t()}],
        "fixes": [fix(), {**fix(), "patch": None}],
        "matches": [
            {
                "record_id": t(),
                "slug": t(),
                "score": 0.8,
                "reason": t(),
                "error_message": t(),
                "solutions": texts(),
                "example_fix": t(),
                "kind": "pattern",
            }
        ],
        "facts": {t(): t()},
        "diagnose_version": t(),
        "warnings": texts(),
        "ranks": [{"rank": 0, "status": "clean", "summary": t(), "primary": True}],
    }


STATUSES = ("nonfinite", "exception", "clean")


@st.composite
def hostile_reports(draw: st.DrawFn) -> dict:
    """Report data with arbitrary hostile text, drawn anew for every string field."""
    status = draw(st.sampled_from(STATUSES))
    verified = draw(st.sampled_from([None, True, False]))
    return report_data(lambda: draw(hostile_text), status, verified)


def every_field(text: str, status: str = "nonfinite") -> dict:
    """The report data with ``text`` whole in every string field (for the markup checks)."""
    return report_data(lambda: text, status)
