"""A Lightning ``Trainer`` argument set where the Trainer got its others.

A setting the run set is changed where its value came from (``settings.change_setting``). One
it left at its default has no such place; under Lightning it belongs with the Trainer's other
arguments, whose place the capture found (``config.origins["lightning.Trainer"]``, see
``diagnose.capture.origins``):

- ``config-file``: the ``trainer:`` mapping of that YAML file gains the key (or the key's
  line there is rewritten), at the indentation of its other keys; the new text must parse to
  the old data with that one key set;
- ``script``: the ``Trainer(...)`` call on that line gains the keyword argument (or its value
  is replaced);
- ``argv``: the command line gains ``--trainer.KEY=VALUE`` (in place of one it had).
"""

from __future__ import annotations

import json
import re
from typing import Any

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.settings import origin_text, shown_path
from diagnose.patches.source import NoPatch, dotted, with_keyword

ORIGIN = "lightning.Trainer"


def add_trainer_argument(ctx: PatchContext, key: str, value: float | str) -> Patched:
    """``key=value`` given to the run's Lightning Trainer where it got its other arguments
    (replacing the value it had there, if any)."""
    origin = (ctx.report.config.origins or {}).get(ORIGIN)
    python = json.dumps(value) if isinstance(value, str) else repr(value)
    bare = value if isinstance(value, str) else repr(value)  # as YAML and argv spell it
    setting = f"{key}={python}"
    if origin is None:
        raise NoPatch(
            "the run trains under Lightning's Trainer, and where it got its arguments was not "
            f"found: give it {setting}"
        )
    if origin.kind == "argv":
        token = f"--trainer.{key}"
        if token in ctx.report.script.argv:  # `--trainer.KEY VALUE`, two tokens
            raise NoPatch(f"{token} is given on the command line: set it to {bare} there")
        # a --trainer.KEY=... given already is replaced
        argv = [t for t in ctx.report.script.argv if t.partition("=")[0] != token]
        return Patched(
            None,
            f"the Trainer's arguments come from the command line ({origin.token!r}): run with "
            f"{token}={bare}",
            argv=[*argv, f"{token}={bare}"],
        )
    if origin.kind == "script" and origin.line:
        return _in_trainer_call(ctx, origin.line, key, python, setting)
    if origin.kind == "config-file" and origin.file and origin.line:
        path, text = origin_text(ctx, origin, "the Trainer's arguments come from")
        changed = with_mapping_key(text, origin.line, key, bare, value)
        return Patched(
            None,
            f"the Trainer's arguments come from {shown_path(path)}:{origin.line} "
            f"({origin.key}): set {key}: {bare} there",
            file=str(path),
            file_source=changed,
        )
    raise NoPatch(f"the Trainer's arguments come from {origin.kind}: give it {setting}")


def with_mapping_key(text: str, header_line: int, key: str, literal: str, value: Any) -> str:
    """``text`` with ``key: literal`` in the block mapping whose ``name:`` header is on
    ``header_line`` (1-based): on the key's own line when it is there, else first in the
    mapping. NoPatch unless the result parses to the same data with that one key set."""
    import yaml

    from diagnose import yamlsafe

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
    changed = "".join(lines)
    try:
        before, after = yamlsafe.load(text), yamlsafe.load(changed)
    except (yaml.YAMLError, yamlsafe.YAMLLimitError) as exc:
        raise NoPatch(f"the config file does not parse as YAML: {exc}") from None
    if not _only_key_set(before, after, key, value):
        raise NoPatch("setting the key in the config file would change more than that key")
    return changed


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


def _in_trainer_call(ctx: PatchContext, line: int, key: str, literal: str, setting: str) -> Patched:
    script = ctx.script
    calls = [c for c in script.calls("Trainer") if script.line(c) == line]
    if len(calls) != 1:
        raise NoPatch(f"no single Trainer(...) call on line {line}: give the Trainer {setting}")
    call = calls[0]
    if any(arg.star for arg in call.args):
        raise NoPatch(
            f"the Trainer on line {line} takes its arguments unpacked (**): give it {setting}"
        )
    given = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == key]
    edit = ctx.edit()
    if given:
        edit.replace(given[0].value, literal)
    else:
        edit.replace(call, with_keyword(call, key, literal))
    return Patched(
        edit.result(),
        f"gives the Trainer on line {line} ({dotted(call.func) or 'Trainer'}) {setting}",
    )
