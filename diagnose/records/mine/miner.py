"""Mine a source tree: files -> sites -> self-tested patterns -> record skeletons.

One pass over the files of ``sources.open_source``; each file is read, decoded and scanned
once, and a file that cannot be (not text, does not parse, too deep) is reported in one
line and skipped, never stopping the run.
"""

from __future__ import annotations

import ast
import io
import re
import time
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from diagnose.records.mine.cpp_lexer import Source
from diagnose.records.mine.cpp_sites import cpp_sites
from diagnose.records.mine.pattern import made_and_tested
from diagnose.records.mine.pieces import literal_text
from diagnose.records.mine.python_sites import python_sites
from diagnose.records.mine.sites import Site, SiteKind
from diagnose.records.mine.skeleton import Origin, skeleton, slug_words, wrapper
from diagnose.records.mine.sources import (
    CPP_SUFFIXES,
    DEFAULT_MAX_SIZE,
    PYTHON_SUFFIXES,
    Selection,
    SourceFile,
    open_source,
)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Options:
    """What the user asked for (``diagnose dataset mine`` options)."""

    repo: str | None = None
    commit: str | None = None
    prefix: str = ""
    kinds: frozenset[SiteKind] = frozenset(("raise", "warn", "cpp"))
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_SIZE
    context: int = 18


@dataclass(frozen=True, slots=True)
class Failure:
    """A site whose pattern failed its self-test, and why."""

    site: Site
    pattern: str
    reason: str


@dataclass
class MineResult:
    """Everything one run found; ``wrappers`` are the skeletons to write."""

    source: str
    wrappers: list[dict] = field(default_factory=list)
    sites: Counter[str] = field(default_factory=Counter)  # per kind
    files_read: int = 0
    files_with_sites: int = 0
    without_message: int = 0
    failures: list[Failure] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    seconds: float = 0.0

    @property
    def total_sites(self) -> int:
        return sum(self.sites.values())


def _now() -> str:
    """RFC 3339 in UTC with milliseconds, as the upstream sample writes it."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _suffixes(kinds: frozenset[SiteKind]) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    if kinds & {"raise", "warn", "log"}:
        out += PYTHON_SUFFIXES
    if "cpp" in kinds:
        out += CPP_SUFFIXES
    return out


def mine(source: str, options: Options) -> MineResult:
    """Mine ``source`` (a folder, an archive or an installed package; see ``sources.py``)."""
    started = time.perf_counter()
    selection = Selection(
        _suffixes(options.kinds),
        options.include,
        options.exclude,
        options.max_file_size,
        options.prefix,
    )
    tree = open_source(source, selection)
    result = MineResult(source, notes=list(tree.notes))
    commit = options.commit
    if commit is None and tree.git_version is not None:
        commit = tree.git_version
        result.notes.append(f"commit {commit} read from {tree.git_version_from} (git_version)")
    if tree.packaged and not options.prefix:
        result.notes.append(
            "paths are as the package lays them out (e.g. torch/nn/functional.py); if the "
            "repository keeps the package elsewhere, give --prefix (e.g. --prefix src/)"
        )
    if commit is None or options.repo is None:
        result.notes.append("githubUrl is null: it needs both --repo and --commit")
    result.commit = commit
    stamp = _now()
    origin = Origin(options.repo, commit, stamp)
    slugs: Counter[str] = Counter()
    occurrences: Counter[tuple[str, str]] = Counter()
    for file in tree.files:
        if file.data is None:
            result.skipped.append((file.path, file.skipped or "skipped"))
            continue
        scanned = _scan(file, options.kinds)
        if isinstance(scanned, str):
            result.skipped.append((file.path, scanned))
            continue
        result.files_read += 1
        sites, lines = scanned
        if sites:
            result.files_with_sites += 1
        for site in sites:
            result.sites[site.kind] += 1
            if site.pieces is None or not literal_text(site.pieces):
                result.without_message += 1  # e.g. raise ValueError(msg), msg built elsewhere
                continue
            tested = made_and_tested(site.pieces, site.rendering)
            if tested.failure is not None:
                result.failures.append(Failure(site, tested.pattern, tested.failure))
                continue
            base = slug_words(site)
            slugs[base] += 1
            slug = base if slugs[base] == 1 else f"{base}-{slugs[base]}"
            key = (site.path, tested.pattern)
            record = skeleton(
                site,
                tested,
                lines,
                origin,
                context=options.context,
                slug=slug,
                occurrence=occurrences[key],
            )
            occurrences[key] += 1
            result.wrappers.append(wrapper(record, stamp))
    result.seconds = time.perf_counter() - started
    return result


def _scan(file: SourceFile, kinds: frozenset[SiteKind]) -> tuple[list[Site], list[str]] | str:
    """The file's sites and lines, or one line saying why it cannot be mined."""
    assert file.data is not None
    if file.path.lower().endswith(PYTHON_SUFFIXES):
        text = _python_text(file.data)
        if isinstance(text, tuple):
            return text[1]
        try:
            tree = ast.parse(text, filename=file.path)
        except SyntaxError as exc:
            return f"does not parse (line {exc.lineno}: {exc.msg})"
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"does not parse ({type(exc).__name__})"
        try:
            sites = python_sites(tree, file.path, kinds, text)
        except RecursionError:
            return "too deeply nested to read"
        return sites, _LINE_BREAK.split(text)
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    return cpp_sites(Source(text), file.path), _LINE_BREAK.split(text)


def _python_text(data: bytes) -> str | tuple[None, str]:
    """The file's text in its declared encoding (PEP 263), or (None, why not)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError) as exc:
        return None, f"bad encoding declaration ({exc})"
    except UnicodeDecodeError as exc:
        return None, f"not text in its encoding (byte {exc.start})"
    return text.removeprefix("\ufeff")
