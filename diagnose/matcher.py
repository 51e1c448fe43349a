"""Error message, traceback or whole log -> the dataset records that explain it, ranked.

``Matcher(records).match(text)`` finds the error lines in ``text`` (see
:mod:`diagnose.matching.logtext`), then ranks records in two tiers:

1. *pattern* matches: the record's ``messagePattern`` (``re.search``) matches an error line.
   Score 0.94-1.0 by where the line came from (the final exception first, then its root
   cause, other exceptions, warnings, log lines), a hair less when the exception class
   disagrees with the record's ``errorClass``.
2. *similar* records: the closest normalised ``errorMessage`` (numbers, paths, quoted names,
   shapes, dtypes, devices folded; rapidfuzz, see :mod:`diagnose.matching.similar`), with the
   exception class as a tie-breaker. Scores are scaled into [0, 0.9] so a pattern match
   always ranks first. The class only orders records on the same side of the threshold: the
   text alone must reach it. ``RuntimeError: CUDA error: out of memory`` is as close to the
   illegal-memory-access record as to the out-of-memory ones (they share "CUDA error ...
   memory"); that the illegal access is also a ``RuntimeError`` says nothing about which
   error it is, so it must not turn a near miss into a confident answer. Only error lines that no pattern matched are compared this way: a
   pattern match identifies the error, and the dataset requires every other record's
   pattern not to fit that record's messages, so a merely similar record is another error.

Similar text is not the same error when one side has no words of its own once its varying
parts are folded (a bare ``KeyError: 'key'``), or when both name a library status code and the
codes differ (``CUBLAS_STATUS_INTERNAL_ERROR`` / ``CUBLAS_STATUS_INVALID_VALUE``): such a
record stays below the threshold. A warning does not stop a run: when the paste shows an
exception no record explains, the records that explain its warnings are near misses, not
answers.

Only similar records at or above ``threshold`` count as matches; the best of the rest that
still come near it (score at least :data:`NEAREST_FLOOR`) are returned apart as
:attr:`MatchResult.nearest`, so "no record matches" stays an honest answer that still shows
what came closest -- and unrelated records are not dressed up as near misses.

A match's ``reason`` quotes the error line where the pattern matched (not where the line
starts), so a line that holds two messages shows which one the record explains.

Records are any objects (or mappings) with the upstream JSON keys as attributes: ``id``,
``slug``, ``errorMessage``, ``messagePattern``, ``errorClass``, ... This module never
imports torch.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from diagnose.matching.gcpause import collector_paused
from diagnose.matching.logtext import (
    ErrorLine,
    extract_error_lines,
    split_class,
    without_boilerplate,
)
from diagnose.matching.normalize import class_relation, normalize, short_class
from diagnose.matching.patterns import MATCH_DEADLINE_S, PatternIndex
from diagnose.matching.similar import SimilarityIndex

__all__ = ["DEFAULT_THRESHOLD", "NEAREST_FLOOR", "Match", "MatchResult", "Matcher", "normalize"]

DEFAULT_THRESHOLD = 0.8  # text similarity a similar record needs to count
SIMILAR_SCALE = 0.9  # similar scores live in [0, 0.9]; pattern matches in [0.93, 1]
# Below this score a record is not even a near miss: on real errors that no record covers,
# the closest records scored 0.34-0.46 and shared little more than "RuntimeError: CUDA".
NEAREST_FLOOR = 0.5
MAX_QUERY_LINES = 12  # error lines considered per input (most important first)
MAX_SIMILAR_CHARS = 600  # of each error line, for the fuzzy comparison
CLASS_BONUS = {"same": 0.05, "related": 0.025}
# how far below the threshold the class bonus may lift a record the text alone leaves under it
BELOW_THRESHOLD = 1e-6
NOT_FATAL = ("warning", "log")
# what similar text that cannot be the same error (see _may_be_same) counts for at most
NOT_THE_SAME = 0.75  # roles of lines that do not say what stopped the run


def field_of(record: Any, name: str) -> Any:
    """Read a record field from an object attribute or a mapping key (None if absent)."""
    if isinstance(record, dict):  # the cheap checks first: this runs 200k times per build
        return record.get(name)
    value = getattr(record, name, _ABSENT)
    if value is _ABSENT:
        return record.get(name) if isinstance(record, Mapping) else None
    return value


_ABSENT = object()


@dataclass(frozen=True, slots=True)
class Match:
    """One record that explains the error: how well (``score`` in [0, 1]) and why."""

    record: Any
    score: float
    reason: str
    kind: str  # "pattern" | "similar"
    line: str  # the error line it was matched against
    role: str  # where that line came from: final, root cause, chained, warning, log, ...

    @property
    def record_id(self) -> str | None:
        return field_of(self.record, "id")

    @property
    def slug(self) -> str | None:
        return field_of(self.record, "slug")

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by ``diagnose match --format json`` and reports."""
        return {
            "record_id": self.record_id,
            "slug": self.slug,
            "score": round(self.score, 4),
            "reason": self.reason,
            "kind": self.kind,
            "error_class": field_of(self.record, "errorClass"),
            "line": self.line,
            "role": self.role,
        }


