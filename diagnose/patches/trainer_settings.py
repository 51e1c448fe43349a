"""A framework's argument set where the framework object got its others.

A setting the run set is changed where its value came from (``settings.change_setting``). One
it left at its default has no such place; it belongs with the object's other arguments, whose
place the capture found (``config.origins["lightning.Trainer"]`` for a Lightning ``Trainer``,
``config.origins["transformers.TrainingArguments"]`` for transformers' ``TrainingArguments``;
see ``diagnose.capture.origins``):

- ``config-file``: the mapping of that YAML or JSON file gains the key (or the key's value
  there is rewritten): a Lightning config's ``trainer:`` mapping, at the indentation of its
  other keys; the top-level mapping an ``HfArgumentParser`` reads. The new text must parse to
  the old data with that one key set;
- ``script``: the ``Trainer(...)`` / ``TrainingArguments(...)`` call on that line gains the
  keyword argument (or its value is replaced);
- ``argv``: the command line gains ``--trainer.KEY=VALUE`` / ``--KEY=VALUE`` (in place of one
  it had).
"""

from __future__ import annotations

import json
import re
from typing import Any

from diagnose.capture.origins import LIGHTNING_TRAINER, TRAINING_ARGUMENTS, ArgumentsPlace
from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.settings import origin_text, shown_path
from diagnose.patches.source import NoPatch, dotted, with_keyword

ORIGIN = LIGHTNING_TRAINER.origin


def add_trainer_argument(ctx: PatchContext, key: str, value: float | str) -> Patched:
    """``key=value`` given to the run's Lightning Trainer where it got its other arguments."""
    return add_framework_argument(ctx, LIGHTNING_TRAINER, "Lightning's Trainer", key, value)


def add_training_argument(ctx: PatchContext, key: str, value: float | str) -> Patched:
    """``key=value`` given to the run's TrainingArguments where they got their others."""
    return add_framework_argument(ctx, TRAINING_ARGUMENTS, "transformers' Trainer", key, value)


def add_framework_argument(
    ctx: PatchContext, place: ArgumentsPlace, framework: str, key: str, value: float | str
) -> Patched:
    """``key=value`` given to a framework object where it got its other arguments (replacing
    the value it had there, if any)."""
    origin = (ctx.report.config.origins or {}).get(place.origin)
    python = json.dumps(value) if isinstance(value, str) else repr(value)
    bare = value if isinstance(value, str) else repr(value)  # as YAML and argv spell it
    setting = f"{key}={python}"
    name = place.call or (origin.key if origin is not None else None) or "framework"
    what = f"the {name}'s arguments" if place.call else f"the {name}"
    if origin is None:
        raise NoPatch(
            f"the run trains under {framework}, and where it got its arguments was not "
            f"found: give it {setting}"
        )
    if origin.kind == "argv":
        token = f"{place.prefix}{key}"
        argv = list(ctx.report.script.argv)
        if token in argv:  # `--KEY VALUE`, two tokens: the value token is replaced
            at = argv.index(token) + 1
            if at >= len(argv) or argv[at].startswith("--"):
                raise NoPatch(f"{token} is given on the command line: set it to {bare} there")
            argv[at] = bare
            return Patched(
                None,
                f"{what} come from the command line: run with {token} {bare}",
                argv=argv,
            )
        # a --KEY=... given already is replaced
        argv = [t for t in argv if t.partition("=")[0] != token]
        return Patched(
            None,
            f"{what} come from the command line ({origin.token!r}): run with {token}={bare}",
            argv=[*argv, f"{token}={bare}"],
        )
    if origin.kind == "script" and origin.line:
        return _in_call(ctx, origin.line, name, key, python, setting)
    if origin.kind == "config-file" and origin.file and origin.line:
        path, text = origin_text(ctx, origin, f"{what} come from")
        if place.section is None:
            changed = with_top_level_key(text, key, bare, value)
            where = f"{shown_path(path)}"
        else:
            changed = with_mapping_key(text, origin.line, key, bare, value)
            where = f"{shown_path(path)}:{origin.line} ({origin.key})"
        return Patched(
            None,
            f"{what} come from {where}: set {key}: {bare} there",
            file=str(path),
            file_source=changed,
        )
    raise NoPatch(f"{what} come from {origin.kind}: give it {setting}")


def with_top_level_key(text: str, key: str, literal: str, value: Any) -> str:
    """``text`` (a JSON object or a YAML block mapping, as ``HfArgumentParser`` reads them)
    with ``key`` set to ``value`` at the top level: the key's value rewritten where it is
    there, else a first key inserted. NoPatch unless the result parses to the same data with
    that one key set."""
    if text.lstrip().startswith("{"):
        changed = _json_with_key(text, key, value)
    else:
        changed = _yaml_with_top_key(text, key, literal)
    return _checked(text, changed, key, value)


