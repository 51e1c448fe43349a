"""Fold the parts of an error message that change from run to run into placeholders.

``Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)`` and ``Tried to allocate
20.00 MiB (GPU 3; 79.15 GiB total capacity)`` are the same error: numbers, hex ids, paths,
URLs, quoted names, shapes, dtypes and devices are replaced by ``<num>``, ``<hex>``,
``<path>``, ``<url>``, ``<q>``, ``<shape>``, ``<dtype>``, ``<device>`` before two messages
are compared. One combined regular expression does it in a single pass (a chain of
substitutions cost ~20 us a message, too slow for indexing 100k records).

The combined expression tries all its alternatives at every position (~70 us a message), so
each alternative has a *gate*: a cheap necessary condition (a substring, or a digit) checked
first. Only the alternatives whose gate holds are combined, in the same order, into the
expression that runs (compiled once per combination). An alternative whose gate fails cannot
match anywhere in the text, so leaving it out changes nothing in the result; a message with
no digit, quote, slash or type/device word skips the expression altogether.
"""

from __future__ import annotations

import re

_PARTS = [
    ("url", r"\bhttps?://[^\s'\"`<>)]+"),
    (
        "path",
        r"(?<![\w/.])(?:[A-Za-z]:\\|~?/|\.{1,2}/)[\w.\-+@~/\\]*[\w/]|\b[\w\-]+(?:/[\w.\-]+)*\.(?:py|cpp|cu|h|hpp|so|pt|pth|bin|json|yaml|yml|ckpt|safetensors)\b",
    ),
    # an assertion's condition (Assertion `idx < n` failed) is what the assert is: kept
    (
        "q",
        r"(?<!\w)'[^'\n]{1,80}'(?!\w)|(?<!\w)\"[^\"\n]{1,80}\"(?!\w)|(?<!Assertion )`[^`\n]{1,80}`",
    ),
    (
        "shape",
        r"torch\.Size\(\[[\d,\s]*\]\)|\[\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\]|\(\s*-?\d+\s*,(?:\s*-?\d+\s*,?)*\s*\)|\b\d+(?:\s?x\s?\d+)+\b",
    ),
    ("hex", r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b"),
    (
        "dtype",
        r"\b(?:torch\.|c10::|at::)?(?:float(?:8\w*|16|32|64)|bfloat16|b?float16|int(?:8|16|32|64)|uint(?:8|16|32|64)|complex(?:32|64|128)|Half|BFloat16|Float|Double|Long|Int|Short|Byte|Char|Bool|ComplexFloat|ComplexDouble)\b|\btorch\.(?:half|float|double|long|int|bool)\b",
    ),
    ("device", r"\b(?:cuda|cpu|mps|xla|xpu|hpu|npu|meta)(?::\d+)?\b"),
    ("num", r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:st|nd|rd|th)?(?![\d])"),
]
_DIGIT = re.compile(r"\d")
_EXTENSION = re.compile(r"\.[chpysbj]")  # the start of every extension the path part knows


_DTYPE_HINTS = (
    "float",
    "int",
    "complex",
    "Half",
    "Float",
    "Double",
    "Long",
    "Int",
    "Short",
    "Byte",
    "Char",
    "Bool",
    "torch.",
)
_DEVICE_HINTS = ("cuda", "pu", "mps", "xla", "meta")
_PART_BIT = {name: 1 << bit for bit, (name, _rx) in enumerate(_PARTS)}
_DIGIT_PARTS = _PART_BIT["shape"] | _PART_BIT["hex"] | _PART_BIT["num"]


def _gates(text: str) -> int:
    """Bit mask of the parts of ``_PARTS`` that can match in ``text``.

    Each test is a necessary condition of its part: a part whose bit is clear cannot match.
    """
    mask = _DIGIT_PARTS if _DIGIT.search(text) is not None else 0
    if "://" in text:
        mask |= _PART_BIT["url"]
    if "/" in text or "\\" in text or _EXTENSION.search(text) is not None:
        mask |= _PART_BIT["path"]
    if "'" in text or '"' in text or "`" in text:
        mask |= _PART_BIT["q"]
    if "Size([" in text:
        mask |= _PART_BIT["shape"]
    if any(hint in text for hint in _DTYPE_HINTS):
        mask |= _PART_BIT["dtype"]
    if any(hint in text for hint in _DEVICE_HINTS):
        mask |= _PART_BIT["device"]
    return mask


_COMBINED_BY_MASK: dict[int, re.Pattern[str]] = {}
_TOKEN = re.compile(r"(?<![<\w])[a-z][a-z0-9_]+(?![\w>])")
PLACEHOLDERS = frozenset(f"<{name}>" for name, _ in _PARTS)

STOPWORDS = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "and", "or"}
    | {"is", "are", "was", "be", "been", "it", "its", "this", "that", "as", "but", "if", "then"}
    | {"than", "so", "please"}
)