@dataclass(frozen=True, slots=True)
class MatchResult:
    """Everything one search found: the error lines read, matches, and the nearest misses."""

    query: list[ErrorLine]
    matches: list[Match]
    nearest: list[Match] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return bool(self.matches)


class Matcher:
    """Ranks records for an error message or a whole traceback/log. Build once, match often."""

    def __init__(
        self,
        records: Iterable[Any],
        *,
        threshold: float = DEFAULT_THRESHOLD,
        literals: Sequence[tuple[str, ...] | None] | None = None,
    ) -> None:
        """``literals``: each record's pattern's required literals, as a saved index holds
        them (``matching.index``); read from the patterns when not given."""
        self.records: list[Any] = list(records)
        self.threshold = threshold
        self._required: dict[int, tuple[str, ...]] = {}  # record -> quoted names it insists on
        with collector_paused():
            self._patterns = PatternIndex(
                [field_of(r, "messagePattern") for r in self.records], literals
            )
            self._similar = SimilarityIndex(
                [field_of(r, "errorMessage") or "" for r in self.records], prepare=_record_text
            )

    @property
    def cutoff(self) -> float:
        """The score a similar record needs to be a match (``threshold`` on the similar scale)."""
        return self.threshold * SIMILAR_SCALE

    @property
    def problems(self) -> list[tuple[Any, str]]:
        """Records whose pattern was skipped (does not compile, or cannot be bounded)."""
        return [(self.records[i], why) for i, why in sorted(self._patterns.problems.items())]

    @property
    def timeouts(self) -> list[Any]:
        """Records whose pattern ran past its time bound on some text (counted as no match)."""
        return [self.records[i] for i in sorted(self._patterns.timeouts)]

    def match(self, message: str, limit: int = 5) -> list[Match]:
        """The confident matches for ``message`` (pattern matches first), at most ``limit``."""
        return self.search(message, limit=limit, nearest=0).matches

    def search(self, message: str, limit: int = 5, nearest: int = 3) -> MatchResult:
        """Matches for ``message`` plus up to ``nearest`` best records below the threshold."""
        lines = extract_error_lines(message)[:MAX_QUERY_LINES]
        if not lines or limit <= 0:
            return MatchResult(lines, [])
        deadline = time.perf_counter() + MATCH_DEADLINE_S
        pattern_matches = self._pattern_matches(lines, deadline)
        taken = {id(m.record) for m in pattern_matches}
        # a line a pattern explains needs no fuzzy guess: by the dataset's contract the other
        # records' patterns do not fit it, so text similar to it names a different error
        explained = {m.line for m in pattern_matches}
        unexplained = [line for line in lines if line.text not in explained]
        similar = self._similar_matches(unexplained, limit + nearest, taken)
        confident = [m for m in similar if m.score >= self.cutoff]
        below = [m for m in similar if NEAREST_FLOOR <= m.score < self.cutoff]
        matches = pattern_matches + confident
        aside = self._beside_the_error(lines, matches)
        if aside:
            matches = [m for m in matches if m.role != "warning"]
            below = sorted(aside + below, key=lambda m: -m.score)
        return MatchResult(lines, matches[:limit], below[:nearest])

    def _beside_the_error(self, lines: list[ErrorLine], matches: list[Match]) -> list[Match]:
        """Matches of warnings printed before an exception that nothing explains, made near
        misses: a warning does not stop a run, so the record explaining it is not the answer
        to the error the paste shows (a deprecation notice printed before a ValueError)."""
        explained = {m.line for m in matches}
        if all(line.role in NOT_FATAL or line.text in explained for line in lines):
            return []
        note = "; it explains a warning printed beside an error no record explains"
        return [
            replace(m, score=min(m.score, self.cutoff - BELOW_THRESHOLD), reason=m.reason + note)
            for m in matches
            if m.role == "warning"
        ]

    # -- tier 1: patterns ---------------------------------------------------------------

    def _pattern_matches(self, lines: list[ErrorLine], deadline: float) -> list[Match]:
        best: dict[int, Match] = {}
        for line in lines:
            texts = _search_texts(line)
            for hit in self._patterns.search(texts, deadline=deadline):
                record = self.records[hit.index]
                relation = class_relation(line.exc_class, field_of(record, "errorClass"))
                score = line.weight - (0.01 if line.exc_class and relation is None else 0.0)
                if hit.index in best and best[hit.index].score >= score:
                    continue
                reason = f"pattern matched {_where(line)} `{_excerpt(hit.text, hit.span[0])}`"
                reason += _class_note(line.exc_class, record, relation)
                best[hit.index] = Match(record, score, reason, "pattern", line.text, line.role)
        return sorted(best.values(), key=lambda m: -m.score)

    # -- tier 2: similar text -------------------------------------------------------------

    def _similar_matches(self, lines: list[ErrorLine], want: int, taken: set[int]) -> list[Match]:
        best: dict[int, tuple[float, Match]] = {}
        for line in lines:
            query = without_boilerplate(line.message)[:MAX_SIMILAR_CHARS]
            if not query:
                continue  # only the class is known (the message was not pasted)
            for i, sim in self._similar.nearest(query, want + len(taken)):
                record = self.records[i]
                if id(record) in taken:
                    continue
                if not self._names_present(i, line.message):
                    sim = min(sim, self.threshold - BELOW_THRESHOLD)
                same = _may_be_same(line.message, field_of(record, "errorMessage"))
                if not same:
                    sim = min(sim, NOT_THE_SAME)  # a hint at most, shown well below a match
                relation = class_relation(line.exc_class, field_of(record, "errorClass"))
                adjusted = self._with_class(sim * line.weight, relation if same else None)
                if i in best and best[i][0] >= adjusted:
                    continue
                reason = f"similar text ({sim:.2f}) to {_where(line)} `{_short(line.first_line)}`"
                reason += _class_note(line.exc_class, record, relation)
                match = Match(
                    record,
                    SIMILAR_SCALE * min(1.0, adjusted),
                    reason,
                    "similar",
                    line.text,
                    line.role,
                )
                best[i] = (adjusted, match)
        ranked = sorted(best.values(), key=lambda pair: -pair[0])
        return [m for _adj, m in ranked[:want]]

    def _names_present(self, i: int, message: str) -> bool:
        """Whether ``message`` holds every quoted name record ``i``'s own pattern spells out.

        Normalising folds quoted names into one placeholder, so "'ConfigDict' object has no
        attribute 'x'" reads like every AttributeError of that form; the name the record's
        pattern insists on is what tells them apart, and a text without it is another error.
        """
        names = self._required.get(i)
        if names is None:
            names = self._required[i] = _quoted_names(self.records[i])
        return all(name in message for name in names)

    def _with_class(self, text_score: float, relation: str | None) -> float:
        """``text_score`` plus the class bonus, kept on the side of the threshold it was on.

        Not capped at 1, so that the class still breaks ties between perfect texts.
        """
        adjusted = text_score + CLASS_BONUS.get(relation or "", 0.0)
        if text_score < self.threshold:
            return min(adjusted, self.threshold - BELOW_THRESHOLD)
        return adjusted


