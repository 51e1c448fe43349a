"""Dumps other debugging tools print at the first nan, read and answered like a traced event.

Two tools users already run print what the tracer records, in their own shape:

* transformers' ``DebugUnderflowOverflow``: the last forward frames before the first inf/nan,
  each a module (``encoder.block.2.layer.1.dropout Dropout``) with the abs min and abs max of
  its weights, inputs and outputs, then ``ValueError: DebugUnderflowOverflow: inf/nan
  detected``. The frame where a non-finite value first appears, from finite inputs, is where
  it was born: its module, which of input / output / weight, and the magnitudes around it.
* torch's anomaly mode: ``Error detected in LogBackward0. Traceback of forward call that
  caused the error:`` with the forward stack, and ``Function 'LogBackward0' returned nan
  values in its 0th output.``: the op whose gradient went nan and the user's line that ran it.

Either becomes a Report with that event and frames, and goes through the same facts, symptoms
and rules as a traced run. A dump shows the producer but neither the step history nor the
config, so confidences are scaled by :data:`DUMP_CONFIDENCE`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from diagnose.formatting import num
from diagnose.matching.divergence import Cause, RankedFix, rank_evidence

DUMP_CONFIDENCE = 0.8  # the producer is known; the history and the config the rules read are not
MAX_FRAMES = 500
_FP16_MAX = 65504.0
_BF16_FP32_MAX = 3.4028234663852886e38

_DUMP_HEAD = re.compile(r"Detected inf/nan during batch_number=(?P<batch>\d+)")
_MODULE_LINE = re.compile(r"^\s{10,}(?P<name>[\w.\-]*)\s(?P<cls>[A-Za-z_]\w*)\s*$")
_STATS_LINE = re.compile(
    r"^\s*(?P<min>[-+]?(?:\d+\.\d+e[-+]\d+|inf|nan))\s+(?P<max>[-+]?(?:\d+\.\d+e[-+]\d+|inf|nan))"
    r"\s+(?P<ctx>\S+)\s*$"
)
_ANOMALY_HEAD = re.compile(
    r"Error detected in (?P<fn>[\w:<>]+)\. Traceback of forward call that caused the error:"
)
_ANOMALY_MESSAGE = re.compile(
    r"Function '(?P<fn>[\w:<>]+)' returned (?P<value>nan|inf) values in its (?P<n>\d+)\w* output"
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[\d.]*[/\\]")


@dataclass(frozen=True)
class DumpFrame:
    """One module call of a DebugUnderflowOverflow dump: (role, abs min, abs max) per tensor."""

    module: str
    module_type: str
    stats: tuple[tuple[str, float, float], ...]

    def nonfinite(self, role: str) -> list[str]:
        return [
            name
            for name, lo, hi in self.stats
            if _role(name) == role and not (math.isfinite(lo) and math.isfinite(hi))
        ]


@dataclass
class DumpDiagnosis:
    """What a pasted dump shows of the first non-finite value, and what the rules make of it."""

    tool: str  # "DebugUnderflowOverflow" | "anomaly mode"
    what: str
    module: str | None = None
    module_type: str | None = None
    op: str | None = None
    location: str | None = None
    code: str | None = None
    dtype: str | None = None
    dtype_reason: str | None = None
    evidence: list[str] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)
    fixes: list[RankedFix] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "what": self.what,
            "module": self.module,
            "module_type": self.module_type,
            "op": self.op,
            "location": self.location,
            "code": self.code,
            "dtype": self.dtype,
            "dtype_reason": self.dtype_reason,
            "evidence": self.evidence,
            "causes": [c.to_dict() for c in self.causes],
            "fixes": [f.to_dict() for f in self.fixes],
            "confidence_scale": DUMP_CONFIDENCE,
        }


def read_dump(text: str) -> DumpDiagnosis | None:
    """The diagnosis of a DebugUnderflowOverflow or anomaly-mode dump in ``text``, if any."""
    return _underflow_overflow(text) or _anomaly(text)


# --- DebugUnderflowOverflow -------------------------------------------------------------------


def _role(name: str) -> str:
    if name.startswith("input"):
        return "input"
    if name.startswith("output"):
        return "output"
    return "weight"


def dump_frames(text: str) -> list[DumpFrame]:
    """The frames of the last DebugUnderflowOverflow dump in ``text``, oldest first."""
    heads = list(_DUMP_HEAD.finditer(text))
    if not heads:
        return []
    frames: list[DumpFrame] = []
    current: tuple[str, str] | None = None
    stats: list[tuple[str, float, float]] = []
    for line in text[heads[-1].end() :].splitlines():
        module = _MODULE_LINE.match(line)
        numbers = _STATS_LINE.match(line)
        if module and not numbers:
            if current is not None:
                frames.append(DumpFrame(*current, tuple(stats)))
            current, stats = (module.group("name"), module.group("cls")), []
        elif numbers and current is not None:
            stats.append(
                (numbers.group("ctx"), float(numbers.group("min")), float(numbers.group("max")))
            )
        elif (
            line.strip()
            and current is not None
            and "not a tensor" not in line
            and "None" not in line
        ):
            break  # the dump ended (the exception, or the next log line)
        if len(frames) >= MAX_FRAMES:
            break
    if current is not None:
        frames.append(DumpFrame(*current, tuple(stats)))
    return [f for f in frames if f.stats]


def _underflow_overflow(text: str) -> DumpDiagnosis | None:
    frames = dump_frames(text)
    if not frames:
        return None
    index, role = _birth(frames)
    frame = frames[index]
    dtype, reason = _dtype(frames)
    largest_in = _largest(frame, "input")
    weight = _largest(frame, "weight")
    bad = ", ".join(frame.nonfinite(role)) or role
    if role == "output":
        what = (
            f"{bad} of {frame.module or '(the model)'} ({frame.module_type}) is non-finite "
            f"from finite inputs"
        )
    elif role == "weight":
        what = (
            f"the weight {bad} of {frame.module or '(the model)'} ({frame.module_type}) is "
            "already non-finite: an earlier update made it so"
        )
    else:
        what = (
            f"{frame.module or '(the model)'} ({frame.module_type}) received a non-finite "
            f"{bad}: it was born before the dump's first frame"
        )
    evidence = []
    if largest_in is not None:
        evidence.append(
            f"its inputs' |x| max {num(largest_in, 3)}"
            + (f", weights' |x| max {num(weight, 3)}" if weight is not None else "")
        )
    if reason:
        evidence.append(reason)
    diagnosis = DumpDiagnosis(
        tool="DebugUnderflowOverflow",
        what=what,
        module=frame.module,
        module_type=frame.module_type,
        dtype=dtype,
        dtype_reason=reason,
        evidence=evidence,
    )
    report = _report_of_frames(frames, index, role, dtype, what)
    diagnosis.causes, diagnosis.fixes = rank_evidence(report, DUMP_CONFIDENCE)
    return diagnosis


def _birth(frames: list[DumpFrame]) -> tuple[int, str]:
    """The first frame with a non-finite weight or output (inputs finite), else its input."""
    for i, frame in enumerate(frames):
        if frame.nonfinite("weight"):
            return i, "weight"
        if frame.nonfinite("input"):
            return i, "input"
        if frame.nonfinite("output"):
            return i, "output"
    return len(frames) - 1, "output"


def _largest(frame: DumpFrame, role: str) -> float | None:
    values = [hi for name, _, hi in frame.stats if _role(name) == role and math.isfinite(hi)]
    return max(values) if values else None


def _dtype(frames: list[DumpFrame]) -> tuple[str | None, str | None]:
    """The dtype the magnitudes imply, said as an inference, or nothing when they imply none.

    The dump prints no dtype. A largest finite |x| between half of float16's limit and the
    limit itself, before an inf, is what a float16 overflow looks like; anything beyond 65504
    rules float16 out.
    """
    finite = [hi for f in frames for _, _, hi in f.stats if math.isfinite(hi)]
    if not finite:
        return None, None
    top = max(finite)
    if top > _FP16_MAX:
        return None, (
            f"values up to {num(top)} were held, beyond float16's 65504: not a float16 overflow"
        )
    if top >= _FP16_MAX / 2:
        share = top / _FP16_MAX
        return "float16", (
            f"the largest finite |x| {num(top)} is {share:.0%} of float16's limit "
            "65504: the values overflow as float16 does"
        )
    return None, None


def _report_of_frames(
    frames: list[DumpFrame], index: int, role: str, dtype: str | None, what: str
) -> Any:
    from diagnose.report import Event, Frame, Report, ScriptInfo, TensorStats

    def stats(frame: DumpFrame, which: str) -> list[TensorStats]:
        return [
            TensorStats(
                name=name,
                dtype=dtype,
                abs_min=lo if math.isfinite(lo) else None,
                abs_max=hi,
                nan=1 if math.isnan(hi) or math.isnan(lo) else 0,
                inf=1 if math.isinf(hi) else 0,
            )
            for name, lo, hi in frame.stats
            if _role(name) == which
        ]

    kept = frames[max(0, index - 20) : index + 1]
    first = index - len(kept) + 1
    report_frames = [
        Frame(
            index=first + i,
            step=0,
            phase="forward",
            module=f.module or None,
            module_type=f.module_type,
            inputs=stats(f, "input"),
            outputs=stats(f, "output"),
            weights=stats(f, "weight"),
            producer=(first + i == index),
        )
        for i, f in enumerate(kept)
    ]
    frame = frames[index]
    bad = [hi for name, lo, hi in frame.stats if _role(name) == role and not math.isfinite(hi)]
    value = "nan" if any(math.isnan(v) for v in bad) else "inf"
    event = Event(
        kind="nonfinite",
        phase="optimizer"
        if role == "weight"
        else ("input" if role == "input" and index == 0 else "forward"),
        step=None,
        module=frame.module or None,
        module_type=frame.module_type,
        dtype=dtype,
        value=value,
        message=what,
    )
    return Report(
        status="nonfinite",
        script=ScriptInfo(path="<DebugUnderflowOverflow dump>"),
        event=event,
        frames=report_frames,
    )


# --- anomaly mode -----------------------------------------------------------------------------


def _anomaly(text: str) -> DumpDiagnosis | None:
    message = _ANOMALY_MESSAGE.search(text)
    head = _ANOMALY_HEAD.search(text)
    if message is None and head is None:
        return None
    fn = (message or head).group("fn")
    value = message.group("value") if message else "nan"
    location, code = _forward_line(text[head.end() :]) if head else (None, None)
    what = f"the gradient {fn} computed is {value}" + (
        f", for the forward call at {location}" if location else ""
    )
    diagnosis = DumpDiagnosis(
        tool="anomaly mode", what=what, op=_forward_op(fn), location=location, code=code
    )
    from diagnose.report import Event, Location, Report, ScriptInfo

    loc = None
    if location:
        file, _, line = location.rpartition(":")
        loc = Location(file=file, line=int(line), code=code)
    event = Event(
        kind="nonfinite",
        phase="backward",
        op=fn,
        value=value,
        location=loc,
        message=f"Function '{fn}' returned {value} values in its "
        f"{message.group('n') if message else 0}th output.",
    )
    report = Report(
        status="nonfinite", script=ScriptInfo(path="<anomaly mode output>"), event=event
    )
    diagnosis.causes, diagnosis.fixes = rank_evidence(report, DUMP_CONFIDENCE)
    return diagnosis


def _forward_op(fn: str) -> str | None:
    """``LogBackward0`` -> ``log``: the forward op whose backward it is."""
    m = re.fullmatch(r"(?P<op>[A-Za-z_]\w*?)Backward\d*", fn)
    return m.group("op").lower() if m else None


def _forward_line(stack: str) -> tuple[str | None, str | None]:
    """The last frame of the forward stack in the user's own code (not a library's).

    The stack is the block of ``File ...`` lines (each with its code line) right after the
    anomaly warning; the first line that is neither ends it, so the exception's own traceback
    printed later (ending in ``loss.backward()``) is never read as the forward call.
    """
    best: tuple[str, str | None] | None = None
    lines = stack.splitlines()
    i = 1 if lines and not lines[0].strip() else 0
    while i < len(lines) and i < 400:
        m = _FRAME.match(lines[i])
        if m is None:
            break
        code = None
        if (
            i + 1 < len(lines)
            and not _FRAME.match(lines[i + 1])
            and lines[i + 1].startswith("    ")
        ):
            code = lines[i + 1].strip() or None
            i += 1
        if not _LIBRARY.search(m.group("file")):
            best = (f"{m.group('file')}:{m.group('line')}", code)
        i += 1
    return best if best else (None, None)
