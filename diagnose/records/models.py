"""Pydantic models of an error record (upstream format, schemaVersion 2) and of its wrapper.

They mirror ``dataset/schema.json`` field for field; a property-based test keeps the two in
agreement. Attribute names are the upstream JSON keys (camelCase) on purpose: code that reads
records (the matcher, the renderers) and people who read the JSON use the same names.

The models are strict (no "5" -> 5 coercion) because JSON Schema is strict; the one leniency is
JSON Schema's own: an integral float such as ``282.0`` is an integer.

Two rules JSON Schema cannot express are checked here and by the loader (see ``rules.py``):
``messagePattern`` compiles as a Python regular expression, and
``sourceCodeStart <= lineNumber <= sourceCodeEnd`` for those that are present.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from diagnose.records.patterns import pattern_error
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


def _integral_float_to_int(value: Any) -> Any:
    """JSON Schema counts 282.0 as an integer; accept it as 282 (but never a bool)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _unique(items: list[str]) -> list[str]:
    if len(set(items)) != len(items):
        seen: set[str] = set()
        dup = next(x for x in items if x in seen or seen.add(x))
        raise ValueError(f"duplicate item {dup!r}")
    return items


Text = Annotated[str, Field(min_length=1)]
Line = Annotated[Annotated[int, Field(ge=1)] | None, BeforeValidator(_integral_float_to_int)]
Pattern = lambda p: Annotated[str, Field(pattern=p)]  # noqa: E731
NullablePattern = lambda p: Annotated[str, Field(pattern=p)] | None  # noqa: E731


class ErrorRecord(BaseModel):
    """One error: its message and pattern, where it is raised, what it means, how to fix it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: Pattern(HEX_ID)
    repo: NullablePattern(REPO)
    slug: Annotated[str, Field(pattern=KEBAB, max_length=200)]
    errorCode: Text | None
    errorMessage: Text
    messagePattern: Text
    errorType: Pattern(ERROR_TYPE)
    errorClass: NullablePattern(ERROR_CLASS)
    httpStatus: Annotated[
        Annotated[int, Field(ge=100, le=599)] | None, BeforeValidator(_integral_float_to_int)
    ]
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
    tags: Annotated[list[Pattern(KEBAB)], AfterValidator(_unique)]
    backgroundTag: Text | None
    analyzedSha: NullablePattern(SHA40)
    analyzedAt: NullablePattern(DATETIME)
    schemaVersion: Annotated[Literal[2], BeforeValidator(_integral_float_to_int)]

    @field_validator("messagePattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        reason = pattern_error(value)
        if reason is not None:
            raise ValueError(reason)
        return value

    @model_validator(mode="after")
    def _lines_in_order(self) -> ErrorRecord:
        problem = line_order_error(self.lineNumber, self.sourceCodeStart, self.sourceCodeEnd)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {problem[1]}")
        return self


class RecordWrapper(BaseModel):
    """How the upstream dataset ships a record: with the version of the dataset build."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

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