def _checked(text: str, changed: str, key: str, value: Any) -> str:
    """``changed``, when it parses to ``text``'s data with that one key set; else NoPatch."""
    import yaml

    from diagnose import yamlsafe

    try:
        before, after = yamlsafe.load(text), yamlsafe.load(changed)
    except (yaml.YAMLError, yamlsafe.YAMLLimitError) as exc:
        raise NoPatch(f"the config file does not parse: {exc}") from None
    if not _only_key_set(before, after, key, value):
        raise NoPatch("setting the key in the config file would change more than that key")
    return changed


def _json_with_key(text: str, key: str, value: Any) -> str:
    spelt = json.dumps(value)
    quoted = json.dumps(key)
    given = list(re.finditer(rf"{re.escape(quoted)}(\s*:\s*)([^,{{}}\[\]\s]+)", text))
    if len(given) == 1:
        match = given[0]
        return text[: match.start(2)] + spelt + text[match.end(2) :]
    if given:
        raise NoPatch(f"{quoted} is spelt more than once in the config file")
    opening = text.index("{")
    head, rest = text[: opening + 1], text[opening + 1 :]
    first = re.match(r"(\s*)(\S)", rest)
    if first is None or first.group(2) == "}":
        return f"{head}{quoted}: {spelt}{rest}"
    gap = first.group(1)  # the newline and indentation before the first key, for the new one
    return f"{head}{gap}{quoted}: {spelt},{gap}{rest[len(gap) :]}"


def _yaml_with_top_key(text: str, key: str, literal: str) -> str:
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    for index, line in enumerate(lines):
        if re.match(rf"{re.escape(key)} *:", line):
            lines[index] = f"{key}: {literal}{newline}"
            return "".join(lines)
    start = 0
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "%")) and stripped != "---":
            break
        start = index + 1  # after the file's leading comments and directives
    lines.insert(start, f"{key}: {literal}{newline}")
    return "".join(lines)


def with_mapping_key(text: str, header_line: int, key: str, literal: str, value: Any) -> str:
    """``text`` with ``key: literal`` in the block mapping whose ``name:`` header is on
    ``header_line`` (1-based): on the key's own line when it is there, else first in the
    mapping. NoPatch unless the result parses to the same data with that one key set."""

    lines = text.splitlines(keepends=True)
    if not 0 < header_line <= len(lines):
        raise NoPatch(f"line {header_line} is not in the config file")
    header = lines[header_line - 1]
    match = re.fullmatch(
        r"( *)([\w.-]+|'[^']*'|\"[^\"]*\") *:(?: +&[\w-]+)? *(#.*)?", header.rstrip("\r\n")
    )
    if match is None:
        raise NoPatch(f"line {header_line} of the config file is not a block mapping's header")
    base = len(match.group(1))
    newline = header[len(header.rstrip("\r\n")) :] or "\n"
    indent, existing = None, None
    for index in range(header_line, len(lines)):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(lines[index]) - len(lines[index].lstrip(" "))
        if depth <= base:
            break
        indent = depth if indent is None else indent
        if depth == indent and re.match(rf"{re.escape(key)} *:", stripped):
            existing = index
    if indent is None:
        raise NoPatch(f"the mapping on line {header_line} of the config file is empty")
    new_line = f"{' ' * indent}{key}: {literal}{newline}"
    if existing is not None:
        lines[existing] = new_line
    else:
        lines.insert(header_line, new_line)
    return _checked(text, "".join(lines), key, value)


def _only_key_set(before: Any, after: Any, key: str, value: Any) -> bool:
    """True when ``after`` is ``before`` with one mapping's ``key`` set to ``value``."""
    if isinstance(before, dict) and isinstance(after, dict):
        set_here = set(after) == set(before) | {key} and after[key] == value
        if set_here and all(after[k] == before[k] for k in before if k != key):
            return True
        if set(after) != set(before):
            return False
        differing = [k for k in before if before[k] != after[k]]
        return len(differing) == 1 and _only_key_set(
            before[differing[0]], after[differing[0]], key, value
        )
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        differing = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        return len(differing) == 1 and _only_key_set(
            before[differing[0]], after[differing[0]], key, value
        )
    return False


def _in_call(
    ctx: PatchContext, line: int, name: str, key: str, literal: str, setting: str
) -> Patched:
    script = ctx.script
    calls = [c for c in script.calls(name) if script.line(c) == line]
    if len(calls) != 1:
        raise NoPatch(f"no single {name}(...) call on line {line}: give it {setting}")
    call = calls[0]
    if any(arg.star for arg in call.args):
        raise NoPatch(
            f"the {name} on line {line} takes its arguments unpacked (**): give it {setting}"
        )
    given = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == key]
    edit = ctx.edit()
    if given:
        edit.replace(given[0].value, literal)
    else:
        edit.replace(call, with_keyword(call, key, literal))
    return Patched(
        edit.result(),
        f"gives the {name} on line {line} ({dotted(call.func) or name}) {setting}",
    )
