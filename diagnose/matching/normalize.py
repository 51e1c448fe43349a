"""Fold the parts of an error message that change from run to run into placeholders.

``Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)`` and ``Tried to allocate
20.00 MiB (GPU 3; 79.15 GiB total capacity)`` are the same error: numbers, hex ids, paths,
URLs, quoted names, shapes, dtypes and devices are replaced by ``<num>``, ``<hex>``,
``<path>``, ``<url>``, ``<q>``, ``<shape>``, ``<dtype>``, ``<device>`` before two messages
are compared. One combined regular expression does it in a single pass (a chain of
substitutions cost ~20 us a message, too slow for indexing 100k records).
"""

from __future__ import annotations

import re

_PARTS = [
    ("url", r"\bhttps?://[^\s'\"`<>)]+"),
    (
        "path",
        r"(?<![\w/.])(?:[A-Za-z]:\\|~?/|\.{1,2}/)[\w.\-+@~/\\]*[\w/]|\b[\w\-]+(?:/[\w.\-]+)*\.(?:py|cpp|cu|h|hpp|so|pt|pth|bin|json|yaml|yml|ckpt|safetensors)\b",
    ),
    ("q", r"(?<!\w)'[^'\n]{1,80}'(?!\w)|(?<!\w)\"[^\"\n]{1,80}\"(?!\w)|`[^`\n]{1,80}`"),
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
_COMBINED = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _PARTS))
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"(?<![<\w])[a-z][a-z0-9_]+(?![\w>])")
PLACEHOLDERS = frozenset(f"<{name}>" for name, _ in _PARTS)

STOPWORDS = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "and", "or"}
    | {"is", "are", "was", "be", "been", "it", "its", "this", "that", "as", "but", "if", "then"}
    | {"than", "so", "please"}
)


def _placeholder(m: re.Match[str]) -> str:
    return f"<{m.lastgroup}>"


def normalize(text: str) -> str:
    """Return ``text`` with run-specific parts folded, lowercased, whitespace collapsed."""
    return _SPACE.sub(" ", _COMBINED.sub(_placeholder, text)).strip().lower()


def tokens(normalized: str) -> list[str]:
    """Distinct content words of a normalised text (no placeholders, no stopwords)."""
    seen: dict[str, None] = {}
    for tok in _TOKEN.findall(normalized):
        if tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)


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
