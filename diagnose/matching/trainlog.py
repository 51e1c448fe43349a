"""Read the metrics a training log prints, and find where its loss or gradient norm went non-finite.

Training loops print their progress in many shapes, and a run whose loss turned ``nan``
raises nothing: the log is all a user has to paste. The shapes share one grammar, so this
module reads that grammar instead of knowing each framework:

* ``key: value`` / ``key=value`` / ``'key': value`` / ``key value`` pairs on one line, with
  keys of one or two words (``loss``, ``loss_cls``, ``grad_norm``, ``grad norm``,
  ``learning rate``, ``lr``, ``loss scale``, ``iteration``, ``step``) and values that are
  numbers, ``nan``/``inf`` in any case, a quoted number, ``tensor(nan, ...)``, or a counter
  ``[ 500/2931]`` (HF Trainer's dicts, tqdm and Lightning bars, mmengine and mmdet, Megatron,
  DeepSpeed, detectron2's event lines, hand-written prints);
* a metric printed as a named tuple, ``loss (min, avg, max): (-0.276, nan, 1152.6)``, read as
  ``loss_min``, ``loss_avg``, ``loss_max`` (the average is the row's loss); printed tensors
  ``tensor(-inf., device='cuda:0')``; lines tagged by a launcher (``[rank0]:``, mpirun and
  horovod's ``[1,0]<stdout>:``, Ray's ``(pid=...)``);
* a table: a header line of column names followed by rows of values (YOLO's epoch lines);
* guard messages that say the loss became non-finite without printing it
  (``Loss became infinite or NaN at iteration=27!``, ``Loss is nan, stopping training``);
* loss-scaler messages (``[deepspeed] OVERFLOW! ... Attempted loss scale: 64, reducing to 32``,
  ``Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0``,
  ``overflow detected, setting loss scale to: 64.0``).

A line is a metric row only when it holds a loss or a gradient norm; numbers elsewhere (an
eta, a memory size, a version) are never read as training metrics. The reading is bounded:
at most :data:`MAX_CHARS` characters in :data:`MAX_LINES` lines of at most
:data:`MAX_LINE_CHARS` characters each, each value's key found by a bounded backward scan.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from diagnose.matching.logtext import LINE_PREFIX
from diagnose.safetext import strip_escapes

MAX_LINES = 100_000
MAX_LINE_CHARS = 4_000
MAX_CHARS = 8_000_000  # of a log, read from its start: the first non-finite row is what counts
MAX_ROWS = 5_000  # metric rows kept: the first ones and those around the first non-finite one

# "tensor(-inf., device='cuda:0')": some prints put a point after nan/inf too
_NUMBER = r"[-+]?(?:(?:nan|inf(?:inity)?)\.?|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"
# One or two words of a key, then a separator, then a value. The separator may be nothing but
# spaces (``loss 2.31``); quotes and brackets around keys and values are allowed.
# A value, then (looking back from it over a bounded window) the key of one or two words and
# the separator before it: a separator may be nothing but spaces (``loss 2.31``), and quotes
# and brackets around keys and values are allowed. Values are found first so that the work
# per line stays linear whatever the line holds.
_VALUE = re.compile(
    rf"(?<![\w.])(?:tensor\()?(?P<value>{_NUMBER})(?![\w.%])(?:\s*/\s*\d+\s*\]?)?", re.IGNORECASE
)
# A key, the names of a tuple's parts, then the tuple: "loss (min, avg, max): (-0.27, nan, 1152.6)"
_TUPLE = re.compile(
    r"(?P<key>[A-Za-z][\w./-]{0,40})\s*\((?P<names>[A-Za-z]\w{0,20}(?:\s*,\s*[A-Za-z]\w{0,20}){1,7})\)"
    r"\s*[:=]?\s*\((?P<values>[^()]{1,300})\)"
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")
_MAX_KEY = 40
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|cpp|cc|cu|cuh|h|hpp|c)$")
_WORDS = re.compile(r"[A-Za-z][\w./-]*")

_GRAD_NORM_KEYS = {
    "grad_norm",
    "grad norm",
    "gnorm",
    "grad-norm",
    "gradient_norm",
    "gradient norm",
    "total_norm",
    "grad_norm_total",
    "grad",
}
_LR_KEYS = {
    "lr",
    "learning_rate",
    "learning rate",
    "learning-rate",
    "lr0",
    "train/lr",
    "train/learning_rate",
}
_SCALE_KEYS = {"loss_scale", "loss scale", "loss-scale", "scale", "loss_scaler", "lscale"}
_STEP_KEYS = ("global_step", "step", "iteration", "iter", "steps", "it", "batch", "epoch")
# Loss columns of tables whose header does not say "loss" (YOLO's box/obj/cls columns).
_TABLE_LOSS_COLUMNS = {"box", "obj", "cls", "dfl", "seg", "total"}

_GUARD = re.compile(
    r"\b(?:loss|losses|gradients?|grad(?:_| )?norm)\b[^\n]{0,60}?"
    r"\b(?:is|are|became|become|becomes|went|turned|got|detected|was|were)\b[^\n]{0,30}?"
    r"\b(?:nan|inf|infinite|infinity|non-?finite)\b",
    re.IGNORECASE,
)
_SCALE_DOWN = re.compile(
    r"(?:attempted loss scale:?\s*(?P<old>[\d.e+]+)\s*,\s*reducing to\s*(?P<new>[\d.e+]+)"
    r"|reducing loss scale to\s*(?P<to>[\d.e+]+)"
    r"|setting loss scale to:?\s*(?P<set>[\d.e+]+))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LogRow:
    """One line of the log that printed a loss or a gradient norm (or said one went bad)."""

    line: int  # 1-based line number in the pasted text
    text: str
    step: float | None = None
    step_key: str | None = None
    loss: float | None = None
    loss_key: str | None = None
    grad_norm: float | None = None
    lr: float | None = None
    loss_scale: float | None = None
    nonfinite: tuple[tuple[str, float], ...] = ()  # loss / gradient keys whose value is nan or inf
    guard: bool = False  # a message saying the loss became non-finite, without its value

    @property
    def finite(self) -> bool:
        return not self.nonfinite and not self.guard


@dataclass(frozen=True)
class ScaleChange:
    """A loss scaler lowering its scale after an overflow."""

    line: int
    scale: float


@dataclass
class TrainingLog:
    """What a pasted log shows of a training run's metrics."""

    rows: list[LogRow] = field(default_factory=list)
    scale_changes: list[ScaleChange] = field(default_factory=list)
    lines_read: int = 0

    @property
    def first_nonfinite(self) -> LogRow | None:
        return next((r for r in self.rows if not r.finite), None)

    @property
    def before(self) -> list[LogRow]:
        """The metric rows before the first non-finite one (all rows when there is none)."""
        bad = self.first_nonfinite
        return [r for r in self.rows if bad is None or r.line < bad.line]


