"""Untrusted text made safe for a terminal, for markup and for JSON: the one place that decides.

Everything diagnose shows comes partly from outside: a script's exception message, a module
name, a path, a log pasted into ``diagnose match``, a report file someone sent, a dataset
record. Any of it can hold bytes a terminal acts on (OSC 52 writes the clipboard, ``ESC c``
resets the terminal, ``ESC [2J`` clears the screen, a backspace or carriage return overwrites
what was shown) or markup a Rich/Textual widget would act on (``[@click=app.quit]``,
``[link=file:///etc/passwd]``). Every renderer, every TUI widget, every notification and every
command's output passes such text through ``safe`` (or ``json_text`` for JSON) on its way out.

What ``safe`` does, in order:

1. Whole escape sequences are removed, never only their ESC byte, so that the styling a
   library puts in its own messages (torch's ``ESC [1m`` bold) leaves no ``[1m`` behind:
   CSI (``ESC [`` or 8-bit U+009B, parameters, intermediates, final byte), OSC (``ESC ]`` or
   U+009D) and the DCS/SOS/PM/APC strings (``ESC P X ^ _`` or U+0090/98/9E/9F) up to their BEL
   or ST terminator, nF sequences (``ESC ( 0``, ``ESC # 8``, ``ESC % G``) and the two-byte
   ones (``ESC c``, ``ESC 7``, ``ESC =``). A string introducer with no terminator loses the
   introducer only; what followed stays as plain text.
2. ``CR LF`` becomes ``LF`` and a lone ``CR`` becomes ``LF``: a carriage return would let text
   overwrite what is already on the line (a progress bar's frames become lines instead).
3. Every other control character (C0 except newline and tab, DEL, C1), the bidirectional
   overrides and isolates (U+202A-U+202E, U+2066-U+2069, which reorder what a reader sees),
   and lone surrogates (undecodable bytes of a file name; a terminal's encoder would fail on
   them) are shown as ``\\xNN`` / ``\\uNNNN`` text, so that a reader sees something was there.

``safe`` knows nothing about markup (the core never imports Rich or Textual): the TUI hands
its widgets ``Text`` objects built from safe text, never parsed as markup (``tui.text``).
"""

from __future__ import annotations

import re

# A string's payload: anything but a control character, so that a scan never runs past the
# next introducer (linear time on any input) and a stray ESC or newline ends the attempt.
_PAYLOAD = r"[^\x00-\x1f\x7f-\x9f]*"
_ST = r"(?:\x07|\x1b\\|\x9c)"  # BEL (xterm's OSC terminator) or ST, 7- or 8-bit
_ESCAPES = re.compile(
    "|".join(
        (
            r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]",  # CSI ... final byte
            rf"(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f]){_PAYLOAD}{_ST}",  # OSC, DCS, SOS, PM, APC
            r"\x1b[ -/]+[0-~]",  # nF: ESC ( 0, ESC # 8, ESC % G, ESC SP F
            r"\x1b[0-~]",  # Fp, Fe, Fs: ESC 7, ESC c, ESC =, and a bare string introducer
        )
    )
)
_NEWLINES = re.compile(r"\r\n?")
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_INVISIBLE = re.compile(r"[\u061c\u200b-\u200f\u2028\u2029\u2060\ufeff]")
# Raw in ``json.dumps(..., ensure_ascii=False)`` and pydantic's JSON, shown by a terminal as
# controls: escaped as \\uNNNN, which JSON reads back as the same character.
_JSON_RAW = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def strip_escapes(text: str) -> str:
    """``text`` without its terminal escape sequences (whole sequences; see the module doc)."""
    return _ESCAPES.sub("", text)


def safe(text: object) -> str:
    """``text`` (any object, ``str()``-ed) safe to write to a terminal; ``None`` is ``""``.

    Newlines and tabs are kept; nothing else can act on a terminal.
    """
    if text is None:
        return ""
    out = _NEWLINES.sub("\n", strip_escapes(str(text)))
    return _UNSAFE.sub(_visible, out)


def one_line(text: object) -> str:
    """``safe`` text on one line: newlines and tabs become spaces (table cells, error lines)."""
    return " ".join(safe(text).replace("\t", " ").split("\n"))


def visible(text: object) -> str:
    """``text`` on one line with every control (newline, tab and ESC too), bidi control and
    lone surrogate shown as ``\\xNN`` / ``\\uNNNN``: for a name (a path, an id), where
    removing an escape sequence would name another file than the one that is there."""
    return _ANY_CONTROL.sub(_visible, "" if text is None else str(text))


def paste_safe(text: object) -> str:
    """``text`` for the clipboard (a patch to paste into an editor or a shell).

    What ``safe`` does -- every escape sequence removed (so ``ESC [201~`` cannot end a shell's
    bracketed paste and run what follows it), ``CR`` made a newline (a line cannot hide behind
    another), other controls, bidi overrides and isolates shown as ``\\xNN`` -- and also
    the invisible marks that reorder or split what a reader sees (LRM, RLM, ALM, zero-width
    characters, U+2028/U+2029 line separators, the BOM), shown as ``\\uNNNN``.
    """
    return _INVISIBLE.sub(_visible, safe(text))


def json_text(dumped: str) -> str:
    """JSON text (from ``json.dumps(ensure_ascii=False)`` or pydantic) safe for a terminal.

    Those encoders escape C0 but leave DEL, C1, the bidi controls and lone surrogates raw;
    outside strings JSON is ASCII, so each of these is inside a string, and ``\\uNNNN`` there
    reads back as the same character: the data round-trips unchanged.
    """
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