_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_.]*)'")
_PLACEHOLDER = re.compile(r"<\w+>")
_WORD = re.compile(r"[A-Za-z]{2,}")
# a library's status code: CUBLAS_STATUS_INTERNAL_ERROR, NCCL_ERROR_..., cudaErrorLaunchFailure
_STATUS = re.compile(
    r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:STATUS|ERROR|ERR)(?:_[A-Z0-9]+)+\b|\bcudaError[A-Z]\w*"
)


def _may_be_same(message: str, record_message: Any) -> bool:
    """Whether similar text may be the same error: not when one side has no words of its own
    once the varying parts are folded (``KeyError: 'epoch_loop'`` reads like every KeyError
    of a quoted name: only the class is left to compare), nor when both name a status code and
    the codes differ (``CUBLAS_STATUS_INTERNAL_ERROR`` is not ``..._INVALID_VALUE``, however
    alike the rest of the line)."""
    if not isinstance(record_message, str):
        return True
    for text in (message, record_message):
        if not _WORD.search(_PLACEHOLDER.sub(" ", normalize(text))):
            return False
    ours, theirs = set(_STATUS.findall(message)), set(_STATUS.findall(record_message))
    return not (ours and theirs and ours.isdisjoint(theirs))


def _quoted_names(record: Any) -> tuple[str, ...]:
    """Quoted names in a record's message that its pattern requires literally."""
    pattern = field_of(record, "messagePattern") or ""
    message = field_of(record, "errorMessage") or ""
    return tuple(
        name
        for name in dict.fromkeys(_QUOTED.findall(message))
        if f"'{name}'" in pattern or f"'{re.escape(name)}'" in pattern
    )


