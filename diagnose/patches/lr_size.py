"""How far to lower a learning rate: the one place that decides the value a fix suggests.

``lowered_lr(report, current)`` is the lr the lower-learning-rate fix proposes for a run whose
lr was ``current``, wherever that lr lives (a literal, a flag, a config file). Every patch and
command-line change of the lr asks this function, so the size is decided once.

The size follows the evidence. ``current`` is compared with the usual lr for the run: the
value a command-line token replaced (a config file's, else the script's own), the
framework's own default where the run used one (``TrainingArguments.learning_rate``, read
from the installed transformers), the script's argparse default when the user overrode it on
the command line, else the optimizer's usual lr (``rules/_heuristics.yaml``, torch's
defaults). An lr orders of magnitude above the usual goes back to the usual: a tenfold cut of
``5e9`` still diverges. Within reach of the usual, a tenfold cut, or a hundredfold one when
the run diverged within its first few steps (a tenfold cut there only delays the blow-up).

``--verify`` tries a ladder of values from that suggestion downward (``lr_ladder``); a
candidate is applied with ``with candidate_lr(value):`` around the patch, so that every
patcher asking ``lowered_lr`` writes that value without a copy of the patcher.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass

from diagnose.formatting import num
from diagnose.report import Report

FACTOR = 10.0
FAST_FACTOR = 100.0
FAST_STEPS = 10  # a divergence within this many optimizer steps is "fast"
FAR_ABOVE = 100.0  # current / usual at or above this: orders of magnitude too high
LADDER_RUNGS = 4

_CANDIDATE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "diagnose_candidate_lr", default=None
)


@dataclass(frozen=True)
class Usual:
    """The lr a run would have had without the user's choice, and where that number comes from."""

    lr: float
    source: str


@dataclass(frozen=True)
class Suggestion:
    """The lr to suggest and the reason in plain words."""

    lr: float
    reason: str


def lowered_lr(report: Report, current: float) -> float:
    """The lr to suggest instead of ``current`` (the candidate under ``candidate_lr``)."""
    candidate = _CANDIDATE.get()
    if candidate is not None:
        return candidate
    return suggest(report, current).lr


@contextlib.contextmanager
def candidate_lr(value: float) -> Iterator[None]:
    """Make ``lowered_lr`` answer ``value`` inside the block (one rung of the verify ladder)."""
    token = _CANDIDATE.set(value)
    try:
        yield
    finally:
        _CANDIDATE.reset(token)


def lr_ladder(report: Report, current: float, rungs: int = LADDER_RUNGS) -> list[float]:
    """Values to try, largest first: the suggestion, then tenfold steps down from it."""
    top = suggest(report, current).lr
    return [top / FACTOR**i for i in range(max(rungs, 1))]


def suggest(report: Report, current: float) -> Suggestion:
    """The suggested lr for ``current`` and why (see the module doc)."""
    usual = usual_lr(report)
    steps = _steps_to_event(report)
    fast = steps is not None and steps <= FAST_STEPS
    if usual is not None and current >= usual.lr * FAR_ABOVE:
        return Suggestion(
            usual.lr,
            f"lr {num(current)} is {num(current / usual.lr)}x the usual {num(usual.lr)} "
            f"({usual.source}); a tenfold cut would still be far too high, so go back to "
            f"{num(usual.lr)}",
        )
    factor = FAST_FACTOR if fast else FACTOR
    new = current / factor
    why = f"diverged within {steps} steps" if fast else "a tenfold cut is the usual first step"
    if usual is not None:
        why += f"; the usual lr is {num(usual.lr)} ({usual.source})"
    return Suggestion(new, f"lr {num(current)} / {num(factor)} = {num(new)}: {why}")


def raised(report: Report, current: float) -> Suggestion:
    """The lr to suggest for a run whose ``current`` lr was too low to learn: the usual lr
    when ``current`` is orders of magnitude below it, else ten times ``current``."""
    usual = usual_lr(report)
    if usual is not None and current <= 0:
        return Suggestion(
            usual.lr,
            f"lr {num(current)} never moves a weight: use the usual {num(usual.lr)} "
            f"({usual.source})",
        )
    if usual is not None and current * FAR_ABOVE <= usual.lr:
        return Suggestion(
            usual.lr,
            f"lr {num(current)} is {num(usual.lr / current)}x below the usual {num(usual.lr)} "
            f"({usual.source}): go back to it",
        )
    new = current * FACTOR
    why = f"lr {num(current)} x {num(FACTOR)} = {num(new)}"
    if usual is not None:
        why += f"; the usual lr is {num(usual.lr)} ({usual.source})"
    return Suggestion(new, why)