def read_training_log(text: str) -> TrainingLog:
    """The metric rows, loss-scale changes and first non-finite row of a pasted log."""
    log = TrainingLog()
    header: list[str] | None = None
    for number, raw in enumerate(_lines(text), 1):
        log.lines_read = number
        line = _clean(raw)
        if not line:
            continue
        scale = _scale_change(line)
        if scale is not None:
            log.scale_changes.append(ScaleChange(number, scale))
        row = _guard_row(number, line) or _pairs_row(number, line)
        if row is None and header is not None:
            row = _table_row(number, line, header)
        columns = _header(line)
        if columns is not None:
            header = columns
        if row is not None:
            _keep(log.rows, row)
    return log


def is_nonfinite(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)


def _lines(text: str) -> Iterable[str]:
    # tqdm redraws its bar with \r: each redraw is its own line, the last one wins nothing.
    text = text[:MAX_CHARS]
    for i, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if i >= MAX_LINES:
            return
        yield line[:MAX_LINE_CHARS]


def _clean(line: str) -> str:
    line = LINE_PREFIX.sub("", strip_escapes(line))
    return line.replace("**", "").replace("`", "").strip()


def _keep(rows: list[LogRow], row: LogRow) -> None:
    """Keep the first rows and every row from the first non-finite one on, up to a bound."""
    if len(rows) < MAX_ROWS:
        rows.append(row)
        return
    if any(not r.finite for r in rows):
        return  # the event and what led to it are kept already
    # Before any event, drop the oldest row but the first few, so the rows before it stay.
    del rows[10]
    rows.append(row)