def _record_text(message: str) -> str:
    """The normalised message of a record, without a leading ``ExcClass:``."""
    _cls, body = split_class(message)
    return normalize(without_boilerplate(body or message))


def _search_texts(line: ErrorLine) -> list[str]:
    """What a pattern is tried on: the line as printed, its message alone, its first line,
    and the line joined to the one after it when the paste may have wrapped it there.

    A line with backticks is also tried without them: users paste messages from issues with
    markdown code spans around parts of them (``Can't call `numpy()` on Tensor ...``).
    """
    texts = [line.text]
    for extra in (line.message, line.first_line):
        if extra and extra not in texts:
            texts.append(extra)
    if line.wrap:  # the paste may have broken the line in two, at a space or inside a word
        texts += [f"{line.text} {line.wrap}", line.text + line.wrap]
    if "`" in line.text:
        texts += [plain for plain in (t.replace("`", "") for t in texts) if plain not in texts]
    return texts


_ROLE_PLACES = {
    "message": "the message",
    "raised": "the message raised in the last frame",
}


def _where(line: ErrorLine) -> str:
    """Where an error line came from, in words: ``the final line``, ``the warning line``."""
    return _ROLE_PLACES.get(line.role, f"the {line.role} line")


def _excerpt(text: str, start: int, lead: int = 30) -> str:
    """The line of ``text`` where a match starts at ``start``, from the match on if it is far in.

    ``RuntimeError: mat1 and mat2 ...`` is quoted whole; in a long line that holds another
    message first, the quote starts at the match (after ``...``).
    """
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    offset = start - line_start
    if offset > lead and line[:offset].strip():
        return "..." + _short(line[offset:], 97)
    return _short(line)


def _class_note(found: str | None, record: Any, relation: str | None) -> str:
    expected = field_of(record, "errorClass")
    if not found or not expected:
        return ""
    if relation == "same":
        return f", same error class {short_class(found)}"
    if relation == "related":
        return f", related error class ({short_class(found)} / {short_class(expected)})"
    return f", different error class ({short_class(found)} vs {short_class(expected)})"


def _short(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