def _placeholder(m: re.Match[str]) -> str:
    return f"<{m.lastgroup}>"


def _combined_for(text: str) -> re.Pattern[str] | None:
    """The combined expression of the parts that can match in ``text`` (None: no part can)."""
    mask = _gates(text)
    if not mask:
        return None
    combined = _COMBINED_BY_MASK.get(mask)
    if combined is None:
        chosen = [(name, rx) for name, rx in _PARTS if mask & _PART_BIT[name]]
        combined = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in chosen))
        _COMBINED_BY_MASK[mask] = combined
    return combined


def normalize(text: str) -> str:
    """Return ``text`` with run-specific parts folded, lowercased, whitespace collapsed."""
    combined = _combined_for(text)
    if combined is not None:
        text = combined.sub(_placeholder, text)
    return " ".join(text.split()).lower()


def tokens(normalized: str) -> list[str]:
    """Distinct content words of a normalised text (no placeholders, no stopwords)."""
    seen: dict[str, None] = {}
    for tok in _TOKEN.findall(normalized):
        if tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)


_INDEX_WORD = re.compile(r"\b[a-z][a-z0-9_]+\b")


def index_words(text: str) -> set[str]:
    """Distinct lowercase words of a *raw* message, for the similarity index.

    Cheaper than ``tokens(normalize(text))`` (one ``findall``, ~6 us instead of ~30 us), at
    the price of also keeping words of paths and quoted names; both the records and the
    queries are read this way, and the final ranking uses the full normaliser anyway.
    """
    return set(_INDEX_WORD.findall(text.lower())) - STOPWORDS


def short_class(name: str | None) -> str | None:
    """``torch.cuda.OutOfMemoryError`` -> ``OutOfMemoryError``."""
    if not name:
        return None
    return name.strip().rsplit(".", 1)[-1] or None


# A few subclass relations users meet: a record written for the base class still fits.
_PARENTS = {
    "OutOfMemoryError": "RuntimeError",
    "AcceleratorError": "RuntimeError",
    "NotImplementedError": "RuntimeError",
    "DistBackendError": "RuntimeError",
    "DistNetworkError": "RuntimeError",
    "ModuleNotFoundError": "ImportError",
    "FileNotFoundError": "OSError",
    "IndexError": "LookupError",
    "KeyError": "LookupError",
    "ZeroDivisionError": "ArithmeticError",
    "FloatingPointError": "ArithmeticError",
    "OverflowError": "ArithmeticError",
    "UserWarning": "Warning",  # c10's "[W file.cpp:104] Warning: ..." is Python's UserWarning
    "RuntimeWarning": "Warning",
    "DeprecationWarning": "Warning",
    "FutureWarning": "Warning",
}


def class_relation(found: str | None, expected: str | None) -> str | None:
    """``"same"``, ``"related"`` (one derives from the other) or None when unknown/different."""
    a, b = short_class(found), short_class(expected)
    if not a or not b:
        return None
    if a == b:
        return "same"
    if _PARENTS.get(a) == b or _PARENTS.get(b) == a:
        return "related"
    return None
