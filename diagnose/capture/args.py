"""The script's own argparse values, and which of them were given on the command line.

``ArgumentParser.parse_known_args`` (which ``parse_args`` calls) is wrapped; the outermost call
that parsed the real command line wins (nested calls by sub-parsers are skipped). Whether an
option was given is read from the argument strings themselves (exact option, ``--opt=value``,
an unambiguous ``--prefix``, a short ``-xVALUE``), never by parsing a second time: parsing
can have side effects (``type=`` callables, ``--version`` exits).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.values import UNSAFE, json_safe


class ArgparseWatcher:
    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._depth = 0
        self._calls = 0
        self._record: dict[str, Any] | None = None
        self._record_from_argv = False

    def install(self, patcher: Patcher) -> None:
        patcher.wrap(
            argparse.ArgumentParser,
            "parse_known_args",
            before=self._enter,
            after=self._parsed,
            on_raise=self._raised,
            label="ArgumentParser.parse_known_args",
        )

    def _enter(self, *args: Any, **kwargs: Any) -> None:
        self._depth += 1

    def _raised(self, *args: Any, **kwargs: Any) -> None:
        self._depth -= 1

    def _parsed(
        self, result: Any, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any
    ) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        self._calls += 1
        strings = args[0] if args else kwargs.get("args")
        from_argv = strings is None
        if self._record is not None and (self._record_from_argv or not from_argv):
            return
        strings = list(sys.argv[1:] if strings is None else strings)
        namespace = result[0] if isinstance(result, tuple) else result
        self._record = _describe(parser, namespace, strings)
        self._record_from_argv = from_argv

    def snapshot(self, config: dict[str, Any]) -> None:
        if self._record is None:
            config["args"] = None
            return
        config.update(self._record)
        config["args_parses"] = self._calls


def _describe(
    parser: argparse.ArgumentParser, namespace: Any, strings: list[str]
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    skipped: list[str] = []
    for key, value in sorted(vars(namespace).items()):
        safe = json_safe(value)
        if safe is UNSAFE:
            skipped.append(key)
        else:
            values[key] = safe
    given = _given_options(parser, strings)
    dest_to_default = {
        a.dest: a.default for a in _actions(parser) if a.dest is not argparse.SUPPRESS
    }
    defaults = {}
    for dest in values:
        if dest not in given and dest in dest_to_default:
            safe = json_safe(dest_to_default[dest])
            defaults[dest] = None if safe is UNSAFE else safe
    out = {"args": values, "args_given": given, "args_defaults": defaults}
    if skipped:
        out["args_unrecorded"] = skipped
    return out


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's actions, including those of its sub-parsers."""
    found: list[argparse.Action] = []
    pending = [parser]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for action in current._actions:
            found.append(action)
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
    return found


def _given_options(parser: argparse.ArgumentParser, strings: list[str]) -> dict[str, str]:
    """dest -> the option string used on the command line (or "positional")."""
    actions = _actions(parser)
    by_option = {opt: a for a in actions for opt in a.option_strings}
    long_options = [o for o in by_option if o.startswith("--")]
    prefix_chars = parser.prefix_chars
    given: dict[str, str] = {}
    positional_only = False
    for token in strings:
        if not isinstance(token, str):
            continue
        if token == "--":
            positional_only = True
            continue
        if positional_only or not token or token[0] not in prefix_chars or token == "-":
            continue
        head = token.split("=", 1)[0]
        action = by_option.get(head)
        option = head
        if action is None and token[:2] not in ("--",) and len(token) > 2:
            option = token[:2]  # a short option with its value attached: -x5
            action = by_option.get(option)
        if action is None and head.startswith("--") and parser.allow_abbrev:
            matches = [o for o in long_options if o.startswith(head)]
            if len(matches) == 1:
                option, action = matches[0], by_option[matches[0]]
        if action is not None and action.dest is not argparse.SUPPRESS:
            given.setdefault(action.dest, option)
    for action in actions:
        if (
            not action.option_strings
            and action.dest is not argparse.SUPPRESS
            and not isinstance(action, argparse._SubParsersAction)
            and action.nargs not in ("?", "*")
        ):
            given.setdefault(action.dest, "positional")
    return given
