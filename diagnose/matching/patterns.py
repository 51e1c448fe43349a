"""Run many ``messagePattern`` regexes on a few lines, fast and with bounded work.

Each pattern's longest required literal (lowercased) is read by
:func:`literals.required_literals` when the index is built -- one per branch for a pattern
that is an alternation of wordings -- and the rarest whole word inside it keys a dict, so the
words of a lowercased line lead to the few literals that may occur in it, each checked with
``in``: only patterns one of whose literals is in the line are run. Literals without a whole
word inside go into a (small) Aho-Corasick automaton; patterns without a usable literal go
on a short always-check list. The words inside the literals are read for all of them at
once where they are ASCII (one ``translate``, see :func:`_inner_words`), and the rarest is
picked by C-level ``min``: the build is mostly the literals' extraction.

Patterns are compiled lazily, on their first candidacy: compiling 100k regexes up front
takes ~26 s with ``re``. A pattern that fails to compile is skipped and remembered in
:attr:`PatternIndex.problems`.

Bounded work: lines are capped (see ``logtext.MAX_LINE_CHARS``), and every search of every
pattern runs under a time bound (:mod:`diagnose.regexbound`): a pattern that runs out of time
on a text counts as not matching it, is not tried on the other texts of that search, is
remembered in :attr:`PatternIndex.timeouts` and is tried after the others from then on. A
whole match also has a deadline after which remaining candidates are not tried.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import Any

import ahocorasick

from diagnose.matching.gcpause import collector_paused

_WORD = re.compile(r"\w+")
# inside a literal, the pieces between runs of non-word characters, except the first and the
# last (which may continue in the text), are whole words of any text containing the literal
_NON_WORD = re.compile(r"\W+")
# every ASCII non-word character but NUL (the joiner of _inner_words) -> a space
_ASCII_NON_WORD = {c: " " for c in range(1, 128) if not _WORD.match(chr(c))}
SEARCH_TIMEOUT_S = 0.05  # one pattern on one line
MATCH_DEADLINE_S = 0.25  # all candidate patterns of one match together


def _inner_words(literals: list[str]) -> list[list[str]]:
    """The pieces of each literal between runs of non-word characters, but the first and last.

    Each piece is a whole word of any text containing the literal, or "" (two adjacent
    non-word characters). ASCII literals -- nearly all -- are read by one C-level
    ``translate`` of all of them joined, mapping every non-word character to a space, and
    one ``split(" ")`` each (~3x faster than ``_NON_WORD.split`` per literal); the joiner is a
    non-word character no literal holds, so it is checked by counting.
    """
    joined = "\x00".join(literals)
    if not joined.isascii() or joined.count("\x00") != len(literals) - 1:
        return [_NON_WORD.split(literal)[1:-1] for literal in literals]
    return [text.split(" ")[1:-1] for text in joined.translate(_ASCII_NON_WORD).split("\x00")]


@dataclass(frozen=True, slots=True)
class PatternHit:
    """Pattern ``index`` matched ``text`` (the span is what it matched)."""

    index: int
    text: str
    span: tuple[int, int]


class PatternIndex:
    """Index of regex patterns (``None`` entries are allowed: records without a pattern)."""

    def __init__(
        self,
        patterns: Sequence[str | None],
        literals: Sequence[tuple[str, ...] | None] | None = None,
    ) -> None:
        """``literals``: each pattern's ``required_literals``, when read before (a saved index)."""
        with collector_paused():
            self._build(patterns, literals)

    def _build(
        self, patterns: Sequence[str | None], known: Sequence[tuple[str, ...] | None] | None
    ) -> None:
        if known is None:
            from diagnose.matching.literals import required_literals
        elif len(known) != len(patterns):
            raise ValueError(f"{len(known)} literal entries for {len(patterns)} patterns")
        self._patterns = list(patterns)
        self._compiled: dict[int, Any] = {}  # index -> compiled pattern, or None if skipped
        self.problems: dict[int, str] = {}  # index -> why the pattern is not used
        self.always: list[int] = []  # patterns with no usable literal: tried on every line
        self.timeouts: set[int] = set()  # patterns that ran out of time at least once
        by_literal: dict[str, list[int]] = {}
        for i, pattern in enumerate(self._patterns):
            if not pattern:
                continue
            literals = required_literals(pattern) if known is None else known[i]
            if literals is None:
                self.always.append(i)
                continue
            for literal in literals:
                by_literal.setdefault(literal, []).append(i)
        # one group per distinct literal; each group is reached through the rarest whole word
        # inside its literal (a dict lookup per word of the line), and only then is the whole
        # literal checked with `in`. An Aho-Corasick automaton over all literals did the same
        # but cost ~1.5 s to build at 100k records (one trie node per literal character); it
        # is kept for the few literals without a whole word inside.
        self._literals: list[str] = list(by_literal)
        self._groups: list[list[int]] = list(by_literal.values())
        words_of = _inner_words(self._literals)
        counts = Counter(chain.from_iterable(words_of))  # counted in C
        counts[""] = counts.total() + 1  # two adjacent non-word characters: never the key
        # the rarest word of each literal ("" where it has none), by C-level calls of min
        rarest = map(partial(min, key=counts.__getitem__, default=""), words_of)
        self._by_word: dict[str, list[int]] = {}
        for g, word in enumerate(rarest):
            self._by_word.setdefault(word, []).append(g)
        self._automaton = ahocorasick.Automaton()
        for g in self._by_word.pop("", ()):
            self._automaton.add_word(self._literals[g], g)
        self._use_automaton = len(self._automaton) > 0
        if self._use_automaton:
            self._automaton.make_automaton()

    def __len__(self) -> int:
        return len(self._patterns)

    def candidates(self, text: str) -> set[int]:
        """Patterns whose required literal occurs in ``text`` (plus the always-check list)."""
        found: set[int] = set(self.always)
        low = text.lower()
        groups, literals, by_word = self._groups, self._literals, self._by_word
        for word in set(_WORD.findall(low)):
            for g in by_word.get(word, ()):
                if literals[g] in low:
                    found.update(groups[g])
        if self._use_automaton:
            for _end, g in self._automaton.iter(low):
                found.update(groups[g])
        return found

    def search(self, texts: Iterable[str], deadline: float | None = None) -> list[PatternHit]:
        """Every pattern that matches one of ``texts``; at most one hit per pattern."""
        if deadline is None:
            deadline = time.perf_counter() + MATCH_DEADLINE_S
        hits: dict[int, PatternHit] = {}
        out_of_time: set[int] = set()  # in this search: not tried again on the other texts
        timeouts = self.timeouts
        for text in texts:
            candidates = sorted(self.candidates(text))
            if not candidates:
                continue
            # the bounded regex engine is imported only when some pattern is to be run
            from diagnose.regexbound import PatternTimeout

            if timeouts:  # patterns that ran out of time before go last
                candidates.sort(key=timeouts.__contains__)
            for i in candidates:
                if i in hits or i in out_of_time:
                    continue
                if time.perf_counter() > deadline:
                    return list(hits.values())
                try:
                    span = self._search_one(i, text)
                except PatternTimeout:
                    out_of_time.add(i)
                    timeouts.add(i)
                    continue
                if span is not None:
                    hits[i] = PatternHit(i, text, span)
        return list(hits.values())

    def _search_one(self, i: int, text: str) -> tuple[int, int] | None:
        compiled = self._compile(i)
        if compiled is None:
            return None
        from diagnose.regexbound import search

        m = search(compiled, text, SEARCH_TIMEOUT_S)
        return m.span() if m else None

    def _compile(self, i: int) -> Any:
        if i in self._compiled:
            return self._compiled[i]
        from diagnose.regexbound import UnboundedPattern, compile_bounded

        compiled: Any = None
        try:
            compiled = compile_bounded(self._patterns[i])
        except UnboundedPattern as exc:
            self.problems[i] = str(exc)
        self._compiled[i] = compiled
        return compiled
