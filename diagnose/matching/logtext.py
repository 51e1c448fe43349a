"""Find the error lines in what a user pastes: one message, a traceback, or a whole log.

Pasted text is messy: ANSI colours, tqdm bars redrawn with ``\\r``, ``[rank0]:`` prefixes from
torchrun, chained tracebacks, torch's C++ frames after the message, warnings and log lines
around it. This module turns it into a short list of :class:`ErrorLine`, most important
first, so the matcher only runs patterns on the lines that can name the error (which also
bounds the regex work on a huge log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_INPUT_CHARS = 2_000_000  # beyond this only the tail is read: errors come last
MAX_LINE_CHARS = 2_000  # a pattern never sees a longer line
MAX_MESSAGE_LINES = 12  # continuation lines kept after an exception line
MAX_LOG_LINES = 40  # warning/log lines kept (the last ones)

# Weights order the roles: the final exception names what stopped the run; the exceptions
# chained before it often are the root cause; loose lines in a log count a little less.
ROLE_WEIGHTS = {
    "final": 1.0,
    "message": 1.0,
    "root cause": 0.99,
    "chained": 0.98,
    "exception": 0.97,
    "warning": 0.96,
    "log": 0.95,
}

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_LINE_PREFIX = re.compile(
    r"^(?:\[(?:rank|default)\d+\]:\s?|\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)\s)"
)
_BAR = re.compile(r"\d+%\|.*\||\|\s*\d+/\d+\s*\[|\d+(?:\.\d+)?(?:it/s|s/it)\]")
_TB_START = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred"
_CPP_FRAMES = re.compile(r"^(?:Exception raised from .*|frame #\d+: .*)$")
_TB_EXC = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::[ \t]*(?P<msg>.*))?$")
# An exception or warning line anywhere in a log: "RuntimeError: ...", "x.py:3: UserWarning: ..."
_LOOSE_EXC = re.compile(
    r"(?:^|(?<=[\s:|\]>]))"
    r"(?P<cls>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning|Interrupt)|Exception|Warning))"
    r":(?:[ \t]+(?P<msg>\S.*)|$)"
)
_LOG_WORDS = re.compile(
    r"\b(?:error|warning|warn|critical|fatal|overflow|nan|inf|non-?finite|skipp(?:ing|ed)"
    r"|exception|assert(?:ion)?|abort(?:ing|ed)?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ErrorLine:
    """One error message found in the input.

    ``text`` is the line as printed (possibly several lines for a multi-line message),
    ``message`` the same without the leading ``ExcClass:``, ``exc_class`` the class as
    printed (``torch.OutOfMemoryError``) or None, ``role`` where it came from.
    """

    text: str
    message: str
    exc_class: str | None
    role: str

    @property
    def weight(self) -> float:
        return ROLE_WEIGHTS[self.role]

    @property
    def first_line(self) -> str:
        return self.text.split("\n", 1)[0]


def clean_lines(text: str) -> list[str]:
    """Strip colours, progress-bar redraws and per-rank prefixes; return the visible lines."""
    if len(text) > MAX_INPUT_CHARS:
        text = text[-MAX_INPUT_CHARS:]
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    lines: list[str] = []
    for raw in text.split("\n"):
        if "\r" in raw:
            segments = [s for s in raw.split("\r") if s.strip()]
            # keep what is not a bar, and the bar's final state (its postfix may say loss=nan)
            kept = [s for s in segments[:-1] if not _BAR.search(s)]
            raw_parts = [*kept, segments[-1]] if segments else [""]
        else:
            raw_parts = [raw]
        for part in raw_parts:
            lines.append(_LINE_PREFIX.sub("", part.rstrip()))
    return lines


def extract_error_lines(text: str) -> list[ErrorLine]:
    """Return the error lines of ``text``, most important first (see :data:`ROLE_WEIGHTS`)."""
    lines = clean_lines(text)
    tracebacks: list[tuple[ErrorLine, str | None]] = []  # (exception, link to the previous)
    loose: list[ErrorLine] = []
    logs: list[ErrorLine] = []
    pending_link: str | None = None
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if _TB_START.match(line):
            exc, i = _read_traceback(lines, i + 1)
            if exc is not None:
                tracebacks.append((exc, pending_link))
            pending_link = None
            continue
        if stripped.startswith(_CHAIN_CAUSE):
            pending_link = "cause"
        elif stripped.startswith(_CHAIN_CONTEXT):
            pending_link = "context"
        elif stripped and not _CPP_FRAMES.match(stripped):
            found = _loose_line(stripped)
            if found is not None:
                (loose if found.role != "log" else logs).append(found)
        i += 1
    result = _order_tracebacks(tracebacks)
    exceptions = [e for e in loose if e.role == "exception"]
    if not tracebacks and exceptions:  # a bare "ExcClass: message" is the final error
        last = exceptions[-1]
        loose = [
            ErrorLine(e.text, e.message, e.exc_class, "final") if e is last else e for e in loose
        ]
    result += loose[-MAX_LOG_LINES:]
    result += logs[-MAX_LOG_LINES:]
    result = _dedupe(result)
    if not result:
        whole = "\n".join(line for line in lines if line.strip())[: MAX_LINE_CHARS * 2].strip()
        if whole:
            result = [ErrorLine(whole, whole, None, "message")]
    return result


def split_class(line: str) -> tuple[str | None, str]:
    """``"torch.OutOfMemoryError: CUDA out of memory"`` -> (``torch.OutOfMemoryError``, message)."""
    m = _LOOSE_EXC.match(line.strip())
    if m is None:
        return None, line.strip()
    return m.group("cls"), (m.group("msg") or "").strip()


def _read_traceback(lines: list[str], i: int) -> tuple[ErrorLine | None, int]:
    """Read frames up to the exception line and its message; return it and the next index."""
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line[0].isspace() or line.startswith(("File ", "^", "~")):
            i += 1
            continue
        break
    if i >= n:
        return None, i
    head = lines[i][:MAX_LINE_CHARS]
    m = _TB_EXC.match(head)
    cls = (
        m.group("cls")
        if m and (m.group("msg") is not None or "." in head or head[:1].isupper())
        else None
    )
    message_lines = [m.group("msg") or "" if m and cls else head]
    i += 1
    while i < n and len(message_lines) <= MAX_MESSAGE_LINES:
        line = lines[i]
        stripped = line.strip()
        if (
            not stripped
            or _TB_START.match(line)
            or stripped.startswith((_CHAIN_CAUSE, _CHAIN_CONTEXT))
            or _CPP_FRAMES.match(stripped)
        ):
            break
        message_lines.append(line[:MAX_LINE_CHARS])
        i += 1
    message = "\n".join(message_lines).strip()
    text = f"{cls}: {message}" if cls and message else (cls or message)
    return ErrorLine(text, message, cls, "final"), i


def _loose_line(line: str) -> ErrorLine | None:
    line = line[:MAX_LINE_CHARS]
    m = _LOOSE_EXC.search(line)
    if m is not None and m.group("msg"):
        cls = m.group("cls")
        role = "warning" if cls.endswith("Warning") else "exception"
        return ErrorLine(line, m.group("msg").strip(), cls, role)
    if _LOG_WORDS.search(line):
        return ErrorLine(line, line, None, "log")
    return None


def _order_tracebacks(tracebacks: list[tuple[ErrorLine, str | None]]) -> list[ErrorLine]:
    """The last traceback's exception first, then the exceptions chained before it."""
    if not tracebacks:
        return []
    ordered: list[ErrorLine] = []
    last_chain_start = len(tracebacks) - 1
    while last_chain_start > 0 and tracebacks[last_chain_start][1] is not None:
        last_chain_start -= 1
    for idx in range(len(tracebacks) - 1, -1, -1):
        exc = tracebacks[idx][0]
        if idx == len(tracebacks) - 1:
            role = "final"
        elif idx == last_chain_start:
            role = "root cause"
        elif idx > last_chain_start:
            role = "chained"
        else:
            role = "exception"
        ordered.append(ErrorLine(exc.text, exc.message, exc.exc_class, role))
    # the root cause of the final chain comes right after the final exception
    root = [e for e in ordered if e.role == "root cause"]
    rest = [e for e in ordered if e.role != "root cause"]
    return rest[:1] + root + rest[1:]


def _dedupe(lines: list[ErrorLine]) -> list[ErrorLine]:
    """The same message printed twice (traceback and log) counts once, at its best role."""
    seen: set[str] = set()
    out: list[ErrorLine] = []
    for line in sorted(lines, key=lambda e: -e.weight):
        key = line.message.strip()
        if key in seen:
            continue
        seen.add(key)
        out.append(line)
    return out
