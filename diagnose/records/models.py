"""Pydantic models of an error record (upstream format, schemaVersion 2) and of its wrapper.

They mirror ``dataset/schema.json`` field for field; a property-based test keeps the two in
agreement. Attribute names are the upstream JSON keys (camelCase) on purpose: code that reads
records (the matcher, the renderers) and people who read the JSON use the same names.

The models are strict (no "5" -> 5 coercion) because JSON Schema is strict; the one leniency is
JSON Schema's own: an integral float such as ``282.0`` is an integer.

Two rules JSON Schema cannot express are checked here and by the loader (see ``rules.py``):
``messagePattern`` compiles as a Python regular expression, and
``sourceCodeStart <= lineNumber <= sourceCodeEnd`` for those that are present.

Speed: the loader validates whole files through these models, so every constraint that
pydantic can check in Rust is written as a schema constraint (``pattern=``, ``ge=``,
``Literal``, ``min_length``), and what needs Python (line order, unique tags) is one model
validator: one Python call per record instead of one per field. ``messagePattern`` is first
matched in Rust against the recogniser of patterns known to compile (``patterns.py``); only a
pattern outside that subset is compiled by ``re``, in a second union branch. Integral floats take
a second union branch that only runs for floats. ``cache_strings="keys"``: record values are
almost all distinct, so caching them gains nothing (measured) and only holds memory.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from diagnose.records.patterns import SAFE_SUBSET_RUST, pattern_error
from diagnose.records.rules import line_order_error

HEX_ID = r"^[0-9a-f]{8,64}$"
KEBAB = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
REPO = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
ERROR_TYPE = r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$"
ERROR_CLASS = r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$"
GITHUB_URL = r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[^\s]*$"
SHA40 = r"^[0-9a-f]{40}$"
DATETIME = (
    r"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
)


def _unique_error(items: list[str]) -> str | None:
    if len(set(items)) == len(items):
        return None
    seen: set[str] = set()
    dup = next(x for x in items if x in seen or seen.add(x))
    return f"duplicate item {dup!r}"


def _union(*members: Any) -> Any:
    """``A | B | ...`` tried left to right (the first member that accepts the value wins)."""
    union = members[0]
    for member in members[1:]:
        union = union | member
    return Annotated[union, Field(union_mode="left_to_right")]


def _integer(**bounds: int) -> Any:
    """An integer within ``bounds``; JSON Schema also counts an integral float (282.0) as an
    integer, which becomes the int 282 (a Python call only for floats, never for bools);
    an infinite or NaN float is rejected like any other non-integer."""
    integral = Annotated[
        float, Field(multiple_of=1, allow_inf_nan=False, **bounds), AfterValidator(int)
    ]
    return _union(Annotated[int, Field(**bounds)], integral)


def _compiles(pattern: str) -> str:
    reason = pattern_error(pattern)
    if reason is not None:
        raise ValueError(reason)
    return pattern


Text = Annotated[str, Field(min_length=1)]
RegexText = _union(
    Annotated[str, Field(min_length=1, pattern=SAFE_SUBSET_RUST)],
    Annotated[str, Field(min_length=1), AfterValidator(_compiles)],
)
Line = _union(_integer(ge=1), None)
Pattern = lambda p: Annotated[str, Field(pattern=p)]  # noqa: E731
NullablePattern = lambda p: Annotated[str, Field(pattern=p)] | None  # noqa: E731
_CONFIG = ConfigDict(extra="forbid", strict=True, frozen=True, cache_strings="keys")


class ErrorRecord(BaseModel):
    """One error: its message and pattern, where it is raised, what it means, how to fix it."""

    model_config = _CONFIG

    id: Pattern(HEX_ID)
    repo: NullablePattern(REPO)
    slug: Annotated[str, Field(pattern=KEBAB, max_length=200)]
    errorCode: Text | None
    errorMessage: Text
    messagePattern: RegexText
    errorType: Pattern(ERROR_TYPE)
    errorClass: NullablePattern(ERROR_CLASS)
    httpStatus: _union(_integer(ge=100, le=599), None)
    severity: Literal["fatal", "critical", "error", "warning", "info"]
    filePath: Text | None
    lineNumber: Line
    sourceCode: str | None
    sourceCodeStart: Line
    sourceCodeEnd: Line
    githubUrl: NullablePattern(GITHUB_URL)
    documentation: Text | None
    triggerScenarios: Text | None
    commonSituations: Text | None
    solutions: Annotated[list[Text], Field(min_length=1)]
    exampleFix: Text | None
    handlingStrategy: NullablePattern(KEBAB)
    validationCode: Text | None
    typeGuard: Text | None
    tryCatchPattern: Text | None
    preventionTips: list[Text]
    tags: list[Pattern(KEBAB)]
    backgroundTag: Text | None
    analyzedSha: NullablePattern(SHA40)
    analyzedAt: NullablePattern(DATETIME)
    schemaVersion: _union(Literal[2], _integer(ge=2, le=2))

    @model_validator(mode="after")
    def _rules(self) -> ErrorRecord:
        """The checks pydantic cannot run natively, in one Python call per record."""
        problem = line_order_error(self.lineNumber, self.sourceCodeStart, self.sourceCodeEnd)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {problem[1]}")
        reason = _unique_error(self.tags)
        if reason is not None:
            raise ValueError(f"tags: {reason}")
        return self


class RecordWrapper(BaseModel):
    """How the upstream dataset ships a record: with the version of the dataset build."""

    model_config = _CONFIG

    record: ErrorRecord
    datasetVersion: NullablePattern(DATETIME)


def _item_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "wrapper" if "record" in value else "record"
    if isinstance(value, RecordWrapper):
        return "wrapper"
    return "record"


# One item of a dataset file: a wrapper when it has a "record" key, else a bare record (the same
# dispatch as the schema's if/then/else).
Item = Annotated[
    Annotated[RecordWrapper, Tag("wrapper")] | Annotated[ErrorRecord, Tag("record")],
    Discriminator(_item_kind),
]