def user_lr(report: Report) -> float | None:
    """The lr the user set: the optimizer's lr when it was built (a schedule changes the
    config's lr afterwards), else the config's, else the framework's, else step 0's, else (no
    torch.optim: an update written by hand) the script's lr flag."""
    config = report.config
    for value in (config.lr_initial, config.lr):
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    hf = config.transformers or {}
    if isinstance(hf.get("learning_rate"), int | float) and hf["learning_rate"] > 0:
        return float(hf["learning_rate"])
    for row in report.history:
        if isinstance(row.lr, int | float) and row.lr > 0:
            return float(row.lr)
    return flag_lr(report)


def zero_lr(report: Report) -> bool:
    """The run's lr is known, and it is 0: set so (``lr=0.0``), or 0 at every recorded step."""
    config = report.config
    values = [v for v in (config.lr_initial, config.lr) if isinstance(v, int | float)]
    values = [v for v in values if not isinstance(v, bool)]
    if values:
        return all(v == 0 for v in values)
    lrs = [row.lr for row in report.history if isinstance(row.lr, int | float)]
    return bool(lrs) and all(lr == 0 for lr in lrs)


def flag_lr(report: Report) -> float | None:
    """The lr flag's value of a run that updates its weights by hand (no torch.optim)."""
    from diagnose.capture.origins import hand_written_lr

    config = report.config
    return hand_written_lr({"optimizer": config.optimizer, "args": config.args or {}})


def usual_lr(report: Report) -> Usual | None:
    """The usual lr for this run (framework default, overridden argparse default, optimizer)."""
    config = report.config
    from diagnose.facts.heuristics import typical_lr

    optimizer = config.optimizer
    key = optimizer.rsplit(".", 1)[-1].lower() if optimizer else None
    typical, source = typical_lr(key)
    # the script's own default of the flag the command line gave is exactly what the token
    # replaced -- unless it is orders of magnitude above the optimizer's usual lr: then it
    # was meant for another update (a hand-written SGD path beside a --use-optimizer one)
    flag = _overridden_flag_default(report)
    if flag is not None and (typical is None or flag.lr < typical * FAR_ABOVE):
        return flag
    origin = (config.origins or {}).get("lr")
    replaced = origin.overrides if origin is not None and origin.kind == "argv" else None
    if isinstance(replaced, int | float) and not isinstance(replaced, bool) and replaced > 0:
        return Usual(
            float(replaced), f"what {origin.overrides_at} sets, which {origin.token} replaced"
        )
    if config.transformers:
        default = transformers_default_lr()
        if default is not None:
            return Usual(default, "the default of transformers' TrainingArguments.learning_rate")
    if typical is None:
        return None
    return Usual(typical, source or "heuristic")


@functools.lru_cache(maxsize=1)
def transformers_default_lr() -> float | None:
    """``TrainingArguments.learning_rate``'s default in the installed transformers."""
    try:
        from transformers import TrainingArguments
    except Exception:  # not installed, or broken: no framework default to go by
        return None
    for field in dataclasses.fields(TrainingArguments):
        if field.name == "learning_rate" and isinstance(field.default, int | float):
            return float(field.default)
    return None


def _overridden_flag_default(report: Report) -> Usual | None:
    """The script's own argparse default of the lr flag, when the command line replaced it."""
    config = report.config
    given = config.args_given or {}
    args = config.args or {}
    lr = user_lr(report)
    for dest, option in given.items():
        value = args.get(dest)
        if option == "positional" or ("lr" not in dest and "learning_rate" not in dest):
            continue
        if not isinstance(value, int | float) or (lr is not None and float(value) != lr):
            continue
        default = script_flag_default(report.script.path, dest)
        if default is not None and default > 0 and default != float(value):
            return Usual(default, f"the script's default of {option}")
    return None


def script_flag_default(path: str, dest: str) -> float | None:
    """The numeric ``default=`` of the script's ``add_argument`` for ``dest``, if readable
    (what the script's author chose for the setting a flag overrode)."""
    from diagnose.patches.source import Script

    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        script = Script(path, source)
    except Exception:  # the script moved or does not parse: no default to go by
        return None
    from diagnose.patches.lr import argparse_default_number

    return argparse_default_number(script, dest)


def _steps_to_event(report: Report) -> int | None:
    event = report.event
    if event is None or event.step is None:
        return None
    return event.step + 1


def size_reason(report: Report) -> str | None:
    """Why the suggested value, for the fix's note (None under a verify candidate)."""
    if _CANDIDATE.get() is not None:
        return None
    current = user_lr(report)
    return None if current is None else suggest(report, current).reason
