"""Many ranks' evidence -> one report naming the rank where the first non-finite was born.

A NaN made on one rank reaches every rank through the gradient all-reduce, so "first" is
decided by evidence, not by who wrote first:
1. the earliest step;
2. at the same step, the earliest phase (input, forward, loss before backward, optimizer):
   a forward event on rank r is local to r, a backward one may be a copy;
3. among backward events, a rank whose own gradients were non-finite before the all-reduce
   beats one whose own were finite (it only received the NaN);
4. then the wall-clock time the rank ended, then the lower rank.
When the chosen event is a received copy and a rank that stopped early had non-finite local
gradients, that rank is named as the producer. With no non-finite event, the earliest script
exception is the event; ranks that stopped because of it say so. With neither, a rank stopped
by SIGINT or SIGTERM makes the run interrupted.
"""

from __future__ import annotations

import math
from typing import Any

from diagnose.report import Event, RankSummary, Report, ScriptInfo

PHASE_ORDER = {"input": 0, "forward": 1, "loss": 2, "backward": 3, "optimizer": 4, None: 5}


def combine(evidence: dict[int, dict[str, Any]], world_size: int) -> Report:
    """The combined raw report (before analysis) from every rank's evidence."""
    ranks = sorted(evidence)
    nonfinite = [r for r in ranks if evidence[r].get("status") == "nonfinite"]
    exceptions = [r for r in ranks if evidence[r].get("status") == "exception"]
    interrupted = [r for r in ranks if evidence[r].get("status") == "interrupted"]
    primary: int | None = None
    producer: int | None = None
    if nonfinite:
        primary = min(nonfinite, key=lambda r: _order(evidence[r]))
        producer = _local_producer(evidence, primary)
    elif exceptions:
        primary = min(exceptions, key=lambda r: (evidence[r].get("time", math.inf), r))
    base_rank = (
        primary
        if primary is not None
        else (
            interrupted[0]
            if interrupted and evidence[interrupted[0]].get("report")
            else _first_with_report(evidence)
        )
    )
    report = _report_of(evidence, base_rank)
    if report.event is not None:
        named = producer if producer is not None else primary
        report.event.rank = named
        report.event.details = [
            *_rank_lines(evidence, world_size, named, primary),
            *report.event.details,
        ]
    elif report.status == "clean" and any(evidence[r].get("status") != "clean" for r in ranks):
        report.status = "exception"
        report.event = _stopped_event(evidence)
    report.ranks = _summaries(evidence, world_size, producer if producer is not None else primary)
    config = report.config.model_dump(mode="json")
    dist = dict(config.get("distributed") or {})
    for r in ranks:
        for key, value in (evidence[r].get("distributed") or {}).items():
            dist.setdefault(key, value)
    dist["world_size"] = world_size
    report.config.distributed = dist  # type: ignore[attr-defined]
    missing = [r for r in range(world_size) if r not in evidence]
    if missing:
        report.warnings.append(
            f"no evidence from rank(s) {', '.join(map(str, missing))}: ended before handing "
            "it over (killed outright?), or never reached the launch's store"
        )
    return report


def _order(data: dict[str, Any]) -> tuple[Any, ...]:
    step = data.get("step")
    phase = data.get("phase")
    local = (data.get("local_grads") or {}).get("finite")
    received = 0 if local is False else (1 if local is None else 2)
    if phase != "backward":
        received = 0
    return (
        step if step is not None else math.inf,
        PHASE_ORDER.get(phase, 5),
        received,
        data.get("time", math.inf),
        data.get("rank", 0),
    )


def _local_producer(evidence: dict[int, dict[str, Any]], primary: int) -> int | None:
    """A rank other than ``primary`` whose own gradients were the non-finite ones."""
    data = evidence[primary]
    if data.get("phase") not in ("backward", "optimizer"):
        return None
    if (data.get("local_grads") or {}).get("finite") is not True:
        return None
    for r in sorted(evidence):
        if r != primary and (evidence[r].get("local_grads") or {}).get("finite") is False:
            return r
    return None


def _first_with_report(evidence: dict[int, dict[str, Any]]) -> int | None:
    return next((r for r in sorted(evidence) if evidence[r].get("report")), None)


def _report_of(evidence: dict[int, dict[str, Any]], rank: int | None) -> Report:
    if rank is not None and evidence[rank].get("report"):
        return Report.model_validate(evidence[rank]["report"])
    return Report(status="exception", script=ScriptInfo(path="<unknown>"))


def _stopped_event(evidence: dict[int, dict[str, Any]]) -> Event:
    first = min(evidence.values(), key=lambda d: d.get("time", math.inf))
    return Event(
        kind="exception",
        message=f"rank {first.get('rank')}: {first.get('summary')}",
        rank=first.get("rank"),
    )


def _rank_lines(
    evidence: dict[int, dict[str, Any]], world_size: int, named: int | None, primary: int | None
) -> list[str]:
    lines = [f"born on rank {named} of {world_size}"]
    if named != primary and primary is not None:
        bad = (evidence[named].get("local_grads") or {}).get("nonfinite_params") or []
        lines.append(
            f"rank {named}'s own gradients were non-finite before the all-reduce "
            f"({', '.join(bad[:4]) or 'a bucket'}); rank {primary} received them"
        )
    for r in range(world_size):
        data = evidence.get(r)
        text = data.get("summary", "") if data else "no evidence"
        lines.append(f"rank {r}: {data.get('status') if data else 'missing'}: {text}")
    return lines


def _summaries(
    evidence: dict[int, dict[str, Any]], world_size: int, named: int | None
) -> list[RankSummary]:
    out = []
    for r in range(world_size):
        data = evidence.get(r)
        if data is None:
            out.append(RankSummary(rank=r, status="missing", summary="no evidence written"))
            continue
        phase = data.get("phase")
        out.append(
            RankSummary(
                rank=r,
                status=data.get("status", "missing"),
                summary=data.get("summary", ""),
                step=data.get("step"),
                phase=phase if phase in PHASE_ORDER and phase else None,
                history_length=int(data.get("history_length") or 0),
                local_grads_finite=(data.get("local_grads") or {}).get("finite"),
                primary=r == named,
            )
        )
    return out
