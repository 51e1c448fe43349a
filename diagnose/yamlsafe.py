"""YAML from user and rule files, parsed with limits on size, aliases and nesting.

PyYAML's ``safe_load`` shares an aliased node instead of copying it, so a "billion laughs"
file of a few hundred bytes parses quickly -- and then every consumer that walks the data
(schema validation, number conversion, ``json.dumps``) walks 10^9 items, taking gigabytes
and minutes. The loader here counts, while it composes, how many nodes the document holds
once every alias is expanded, and stops past :data:`MAX_NODES`; the text is capped before
parsing, and nesting deeper than Python's recursion allows is refused too. Each limit raises
:class:`YAMLLimitError` with one line.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_CHARS = 4 * 1024 * 1024  # a rule or config file is a few KB
MAX_NODES = 100_000  # nodes with every alias expanded; a rule file has about a hundred


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
