"""A setting changed where the run got it: the argv token, the config file's line, the script's.

``diagnose.capture.origins`` recorded where each setting's value came from
(``report.config.origins``); ``change_setting`` gives the same value a new one there:

- ``argv``: the command line with that one token rewritten (``--lr=1e3`` -> ``--lr=1e2``; for
  ``--lr 1e3`` the value token) — a command to run instead, nothing to write;
- ``config-file``: that file's text with the number on that line rewritten;
- ``script``: the script's text with the number on that line rewritten.

The number is rewritten only where the origin's key spells it on its line, so a stale or
crafted origin that does not match the text makes no change.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.capture.origins import (
    DTYPE_ASSIGNMENT,
    HALF_SPELLINGS,
    argv_places,
    file_places,
    switch_spelling,
)
from diagnose.errors import UsageError
from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.source import NoPatch, format_number
from diagnose.trainconfig import Origin
from diagnose.userwrite import read_user_file

ELSEWHERE = ("argv", "config-file")


def origin_of(ctx: PatchContext, setting: str) -> Origin | None:
    """Where the run's value of ``setting`` came from, when the capture found it."""
    return (ctx.report.config.origins or {}).get(setting)


def change_setting(ctx: PatchContext, origin: Origin, new: float, what: str) -> Patched:
    """``what`` (e.g. "lr") set to ``new`` where ``origin`` says its value came from."""
    literal = format_number(new)
    ambiguous = (
        f" ({origin.candidates} places spell this value; this is the one that wins)"
        if (origin.candidates or 1) > 1
        else ""
    )
    if origin.kind == "argv":
        before = list(ctx.report.script.argv)
        argv = _changed_argv(list(before), origin, literal)
        index = origin.index or 0
        return Patched(
            None,
            f"{what} {_shown(origin.value)} comes from the command line's "
            f"{token_words(before, index)}: run with {token_words(argv, index)} instead"
            f"{ambiguous}",
            argv=argv,
        )
    if origin.kind not in ("config-file", "script") or not origin.file or not origin.line:
        raise NoPatch(f"{what} comes from {origin.kind}, which cannot be changed here")
    path, text = origin_text(ctx, origin, f"{what} comes from")
    changed = _changed_line(text, origin, literal)
    note = (
        f"{what} {_shown(origin.value)} comes from {shown_path(path)}:{origin.line} "
        f"({origin.key}): set it to {literal}{ambiguous}"
    )
    if origin.kind == "script":
        return Patched(changed, note)
    return Patched(None, note, file=str(path), file_source=changed)


def _changed_argv(argv: list[str], origin: Origin, literal: str) -> list[str]:
    index = origin.index
    places = {p["index"]: p for p in argv_places(argv)}
    if index is None or index not in places or argv[index] != origin.token:
        raise NoPatch(f"the command line no longer holds {origin.token!r}")
    token = argv[index]
    key, sep, _ = token.partition("=")
    argv[index] = f"{key}={literal}" if sep else literal
    return argv


def token_words(argv: list[str], index: int) -> str:
    """A token as the user typed it, quoted, with its option when it is a separate value
    (``'--lr 1e4'``, where the token is ``1e4``)."""
    token = argv[index]
    flag = argv[index - 1] if index > 0 else ""
    if "=" not in token and not token.startswith("-") and flag.startswith("--"):
        return repr(f"{flag} {token}")
    return repr(token)


def held_token(ctx: PatchContext, origin: Origin) -> tuple[list[str], int]:
    """A copy of the run's command line and the index of the token ``origin`` names, which
    must still be there as the capture saw it (a stale or crafted origin changes nothing)."""
    argv = list(ctx.report.script.argv)
    index = origin.index
    if index is None or not 0 <= index < len(argv) or argv[index] != origin.token:
        raise NoPatch(f"the command line no longer holds {origin.token!r}")
    return argv, index


def origin_text(ctx: PatchContext, origin: Origin, what: str) -> tuple[Path, str]:
    """The path and text of the file an origin names: the script's own text, or a config
    file read as a regular file only (a report may name a FIFO), bounded in size."""
    if origin.kind == "script":
        return ctx.path if not origin.file else Path(origin.file), ctx.script.source
    path = Path(origin.file or "")
    try:
        return path, read_user_file(path).data.decode("utf-8")
    except (UsageError, UnicodeDecodeError) as exc:
        raise NoPatch(f"{what} {origin.file}, which cannot be read: {exc}") from None


