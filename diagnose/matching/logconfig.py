"""What a pasted log shows of the framework that ran it: its precision and clipping settings.

A log has no captured config, but the frameworks that print it have defaults and the command
line the log shows has flags. transformers' ``Trainer`` prints its metrics as Python dicts
(``{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}``) and clips at
``TrainingArguments.max_grad_norm``, 1.0 unless the command line says otherwise; ``--fp16``
turns on float16 autocast with a GradScaler. Advice that ignores these (clip the gradient norm,
under a Trainer that already clips) is advice the user cannot take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# TrainingArguments.max_grad_norm's default (transformers/training_args.py)
HF_MAX_GRAD_NORM = 1.0

_HF_ROW = re.compile(r"^\{'(?:loss|train_loss|eval_loss)': .*'epoch': ")
_FLAG = re.compile(
    r"(?:^|\s)--(?P<name>fp16|bf16|max_grad_norm|mixed_precision)"
    r"(?:[= ](?P<value>[^\s-][^\s]*))?(?=\s|$)"
)
_TRUE = {"", "true", "1", "yes"}


@dataclass
class LogFramework:
    """The settings a log shows, or that its framework's defaults give."""

    transformers: dict[str, Any] | None = None
    precision: str = "unknown"
    flags: dict[str, str] = field(default_factory=dict)


def read_framework(command: str | None, rows_text: list[str]) -> LogFramework:
    """The framework a log's rows come from and the settings its command line gives."""
    flags = _flags(command or "")
    found = LogFramework(flags=flags)
    if any(_HF_ROW.match(text.strip()) for text in rows_text):
        settings: dict[str, Any] = {
            "fp16": flags.get("fp16", "false").lower() in _TRUE,
            "bf16": flags.get("bf16", "false").lower() in _TRUE,
            "max_grad_norm": _number(flags.get("max_grad_norm"), HF_MAX_GRAD_NORM),
        }
        found.transformers = settings
        if settings["fp16"]:
            found.precision = "fp16-autocast"
        elif settings["bf16"]:
            found.precision = "bf16-autocast"
    mixed = flags.get("mixed_precision", "").lower()  # accelerate launch --mixed_precision
    if found.precision == "unknown" and mixed in ("fp16", "bf16"):
        found.precision = f"{mixed}-autocast"
    return found


def _flags(command: str) -> dict[str, str]:
    """``--name value`` / ``--name=value`` / a bare ``--name`` of the flags that matter here."""
    return {m["name"]: m["value"] or "" for m in _FLAG.finditer(command)}


def _number(text: str | None, default: float) -> float:
    try:
        return float(text) if text is not None else default
    except ValueError:
        return default
