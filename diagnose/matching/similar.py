"""Rank records by how close their normalised message is to an error line.

rapidfuzz compares two short strings in about a microsecond, but 100k of them per query is
~100 ms. So an inverted index on words picks candidates first, and only the best
``CANDIDATES`` go through rapidfuzz. Small datasets skip the index and compare everything.

Building must stay cheap at 100k records (the whole matcher index has a 2 s budget), so:

- the word index (~1 s CPU at 100k on a loaded 2-core machine) is built by the first query
  that reaches the fuzzy stage: most queries are answered by a pattern and never need it;

- the index words come from :func:`normalize.index_words` (lowercase words of the raw
  message, one ``findall``), not from the full normaliser, which costs ~25 us a message;
- a record's normalised text, needed only for the rapidfuzz comparison, is computed when the
  record first becomes a candidate, and cached.

Choosing candidates does bounded work per query: query words are taken rarest first and
each adds its inverse document frequency to the records containing it, until
``VISIT_BUDGET`` postings have been visited; the rarest ``RESCORE_WORDS`` of the remaining
(common, low-idf) words only re-score the best ``SHORTLIST`` records found so far (membership by bisection in their
sorted postings; building sets of the common words' postings cost ~1 ms each). A word in
most records thus costs almost nothing, yet still breaks ties.

The score is rapidfuzz's ``token_sort_ratio`` (word order and small edits), or 0.9 x
``token_set_ratio`` when the two share at least ``MIN_SHARED`` content words, so that a
fragment such as "CUDA out of memory" still finds the full message. Only a fragment -- every
content word of the query is in the record -- may score that way up to a match; sharing
some words is not enough: ``token_set_ratio`` of two texts that merely overlap is high
whenever the shared words dominate the shorter one ("invalid gradient at index 0 - expect",
a type mismatch, scored 0.90 against the custom-Function gradient record through "invalid
gradient index", though its word "expect" is in no wording of that record). A paste cut off
inside a word is still a fragment when that last piece begins the record's word that follows
the query's previous word ("... ran for 1807734 millisecond" of "... ran for N milliseconds").
An overlap scores at most ``OVERLAP_CAP``, below the matcher's threshold: a near miss, never
an answer.
WRatio was tried first
and rejected: its partial matching scores unrelated messages 0.85 on shared short words.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from operator import itemgetter

from diagnose.matching.gcpause import collector_paused
from diagnose.matching.normalize import index_words, normalize, tokens

BRUTE_FORCE_BELOW = 500  # compare every record when there are fewer
CANDIDATES = 24
SHORTLIST = 48  # records re-scored with the common words
RESCORE_WORDS = 3  # the rarest of the remaining words re-score the shortlist
VISIT_BUDGET = 600  # postings visited per query before common words only re-score
MIN_SHARED = 3  # content words two texts must share before subset matching counts
OVERLAP_CAP = 75.0  # subset score of texts that share words but where the query is no fragment
SUBSET_WEIGHT = 0.9


class SimilarityIndex:
    """Index over record messages (records whose message normalises to "" never come back).

    ``texts`` are the raw messages; ``prepare`` turns one into the normalised text that is
    compared (by default :func:`normalize.normalize`). Queries are raw text too.
    """

    def __init__(self, texts: Sequence[str], prepare: Callable[[str], str] = normalize) -> None:
        self._raw = texts
        self._prepare = prepare
        self._prepared: dict[int, tuple[str, frozenset[str], list[str]]] = {}
        self._postings: dict[str, list[int]] | None = None
        self._idf: dict[str, float] = {}
        self._indexed = len(texts) >= BRUTE_FORCE_BELOW  # else: compare every record

    @property
    def built(self) -> bool:
        """Whether the word index exists yet (it is built by the first query that needs it)."""
        return self._postings is not None

    def __len__(self) -> int:
        return len(self._raw)

    def _build_postings(self) -> None:
        with collector_paused():
            self._fill_postings()

    def _fill_postings(self) -> None:
        postings: dict[str, list[int]] = {}
        get = postings.get
        for i, text in enumerate(self._raw):
            for word in index_words(text):
                ids = get(word)
                if ids is None:
                    postings[word] = [i]
                else:
                    ids.append(i)
        n = len(self._raw)
        self._idf = {word: math.log(n / len(ids)) for word, ids in postings.items()}
        self._postings = postings

    def prepared(self, i: int) -> tuple[str, frozenset[str], list[str]]:
        """Record ``i``'s normalised text, its content words, and them in order (computed once)."""
        entry = self._prepared.get(i)
        if entry is None:
            text = self._prepare(self._raw[i] or "")
            ordered = tokens(text)
            entry = (text, frozenset(ordered), ordered)
            self._prepared[i] = entry
        return entry

    def nearest(self, query: str, limit: int) -> list[tuple[int, float]]:
        """``(index, similarity in [0, 1])`` of the ``limit`` closest texts, best first."""
        normalized = normalize(query)
        if not normalized:
            return []
        if not self._indexed:
            ids: Sequence[int] = range(len(self._raw))
        else:
            if self._postings is None:
                self._build_postings()
            ids = self._candidates(query)
        from rapidfuzz import fuzz  # imported by the first query that reaches this stage

        qordered = tokens(normalized)
        qwords = frozenset(qordered)
        cut = _cut_word(normalized, qordered)
        scored = []
        for i in ids:
            text, words, ordered = self.prepared(i)
            if not text:
                continue
            score = fuzz.token_sort_ratio(normalized, text)
            if len(qwords & words) >= MIN_SHARED:
                subset = SUBSET_WEIGHT * fuzz.token_set_ratio(normalized, text)
                if not _is_fragment(qwords, cut, words, ordered):
                    subset = min(subset, OVERLAP_CAP)
                score = max(score, subset)
            scored.append((i, score / 100.0))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:limit]

    def _candidates(self, query: str) -> list[int]:
        assert self._postings is not None
        postings, idf = self._postings, self._idf
        words = sorted(
            (w for w in index_words(query) if w in postings), key=lambda w: len(postings[w])
        )
        if not words:
            return []
        scores: dict[int, float] = {}
        get = scores.get
        visited = 0
        common: list[str] = []
        for word in words:
            ids = postings[word]
            if scores and visited + len(ids) > VISIT_BUDGET:
                common.append(word)
                continue
            weight = idf[word]
            for i in ids[:VISIT_BUDGET]:  # only the rarest word can be longer than the budget
                scores[i] = get(i, 0.0) + weight
            visited += len(ids)
        ranked = sorted(scores.items(), key=itemgetter(1), reverse=True)  # C-level key
        shortlist = [i for i, _score in ranked[:SHORTLIST]]
        for word in common[:RESCORE_WORDS]:
            ids = postings[word]  # ascending record numbers: membership by bisection
            weight = idf[word]
            size = len(ids)
            for i in shortlist:
                at = bisect_left(ids, i)
                if at < size and ids[at] == i:
                    scores[i] += weight
        return heapq.nlargest(CANDIDATES, shortlist, key=scores.__getitem__)


def _cut_word(normalized: str, ordered: list[str]) -> tuple[str, str] | None:
    """``(previous word, last word)`` when the query ends inside its last content word."""
    if len(ordered) < 2 or not normalized.endswith(ordered[-1]):
        return None
    return ordered[-2], ordered[-1]


def _is_fragment(
    qwords: frozenset[str], cut: tuple[str, str] | None, words: frozenset[str], ordered: list[str]
) -> bool:
    """Whether every content word of the query is in the record (see the module docstring).

    A last word the paste may have cut (``cut``) may instead be the start of the record's
    word right after the query's previous word.
    """
    missing = qwords - words
    if not missing:
        return True
    if cut is None or missing != {cut[1]}:
        return False
    previous, piece = cut
    at = ordered.index(previous) if previous in words else -1
    return 0 <= at < len(ordered) - 1 and ordered[at + 1].startswith(piece)
