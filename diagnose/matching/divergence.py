"""A pasted training log whose loss or gradient norm went non-finite -> what the log supports.

No exception, no traceback: only the metric rows a loop printed. What they show (the loss,
gradient norm, lr and loss scale before the first ``nan``) is the same per-step history the
tracer records, so it goes through the same facts, symptoms and rules as a traced run. A log
cannot show where the value was born (no module, no op) nor the training config, so every
confidence is scaled by :data:`LOG_CONFIDENCE` and the answer ends with the ``diagnose``
command that will find the producer.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from diagnose.formatting import num
from diagnose.matching.logconfig import LogFramework, read_framework
from diagnose.matching.trainlog import LogRow, TrainingLog, read_training_log

# A log shows the symptoms' trends but never the producer nor the config the rules also read
# (clipping, precision, optimizer): what it supports is worth a little over half of a trace.
LOG_CONFIDENCE = 0.6
ROWS_SHOWN = 5  # logged rows before the first non-finite one, in the answer
FIXES_SHOWN = 3
# Symptoms that stand on what a traced run's config lacks (no clipping call was seen): a log
# does not show the config, so their absence there is no evidence.
_UNSEEN_IN_A_LOG = frozenset({"no-grad-clipping"})

_COMMAND = re.compile(
    r"(?:^|[\s$>#])(?P<launcher>(?:python\d?(?:\.\d+)?|torchrun|accelerate launch|deepspeed)"
    r"(?:\s+-m\s+torch\.distributed\.(?:run|launch))?)\s+(?P<rest>[^\n]*?\b[\w./-]+\.py\b[^\n]*)$"
)
_NPROC = re.compile(r"--nproc[_-]per[_-]node[= ](\d+)")
_FRAME_FILE = re.compile(r'^\s*File "(?P<file>[^"]+\.py)", line \d+, in <module>')


@dataclass(frozen=True)
class Cause:
    """A symptom pasted evidence supports, with its scaled confidence and plain-words evidence."""

    id: str
    title: str
    confidence: float
    evidence: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "confidence": self.confidence,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class RankedFix:
    id: str
    title: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "score": self.score}


@dataclass
class LogDiagnosis:
    """What a training log shows about the first non-finite loss or gradient norm."""

    first: LogRow
    before: list[LogRow]
    what: str
    causes: list[Cause] = field(default_factory=list)
    fixes: list[RankedFix] = field(default_factory=list)
    command: str = ""
    rows: int = 0
    scale_changes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "first_nonfinite": _row_dict(self.first),
            "before": [_row_dict(r) for r in self.before],
            "rows_read": self.rows,
            "loss_scale_reductions": self.scale_changes,
            "causes": [c.to_dict() for c in self.causes],
            "fixes": [f.to_dict() for f in self.fixes],
            "confidence_scale": LOG_CONFIDENCE,
            "command": self.command,
        }


def diagnose_log(text: str) -> LogDiagnosis | None:
    """The diagnosis of a log whose metrics went non-finite; None when none did."""
    log = read_training_log(text)
    first = log.first_nonfinite
    if first is None:
        return None
    launch = _launch(text)  # the command line the log shows, read once
    diagnosis = LogDiagnosis(
        first=first,
        before=log.before[-ROWS_SHOWN:],
        what=_what(first),
        rows=len(log.rows),
        scale_changes=len(log.scale_changes),
        command=_command(launch, first),
    )
    framework = read_framework(" ".join(launch[1]), [row.text for row in log.rows])
    diagnosis.causes, diagnosis.fixes = rank_evidence(
        _as_report(log, diagnosis, framework), LOG_CONFIDENCE, unseen=_UNSEEN_IN_A_LOG
    )
    return diagnosis


def _what(row: LogRow) -> str:
    where = _where(row)
    if row.guard:
        return f"the log says the loss became non-finite{where} (line {row.line})"
    finite_loss = row.loss is not None and math.isfinite(row.loss)
    if finite_loss and all(_is_grad_key(k) for k, _ in row.nonfinite):
        return (
            f"the gradient norm turned {_logged(row.grad_norm)}{where} (line {row.line}) while "
            f"the loss was {_logged(row.loss)}: the gradients went non-finite first"
        )
    shown = [f"{key} {_logged(value)}" for key, value in row.nonfinite[:4]]
    more = len(row.nonfinite) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    return f"the log shows {listed}{where} (line {row.line})"


def _is_grad_key(key: str) -> bool:
    return "loss" not in key


def _value_word(row: LogRow) -> str:
    """The event's value as the report spells it: "nan", "inf", "-inf" or a mix."""
    words = []
    for _, value in row.nonfinite:
        word = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        if word not in words:
            words.append(word)
    return "+".join(words) or "nan"


def _where(row: LogRow) -> str:
    if row.step is None or row.step_key is None:
        return ""
    step = int(row.step) if float(row.step).is_integer() else row.step
    return f" at {row.step_key} {step}"


def _logged(value: float | None) -> str:
    """A logged value in prose, with one more digit than usual: logs are read closely."""
    return num(value, digits=3)


