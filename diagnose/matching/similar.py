"""Rank records by how close their normalised message is to an error line.

rapidfuzz compares two short strings in about a microsecond, but 100k of them per query is
~100 ms. So an inverted index on normalised words picks candidates first: each query word
adds its inverse document frequency to the records containing it (words found in more than
``MAX_DF`` of the records carry almost no information and are skipped), and only the best
``CANDIDATES`` go through rapidfuzz. Small datasets skip the index and compare everything.

The score is rapidfuzz's ``token_sort_ratio`` (word order and small edits), or 0.9 x
``token_set_ratio`` when the two share at least ``MIN_SHARED`` content words, so that a
fragment such as "CUDA out of memory" still finds the full message. WRatio was tried first
and rejected: its partial matching scores unrelated messages 0.85 on shared short words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rapidfuzz import fuzz

from diagnose.matching.normalize import tokens

BRUTE_FORCE_BELOW = 500  # compare every record when there are fewer
CANDIDATES = 24
MAX_DF = 0.05
MIN_SHARED = 3  # content words two texts must share before subset matching counts
SUBSET_WEIGHT = 0.9


class SimilarityIndex:
    """Index over normalised record messages (empty strings are never returned)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        self._words = [frozenset(tokens(t)) for t in self._texts]
        self._postings: dict[str, list[int]] | None = None
        self._idf: dict[str, float] = {}
        if len(self._texts) >= BRUTE_FORCE_BELOW:
            self._build_postings()

    def _build_postings(self) -> None:
        postings: dict[str, list[int]] = {}
        for i, words in enumerate(self._words):
            for tok in words:
                lst = postings.get(tok)
                if lst is None:
                    postings[tok] = [i]
                else:
                    lst.append(i)
        n = len(self._texts)
        self._idf = {tok: math.log(n / len(ids)) for tok, ids in postings.items()}
        self._postings = postings

    def nearest(self, query: str, limit: int) -> list[tuple[int, float]]:
        """``(index, similarity in [0, 1])`` of the ``limit`` closest texts, best first."""
        if not query:
            return []
        ids = range(len(self._texts)) if self._postings is None else self._candidates(query)
        ids = [i for i in ids if self._texts[i]]
        if not ids:
            return []
        qwords = frozenset(tokens(query))
        scored = []
        for i in ids:
            text = self._texts[i]
            score = fuzz.token_sort_ratio(query, text)
            if len(qwords & self._words[i]) >= MIN_SHARED:
                score = max(score, SUBSET_WEIGHT * fuzz.token_set_ratio(query, text))
            scored.append((i, score / 100.0))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:limit]

    def _candidates(self, query: str) -> list[int]:
        assert self._postings is not None
        postings, idf = self._postings, self._idf
        max_df = max(64, int(MAX_DF * len(self._texts)))
        words = [t for t in tokens(query) if t in postings]
        usable = [t for t in words if len(postings[t]) <= max_df]
        if not usable and words:  # only common words: the rarest one still narrows it down
            usable = [min(words, key=lambda t: len(postings[t]))]
        scores: dict[int, float] = {}
        get = scores.get
        for tok in usable:
            weight = idf[tok]
            for i in postings[tok][: max_df * 4]:
                scores[i] = get(i, 0.0) + weight
        if len(scores) <= CANDIDATES:
            return list(scores)
        return sorted(scores, key=scores.__getitem__, reverse=True)[:CANDIDATES]