def swap_switch(ctx: PatchContext, origin: Origin, new: str, why: str) -> Patched:
    """The switch ``origin.key`` (on) turned into the switch ``new`` where it was turned on:
    ``--fp16`` -> ``--bf16`` on the command line, ``fp16: true`` -> ``bf16: true`` in a file,
    ``fp16=True`` -> ``bf16=True`` in the script."""
    old = origin.key or ""
    if origin.kind == "argv":
        argv, index = held_token(ctx, origin)
        argv[index] = f"--{new}" + argv[index][len(f"--{old}") :]
        return Patched(
            None,
            f"{old} is turned on by the command line's {origin.token!r}: run with "
            f"{argv[index]!r} instead ({why})",
            argv=argv,
        )
    known = origin.kind == "script" or (origin.kind == "config-file" and origin.file)
    if not known or not origin.line:
        raise NoPatch(f"{old} is turned on by {origin.kind}, which cannot be changed here")
    path, text = origin_text(ctx, origin, f"{old} is turned on in")
    lines = text.splitlines(keepends=True)
    line_no = origin.line
    key = switch_spelling(old)
    found = key.findall(lines[line_no - 1]) if 0 < line_no <= len(lines) else []
    if len(found) != 1:
        raise NoPatch(f"{origin.file}:{line_no} no longer turns {old} on")
    lines[line_no - 1] = key.sub(rf"\g<quote>{new}\g<rest>", lines[line_no - 1])
    changed = "".join(lines)
    note = f"{old} is turned on at {shown_path(path)}:{line_no}: turn {new} on instead ({why})"
    if origin.kind == "script":
        return Patched(changed, note)
    return Patched(None, note, file=str(path), file_source=changed)


def swap_dtype(
    ctx: PatchContext, origin: Origin, why: str, spellings: dict[str, str] = HALF_SPELLINGS
) -> Patched:
    """The float16 dtype named where ``origin`` says (``--dtype=float16``, ``dtype =
    'float16'``) named as ``spellings`` says there instead, in the same spelling family
    (bfloat16 by default: float16 -> bfloat16, fp16 -> bf16)."""
    old = str(origin.value or "")
    new = spellings.get(old)
    if new is None:
        raise NoPatch(f"the dtype is spelt {old!r} at its origin, which this fix cannot rename")
    if origin.kind == "argv":
        argv, index = held_token(ctx, origin)
        before = list(argv)
        key, sep, raw = argv[index].partition("=")
        argv[index] = f"{key}={raw.replace(old, new)}" if sep else argv[index].replace(old, new)
        return Patched(
            None,
            f"the dtype {old} comes from the command line's {token_words(before, index)}: "
            f"run with {token_words(argv, index)} instead ({why})",
            argv=argv,
        )
    if origin.kind not in ("config-file", "script") or not origin.line:
        raise NoPatch(f"the dtype comes from {origin.kind}, which cannot be changed here")
    path, text = origin_text(ctx, origin, "the dtype comes from")
    lines = text.splitlines(keepends=True)
    line_no = origin.line
    line = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
    found = [m for m in DTYPE_ASSIGNMENT.finditer(line) if m.group("key").lower() == origin.key]
    if len(found) != 1 or found[0].group("value") != old:
        raise NoPatch(f"{shown_path(path)}:{line_no} no longer names the dtype {old}")
    start, end = found[0].span("value")
    lines[line_no - 1] = line[:start] + new + line[end:]
    changed = "".join(lines)
    note = f"the dtype {old} is chosen at {shown_path(path)}:{line_no}: choose {new} ({why})"
    if origin.kind == "script":
        return Patched(changed, note)
    return Patched(None, note, file=str(path), file_source=changed)


def _changed_line(text: str, origin: Origin, literal: str) -> str:
    lines = text.splitlines(keepends=True)
    line_no = origin.line or 0
    if not 0 < line_no <= len(lines):
        raise NoPatch(f"{origin.file} has no line {line_no}")
    line = lines[line_no - 1]
    for place in file_places(line):
        if place["key"] == origin.key and place["text"] == origin.text:
            start = place["col"]
            lines[line_no - 1] = line[:start] + literal + line[start + len(place["text"]) :]
            return "".join(lines)
    raise NoPatch(f"{origin.file}:{line_no} no longer sets {origin.key} to {origin.text}")


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it (as a user types it)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)


def _shown(value: object) -> str:
    from diagnose.formatting import num

    return num(value) if isinstance(value, (int, float)) else str(value)