def _row_dict(row: LogRow) -> dict[str, Any]:
    def plain(value: float | None) -> float | str | None:
        return value if value is None or math.isfinite(value) else str(value)

    return {
        "line": row.line,
        "step": row.step,
        "step_key": row.step_key,
        "loss": plain(row.loss),
        "loss_key": row.loss_key,
        "grad_norm": plain(row.grad_norm),
        "lr": plain(row.lr),
        "loss_scale": plain(row.loss_scale),
        "nonfinite": {key: str(value) for key, value in row.nonfinite},
        "text": row.text,
    }


# --- the rule engine on what the log shows ----------------------------------------------------


def rank_evidence(
    report: Any, scale: float, unseen: frozenset[str] = frozenset()
) -> tuple[list[Cause], list[RankedFix]]:
    """Symptoms and fixes from the engine a traced run goes through, scaled for pasted evidence.

    ``unseen``: symptoms that stand on what the pasted text cannot show, left out.
    """
    from diagnose.engine import load_fixes, load_rules, rank
    from diagnose.facts import detect_symptoms, extract_facts

    facts, _ = extract_facts(report)
    symptoms, _ = detect_symptoms(facts, report)
    symptoms = [s for s in symptoms if s.id not in unseen and s.id != "script-exception"]
    for symptom in symptoms:
        facts[f"symptom.{symptom.id}"] = symptom.confidence
    rules, _ = load_rules()
    catalogue, _ = load_fixes()
    causes = [
        Cause(
            id=s.id,
            title=s.title or s.id,
            confidence=round(s.confidence * scale, 2),
            evidence=list(s.evidence),
        )
        for s in symptoms
    ]
    fixes = [
        RankedFix(id=f.id, title=f.title, score=round(f.score * scale, 2))
        for f in rank(rules, facts, symptoms, catalogue)[:FIXES_SHOWN]
    ]
    return causes, fixes


def _as_report(log: TrainingLog, diagnosis: LogDiagnosis, framework: LogFramework) -> Any:
    from diagnose.report import Config, Event, Report, ScriptInfo, StepRecord

    first = diagnosis.first
    rows = [*log.before, first]
    scale_lines = [c.line for c in log.scale_changes]
    history: list[StepRecord] = []
    scale: float | None = None
    previous_line = 0
    for index, row in enumerate(rows):
        lowered = [c for c in log.scale_changes if previous_line < c.line <= row.line]
        if lowered:
            scale = lowered[-1].scale
        history.append(
            StepRecord(
                step=index,
                loss=row.loss,
                grad_norm=row.grad_norm,
                lr=row.lr,
                loss_scale=row.loss_scale if row.loss_scale is not None else scale,
                skipped=bool(lowered),
                detailed=False,
            )
        )
        previous_line = row.line
    lr = next((r.lr for r in reversed(rows) if r.lr is not None and math.isfinite(r.lr)), None)
    scaled = bool(scale_lines) or any(
        r.loss_scale is not None and r.loss_scale not in (0.0, 1.0) for r in rows
    )
    in_loss = first.guard or any(not _is_grad_key(k) for k, _ in first.nonfinite)
    event = Event(
        kind="nonfinite",
        phase="loss" if in_loss else "backward",
        step=len(rows) - 1,
        value=_value_word(first),
        message=diagnosis.what,
    )
    return Report(
        status="nonfinite",
        script=ScriptInfo(path="<training log>"),
        event=event,
        history=history,
        config=Config(
            precision=framework.precision
            if framework.precision != "unknown" or not scaled
            else "fp16",
            lr=lr,
            grad_scaler=scaled or framework.precision == "fp16-autocast",
            transformers=framework.transformers,
        ),
    )


# --- the command that finds the producer ------------------------------------------------------


def _command(launch: tuple[str | None, list[str], int | None], first: LogRow) -> str:
    """``diagnose`` on the command line the log shows (``_launch``), or on a placeholder."""
    script, args, nproc = launch
    parts = ["diagnose"]
    if nproc and nproc > 1:
        parts += ["--nproc", str(nproc)]
    step = first.step
    if step is not None and first.step_key not in (None, "epoch") and step >= 0:
        parts += ["--max-steps", str(int(step) + 1)]
    parts += ["--report", "diagnose-report.json", script or "YOUR_TRAINING_SCRIPT.py", *args]
    return " ".join(shlex.quote(p) if p != "YOUR_TRAINING_SCRIPT.py" else p for p in parts)


def _launch(text: str) -> tuple[str | None, list[str], int | None]:
    for line in text.splitlines()[:2000]:
        m = _COMMAND.search(line.strip())
        if m is None:
            continue
        try:
            words = shlex.split(m.group("rest"))
        except ValueError:
            words = m.group("rest").split()
        for i, word in enumerate(words):
            if word.endswith(".py"):
                nproc = _NPROC.search(line)
                return word, words[i + 1 :], int(nproc.group(1)) if nproc else None
    for line in text.splitlines():
        m = _FRAME_FILE.match(line)
        if m:
            return m.group("file"), [], None
    return None, [], None
