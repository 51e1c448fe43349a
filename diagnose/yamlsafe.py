"""YAML from user and rule files, parsed with limits on size, aliases and nesting.

PyYAML's ``safe_load`` shares an aliased node instead of copying it, so a "billion laughs"
file of a few hundred bytes parses quickly -- and then every consumer that walks the data
(schema validation, number conversion, ``json.dumps``) walks 10^9 items, taking gigabytes
and minutes. The loader here counts, while it composes, how many nodes the document holds
once every alias is expanded, and stops past :data:`MAX_NODES`; the text is capped before
parsing, and nesting deeper than Python's recursion allows is refused too. Each limit raises
:class:`YAMLLimitError` with one line.

The values are JSON's kinds only, so that everything downstream (schema validation, pydantic,
``json.dumps``, a terminal) can take them: an integer of more than :data:`MAX_INT_DIGITS`
digits (Python refuses to read one past 4,300 and nothing here means one past 10^40), binary
data (``!!binary``), a set (``!!set``) and a string holding a lone surrogate (``"\\ud800"``,
not text any encoder can write) are refused with the line they are on; a timestamp
(``2024-01-01``, which YAML 1.1 reads as a date) stays the text it was written as.
"""

from __future__ import annotations

from typing import Any

import yaml

from diagnose.jsonsafe import MAX_INT_DIGITS

MAX_CHARS = 4 * 1024 * 1024  # a rule or config file is a few KB
MAX_NODES = 100_000  # nodes with every alias expanded; a rule file has about a hundred
_DIGIT = frozenset("0123456789abcdefABCDEF")


class YAMLLimitError(ValueError):
    """A YAML text past one of the limits; the message says which, in one line."""


class _LimitedLoader(yaml.SafeLoader):
    """A SafeLoader that knows each composed node's expanded size (aliases counted in full)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}

    def compose_scalar_node(self, anchor: str | None) -> yaml.Node:
        node = super().compose_scalar_node(anchor)
        self._sizes[id(node)] = 1
        return node

    def compose_sequence_node(self, anchor: str | None) -> yaml.Node:
        node = super().compose_sequence_node(anchor)
        return self._sized(node, node.value)

    def compose_mapping_node(self, anchor: str | None) -> yaml.Node:
        node = super().compose_mapping_node(anchor)
        return self._sized(node, [part for pair in node.value for part in pair])

    def _sized(self, node: yaml.Node, children: list[yaml.Node]) -> yaml.Node:
        size = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        if size > MAX_NODES:
            raise YAMLLimitError(
                f"YAML too large / too many aliases (more than {MAX_NODES:,} values once "
                f"aliases are expanded, at line {node.start_mark.line + 1})"
            )
        self._sizes[id(node)] = size
        return node


def _refuse(node: yaml.Node, what: str) -> YAMLLimitError:
    return YAMLLimitError(f"{what} at line {node.start_mark.line + 1}: not allowed here")


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    digits = sum(ch in _DIGIT for ch in str(node.value))
    if digits > MAX_INT_DIGITS:
        raise YAMLLimitError(
            f"an integer of {digits:,} digits at line {node.start_mark.line + 1}: too large "
            f"(at most {MAX_INT_DIGITS} digits)"
        )
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    value = loader.construct_scalar(node)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(node, "a lone surrogate (not text) in a string") from None
    return value


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _binary(_loader: yaml.SafeLoader, node: yaml.Node) -> None:
    raise _refuse(node, "binary data (!!binary)")


def _set(_loader: yaml.SafeLoader, node: yaml.Node) -> None:
    raise _refuse(node, "a set (!!set; write a list)")


for _tag, _constructor in (
    ("tag:yaml.org,2002:int", _bounded_int),
    ("tag:yaml.org,2002:str", _text),
    ("tag:yaml.org,2002:timestamp", _timestamp_as_text),
    ("tag:yaml.org,2002:binary", _binary),
    ("tag:yaml.org,2002:set", _set),
):
    _LimitedLoader.add_constructor(_tag, _constructor)


def compose(text: str) -> tuple[Any, yaml.Node | None]:
    """The data of a one-document YAML ``text`` and its node tree (for line numbers).

    Raises ``yaml.YAMLError`` for invalid YAML and :class:`YAMLLimitError` past a limit.
    """
    if len(text) > MAX_CHARS:
        raise YAMLLimitError(f"YAML too large ({len(text):,} characters; at most {MAX_CHARS:,})")
    loader = _LimitedLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except RecursionError:
        raise YAMLLimitError("YAML nested too deep") from None
    finally:
        loader.dispose()
    return data, node


def load(text: str) -> Any:
    """The data of a one-document YAML ``text``, within the limits (see :func:`compose`)."""
    return compose(text)[0]
