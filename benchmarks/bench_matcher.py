"""Matcher speed at scale: 100k synthetic records, measured side by side in one run.

Run: ``.venv/bin/python benchmarks/bench_matcher.py [--records 100000] [--queries 300]``

What is measured (printed as a table):
- build: ``Matcher(records)`` (pattern prefilter + similarity index), target < 2 s at 100k;
- one ``match()`` (median and p90 over queries aimed at different records, so each includes
  compiling its candidate patterns the first time, as in a fresh CLI run), target < 1 ms;
- the straightforward loop ``[p for p in compiled if p.search(line)]`` over every pattern
  (compiled beforehand, compile time not counted), and the ratio, target >= 50x;
- that the prefilter loses nothing: on every naive-timed query the pattern hits of the
  index equal the naive loop's hits.

Why an Aho-Corasick literal prefilter (pyahocorasick) and not a multi-pattern regex engine:
the only multi-pattern engine at hand is one big alternation ``(?:p1)|(?:p2)|...`` for
``re``/``regex``; the script measures it on ``--alt-size`` patterns and it is already slower
to compile than the whole 100k-record index and slower per search than the prefilter, and it
only reports one match where several records can match (the overlap must be resolved by
re-running patterns anyway). Hyperscan would be the real engine but is not available here and
is x86-only. The prefilter needs each pattern's longest required literal; reading it with
``re._parser`` costs ~140 us a pattern (14 s at 100k), so ``matching.literals`` tokenizes the
common pattern shapes itself and only falls back to the parser for unusual syntax.
Patterns are compiled lazily (``re.compile`` is ~100-250 us each: 10-26 s for 100k up front).

The fuzzy stage uses an inverted index on normalised words (idf-weighted, very common words
skipped) to pick 48 candidates, then rapidfuzz on those; comparing all 100k strings with
rapidfuzz costs tens of ms a query.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.matcher import Matcher
from diagnose.matching.patterns import PatternIndex
from diagnose.matching.similar import SimilarityIndex

COMMON_PHRASES = [
    "Expected all tensors to be on the same device",
    "CUDA out of memory. Tried to allocate",
    "element 0 of tensors does not require grad",
    "one of the variables needed for gradient computation has been modified",
    "Trying to backward through the graph a second time",
    "expected scalar type",
    "mat1 and mat2 shapes cannot be multiplied",
    "The size of tensor a",
    "Attempting to unscale FP16 gradients",
    "Function returned nan values in its",
    "Loss scale already at minimum",
    "Detected inf or nan values in",
    "probability tensor contains either inf, nan or element < 0",
    "Target is out of bounds",
    "device-side assert triggered",
]

# (regex hole, function producing a text it matches)
HOLES = [
    (r"\d+", lambda r: str(r.randint(0, 99999))),
    (r"[^ ]+", lambda r: f"{r.choice(['model', 'layer', 'x'])}.{r.randint(0, 99)}"),
    (r".*?", lambda r: f"{r.randint(1, 9)} of them"),
    (r"(?:cuda|cpu)(?::\d+)?", lambda r: r.choice(["cpu", "cuda", "cuda:3"])),
    (r"'\w+'", lambda r: f"'{r.choice(['AddmmBackward0', 'weight', 'bias'])}'"),
    (r"\(\d+x\d+ and \d+x\d+\)", lambda r: f"({r.randint(1, 512)}x{r.randint(1, 512)} and 3x4)"),
    (r"[\d.]+ [KMG]iB", lambda r: f"{r.randint(1, 99)}.00 {r.choice('KMG')}iB"),
]


@dataclass(slots=True)
class Rec:
    """The record attributes the matcher reads (duck typing, like the real models)."""

    id: str
    slug: str
    errorMessage: str
    messagePattern: str
    errorClass: str
    solutions: list[str] = field(default_factory=list)


def make_vocab(rng: random.Random, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ten", "sor", "gra", "dient", "ba", "tch", "nor", "m", "ex", "pec",
            "ted", "sca", "le", "ov", "er", "fl", "ow", "cu", "da", "ran", "k", "st", "ep"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(syll) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def make_records(n: int, seed: int = 0) -> tuple[list[Rec], list[list[tuple[str, object]]]]:
    """Records plus, for each, its pattern pieces (to write new messages that match it)."""
    rng = random.Random(seed)
    vocab = make_vocab(rng, 6000)
    weights = [1.0 / (k + 1) ** 0.8 for k in range(len(vocab))]  # Zipf-like word frequencies
    records, pieces_all = [], []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(6, 12))
        pieces: list[tuple[str, object]] = []
        if rng.random() < 0.3:
            pieces.append(("lit", rng.choice(COMMON_PHRASES)))
        for k, w in enumerate(words):
            pieces.append(("lit", (" " if pieces else "") + w))
            if k in (2, 6, 9) and rng.random() < 0.7:
                pieces.append(("lit", " "))
                pieces.append(("hole", rng.choice(HOLES)))
        pattern = "".join(re.escape(p) if kind == "lit" else p[0] for kind, p in pieces)
        message = render(pieces, rng)
        cls = rng.choice(["RuntimeError", "ValueError", "RuntimeError", "AssertionError"])
        records.append(Rec(f"{i:016x}", f"synthetic-{i}", message, pattern, cls, ["fix it"]))
        pieces_all.append(pieces)
    return records, pieces_all


def render(pieces: list[tuple[str, object]], rng: random.Random) -> str:
    return "".join(p if kind == "lit" else p[1](rng) for kind, p in pieces)  # type: ignore[index]


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--naive-queries", type=int, default=15)
    ap.add_argument("--alt-size", type=int, default=2_000)
    opts = ap.parse_args()
    rng = random.Random(1)

    records, pieces = make_records(opts.records)
    print(f"{len(records):,} synthetic records generated")

    patterns = [r.messagePattern for r in records]
    _, t_patterns = timed(PatternIndex, patterns)
    _, t_similar = timed(SimilarityIndex, [r.errorMessage.lower() for r in records])
    matcher, t_build = timed(Matcher, records)

    # queries: new messages for random records (different hole values), in a log line,
    # plus some that match nothing
    targets = rng.sample(range(len(records)), opts.queries)
    queries = []
    for k, idx in enumerate(targets):
        if k % 5 == 4:
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(8))
            queries.append((None, f"RuntimeError: {words} {k}"))
        else:
            queries.append((idx, f"{records[idx].errorClass}: {render(pieces[idx], rng)}"))

    times, found_first = [], 0
    for idx, q in queries:
        res, dt = timed(matcher.match, q, 5)
        times.append(dt)
        if idx is not None and res and res[0].record is records[idx]:
            found_first += 1
    aimed = sum(1 for idx, _ in queries if idx is not None)

    # the straightforward loop, on a subset of the same queries
    compiled, t_compile = timed(lambda: [re.compile(p) for p in patterns])
    naive_times, agree = [], 0
    for _idx, q in queries[: opts.naive_queries]:
        hits, dt = timed(lambda q=q: {i for i, p in enumerate(compiled) if p.search(q)})
        naive_times.append(dt)
        index_hits = {h.index for h in matcher._patterns.search([q])}
        agree += index_hits == hits
    median, naive_median = statistics.median(times), statistics.median(naive_times)

    # the alternative: one alternation regex (a multi-pattern engine made of `re`)
    alt_patterns = patterns[: opts.alt_size]
    alt, t_alt_compile = timed(re.compile, "|".join(f"(?:{p})" for p in alt_patterns))
    alt_times = [timed(alt.search, q)[1] for _i, q in queries[:50]]
    alt_small, t_small_build = timed(PatternIndex, alt_patterns)
    small_times = [timed(alt_small.search, [q])[1] for _i, q in queries[:50]]

    p90 = sorted(times)[int(0.9 * len(times))]
    print(f"build Matcher({len(records):,})          {t_build:8.3f} s   (target < 2 s)")
    print(f"  of which pattern prefilter       {t_patterns:8.3f} s")
    print(f"  of which similarity index        {t_similar:8.3f} s")
    print(f"match(): median over {len(times)} queries   {median * 1e3:8.3f} ms  (target < 1 ms)")
    print(f"match(): p90                        {p90 * 1e3:8.3f} ms")
    print(f"naive re.search loop: median        {naive_median * 1e3:8.3f} ms  "
          f"({len(naive_times)} queries; compiling all took {t_compile:.1f} s, not counted)")
    print(f"ratio naive / match()               {naive_median / median:8.1f} x  (target >= 50 x)")
    print(f"prefilter hits == naive hits        {agree}/{len(naive_times)} queries")
    print(f"aimed record ranked first           {found_first}/{aimed} queries")
    print(f"alternative, one alternation regex of {len(alt_patterns):,} patterns: compile "
          f"{t_alt_compile:.2f} s, search median {statistics.median(alt_times) * 1e3:.3f} ms; "
          f"prefilter on the same: build {t_small_build:.3f} s, search median "
          f"{statistics.median(small_times) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