def _value(text: str) -> float | None:
    if text.endswith(".") and text[-2:-1].isalpha():
        text = text[:-1]
    try:
        return float(text)
    except ValueError:
        return None


def _kind(key: str) -> str | None:
    k = key.lower().strip("'\"[]")
    if _SOURCE_FILE.search(k):  # "loss_scaler.py:183" is where a message came from
        return None
    if k in _GRAD_NORM_KEYS:
        return "grad_norm"
    if k in _LR_KEYS:
        return "lr"
    if k in _SCALE_KEYS:
        return "loss_scale"
    if k in _STEP_KEYS:
        return "step"
    if "loss" in k:
        return "loss"
    return None


def _pairs(line: str) -> list[tuple[str, str, float]]:
    """(key, kind, value) for every key-value pair of the line, keys normalised."""
    found, line = _tuple_pairs(line)
    for m in _VALUE.finditer(line):
        value = _value(m.group("value"))
        if value is None:
            continue
        key = _key_before(line, m.start())
        if key is None:
            continue
        kind = _kind(key)
        if kind is None and " " in key:  # "time: 0.2 loss" -> only the last word is the key
            key = key.rsplit(" ", 1)[1]
            kind = _kind(key)
        if kind is not None:
            found.append((key.lower(), kind, value))
    return found


def _tuple_pairs(line: str) -> tuple[list[tuple[str, str, float]], str]:
    """The parts of each named tuple of a metric (``loss_min``, ``loss_avg``, ...), and the
    line with those tuples blanked so their numbers are not read again as other pairs."""
    found: list[tuple[str, str, float]] = []
    if "(" not in line:
        return found, line
    for m in _TUPLE.finditer(line):
        kind = _kind(m.group("key"))
        names = [n.strip().lower() for n in m.group("names").split(",")]
        values = [_value(v.strip()) for v in m.group("values").split(",")]
        if kind is None or len(names) != len(values):
            continue
        key = m.group("key").lower()
        found += [
            (f"{key}_{n}", kind, v) for n, v in zip(names, values, strict=True) if v is not None
        ]
        line = line[: m.start()] + " " * (m.end() - m.start()) + line[m.end() :]
    return found, line


def _key_before(line: str, end: int) -> str | None:
    """The one or two words of the key that ends just before a value at ``end``, if any.

    Scans backwards over the separator (``:``, ``=``, ``：`` or spaces, with quotes and
    brackets) and then the key's characters, so the work is bounded by the key's length.
    """
    i = end
    if line.endswith("tensor(", 0, i):
        i -= len("tensor(")
    j = i
    while j > 0 and i - j < 12 and line[j - 1] in " \t'\"[":
        j -= 1
    spaced = any(c in " \t" for c in line[j:i])
    if j > 0 and line[j - 1] in ":=\uff1a":
        j -= 1
    elif not spaced:
        return None
    while j > 0 and line[j - 1] in " \t'\"]" and i - j < 24:
        j -= 1
    second = _word_before(line, j)
    if second is None:
        return None
    start = j - len(second)
    if start > 1 and line[start - 1] == " ":
        first = _word_before(line, start - 1)
        if first is not None:
            return f"{first} {second}"
    return second


def _word_before(line: str, end: int) -> str | None:
    k = end
    while k > 0 and end - k < _MAX_KEY and line[k - 1] in _KEY_CHARS:
        k -= 1
    word = line[k:end]
    while word and not word[0].isalpha():
        word = word[1:]
    return word or None


