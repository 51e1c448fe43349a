"""A mined site -> a schema-v2 record skeleton: exact facts, and no text yet.

The facts come from the source and the command line only: ``repo`` and ``analyzedSha`` as
given (null when not given: never invented), ``filePath`` as in the repository, the site's
``lineNumber``, ``sourceCode`` = the exact lines ``sourceCodeStart..sourceCodeEnd`` (``context``
lines around the site, and the whole statement), ``githubUrl`` pinned to the commit in the
upstream sample's form ``https://github.com/OWNER/NAME/blob/SHA/PATH#LSTART-LEND``, the class,
the pattern and a sample ``errorMessage`` rendered from the pieces.

What only a person can write (documentation, trigger scenarios, common situations,
solutions, example fix, ...) is left null or empty, and the record is marked as a skeleton:
the tag ``skeleton`` and the one placeholder solution :data:`SKELETON_SOLUTION`. A skeleton
is not a shipped record: ``diagnose dataset validate`` reports every skeleton, and the shipped
dataset must hold none (a test checks it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from diagnose.records.mine.pattern import Tested, pattern_line
from diagnose.records.mine.pieces import Lit
from diagnose.records.mine.sites import Site

SKELETON_TAG = "skeleton"
SKELETON_SOLUTION = "SKELETON: write the solutions for this error before the record is shipped."
TEXT_FIELDS = ("documentation", "triggerScenarios", "commonSituations", "solutions")
_WORD = re.compile(r"[a-z0-9]+")
MAX_SLUG_WORDS = 8


def is_skeleton(record: Mapping[str, Any] | Any) -> bool:
    """Whether a record (a dict or a model) is still a mined skeleton without its text."""
    get = record.get if isinstance(record, Mapping) else lambda k: getattr(record, k, None)
    return SKELETON_TAG in (get("tags") or ()) or SKELETON_SOLUTION in (get("solutions") or ())


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the mined tree comes from: the repository and commit its paths are facts of."""

    repo: str | None
    commit: str | None
    analyzed_at: str  # RFC 3339, UTC


def github_url(repo: str | None, commit: str | None, path: str, start: int, end: int) -> str | None:
    """The permalink of lines ``start..end``; None without both a repository and a commit."""
    if not repo or not commit:
        return None
    return f"https://github.com/{repo}/blob/{commit}/{quote(path, safe='/')}#L{start}-L{end}"


def slug_words(site: Site) -> str:
    """Kebab-case words of the message's literal text (``mat1-and-mat2-shapes-...``)."""
    text = " ".join(p.text for p in pattern_line(site.pieces or ()) if isinstance(p, Lit))
    words = _WORD.findall(text.lower())[:MAX_SLUG_WORDS]
    slug = "-".join(words)[:120].strip("-")
    return slug or "site"


def record_id(repo: str | None, path: str, pattern: str, occurrence: int) -> str:
    """16 hex digits, stable while the site's file and message stay (lines may move)."""
    key = "\0".join([repo or "", path, pattern, str(occurrence)])
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def skeleton(
    site: Site,
    tested: Tested,
    lines: Sequence[str],
    origin: Origin,
    *,
    context: int,
    slug: str,
    occurrence: int = 0,
) -> dict[str, Any]:
    """The record of one site whose pattern passed its self-test, in the upstream key order."""
    start = max(1, site.line - context)
    end = min(len(lines), max(site.end_line, site.line + context))
    return {
        "id": record_id(origin.repo, site.path, tested.pattern, occurrence),
        "repo": origin.repo,
        "slug": slug,
        "errorCode": None,
        "errorMessage": tested.message,
        "messagePattern": tested.pattern,
        "errorType": site.error_type,
        "errorClass": site.error_class,
        "httpStatus": None,
        "severity": site.severity,
        "filePath": site.path,
        "lineNumber": site.line,
        "sourceCode": "\n".join(lines[start - 1 : end]),
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": github_url(origin.repo, origin.commit, site.path, start, end),
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": [SKELETON_SOLUTION],
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": [SKELETON_TAG],
        "backgroundTag": None,
        "analyzedSha": origin.commit,
        "analyzedAt": origin.analyzed_at,
        "schemaVersion": 2,
    }


def wrapper(record: dict[str, Any], dataset_version: str | None) -> dict[str, Any]:
    """The upstream file item: ``{"record": ..., "datasetVersion": ...}``."""
    return {"record": record, "datasetVersion": dataset_version}