def _pairs_row(number: int, line: str) -> LogRow | None:
    pairs = _pairs(line)
    if not any(kind in ("loss", "grad_norm") for _, kind, _ in pairs):
        return None
    return _row(number, line, pairs)


def _row(
    number: int, line: str, pairs: list[tuple[str, str, float]], guard: bool = False
) -> LogRow:
    first: dict[str, tuple[str, float]] = {}
    losses: list[tuple[str, float]] = []
    for key, kind, value in pairs:
        if kind == "loss":
            losses.append((key, value))
        first.setdefault(kind, (key, value))
    loss_key, loss = _main_loss(losses)
    step_key, step = _step(pairs)
    nonfinite = {
        key: value
        for key, kind, value in reversed(pairs)
        if kind in ("loss", "grad_norm") and is_nonfinite(value)
    }
    return LogRow(
        line=number,
        text=line,
        step=step,
        step_key=step_key,
        loss=loss,
        loss_key=loss_key,
        grad_norm=first.get("grad_norm", (None, None))[1],
        lr=first.get("lr", (None, None))[1],
        loss_scale=first.get("loss_scale", (None, None))[1],
        nonfinite=tuple(reversed(nonfinite.items())),
        guard=guard,
    )


def _main_loss(losses: list[tuple[str, float]]) -> tuple[str | None, float | None]:
    """The total loss of a line that prints its parts too (``loss`` over ``loss_cls``)."""
    if not losses:
        return None, None
    preferred_keys = ("loss", "total_loss", "train_loss", "train/loss", "lm loss", "[loss]")
    for preferred in (*preferred_keys, "loss_avg", "loss_mean"):
        for key, value in losses:
            if key == preferred:
                return key, value
    return losses[0]


def _step(pairs: list[tuple[str, str, float]]) -> tuple[str | None, float | None]:
    steps = {key: value for key, kind, value in pairs if kind == "step"}
    for key in _STEP_KEYS:
        if key in steps and math.isfinite(steps[key]):
            return key, steps[key]
    return None, None


def _header(line: str) -> list[str] | None:
    """Column names of a table header: only words, several of them, one naming a loss."""
    words = line.split()
    if len(words) < 3 or len(words) > 20 or any(not _WORDS.fullmatch(w) for w in words):
        return None
    lowered = [w.lower() for w in words]
    if not any("loss" in w or w in _TABLE_LOSS_COLUMNS for w in lowered):
        return None
    return lowered


def _table_row(number: int, line: str, header: list[str]) -> LogRow | None:
    """A row of values under a header (``1/99  2.64G  nan  nan  nan  4  416: 100%|...``)."""
    cells = line.split()[: len(header)]
    if len(cells) < len(header):
        return None
    pairs: list[tuple[str, str, float]] = []
    for name, cell in zip(header, cells, strict=True):
        cell = cell.rstrip(":")
        if name in ("epoch", "step", "iter", "iteration") and re.fullmatch(r"\d+(?:/\d+)?", cell):
            pairs.append((name, "step", float(cell.split("/")[0])))
            continue
        value = _value(cell)
        if value is None:
            if not re.fullmatch(r"[\d.]+[KMGT]?i?B?", cell, re.IGNORECASE):
                return None  # not a row of this table
            continue
        kind = _kind(name) or ("loss" if name in _TABLE_LOSS_COLUMNS else None)
        if kind is not None:
            pairs.append((name, kind, value))
    if not any(kind == "loss" for _, kind, _ in pairs):
        return None
    return _row(number, line, pairs)


def _guard_row(number: int, line: str) -> LogRow | None:
    """A message that the loss became non-finite, with the step it names if any."""
    if not _GUARD.search(line):
        return None
    steps = [(k, kind, v) for k, kind, v in _pairs(line) if kind == "step"]
    return _row(number, line, steps, guard=True)


def _scale_change(line: str) -> float | None:
    m = _SCALE_DOWN.search(line)
    if m is None:
        return None
    return _value(m.group("new") or m.group("to") or m.group("set"))
