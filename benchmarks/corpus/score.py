"""Score outcomes against their truth: per family top-1, top-3, producer right, false alarms.

- top-1: the first symptom is the truth's family and the first fix is one the truth accepts.
- top-3: the family is among the first three symptoms and an accepted fix among the first
  three fixes.
- producer: for a fault with one producer, the event's line is the producer's line and its
  module is the producer's module (a root model may be named by its variable, its class or
  not at all; a producer outside any module has none).
- a healthy case is a false alarm unless the report is ``clean`` with no symptom and no fix.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchmarks.corpus.generate import HEALTHY, Case
from benchmarks.corpus.runner import Outcome


@dataclass(frozen=True)
class Verdict:
    case: Case
    outcome: Outcome
    top1: bool
    top3: bool
    producer: bool | None  # None: the truth names no producer
    clean: bool

    @property
    def family(self) -> str:
        return HEALTHY if self.case.truth.healthy else str(self.case.truth.family)

    @property
    def right(self) -> bool:
        if self.case.truth.healthy:
            return self.clean
        return self.top1 and self.producer is not False


def judge(case: Case, outcome: Outcome) -> Verdict:
    truth = case.truth
    clean = outcome.status == "clean" and not outcome.symptoms and not outcome.fixes
    if truth.healthy:
        return Verdict(case, outcome, False, False, None, clean)
    accepted = set(truth.fixes)
    symptoms, fixes = outcome.symptoms, outcome.fixes
    top1 = bool(symptoms) and symptoms[0] == truth.family and bool(fixes) and fixes[0] in accepted
    top3 = truth.family in symptoms[:3] and bool(accepted & set(fixes[:3]))
    producer = None
    if truth.line is not None:
        producer = outcome.line == truth.line and module_matches(case, outcome.module)
    return Verdict(case, outcome, top1, top3, producer, clean)


def module_matches(case: Case, reported: str | None) -> bool:
    truth = case.truth
    if truth.module is None:
        return reported is None
    if truth.module == "":
        cls = _root_class(case)
        return reported in {None, "", truth.root, cls}
    names = {truth.module, f"{truth.root}.{truth.module}"}
    return reported in names


def _root_class(case: Case) -> str | None:
    from benchmarks.corpus.generate import base_script

    root = base_script(case.base).root()
    return root[1].name if root and root[1] else None


def why(verdict: Verdict) -> str:
    """One line: what the tool said against the truth."""
    out, truth = verdict.outcome, verdict.case.truth
    if out.error:
        return f"{out.error}"
    said = f"status {out.status}, symptoms {list(out.symptoms[:3])}, fixes {list(out.fixes[:3])}"
    if out.line is not None:
        said += f", at {out.module or '-'}:{out.line} ({out.op})"
    if truth.healthy:
        return f"healthy ({truth.what}) but {said}"
    want = f"want {truth.family} / {truth.fixes[0]}"
    if truth.line is not None:
        want += f" at {truth.module or truth.root or '-'}:{truth.line}"
    return f"{want}; got {said}"


def table(verdicts: list[Verdict]) -> str:
    """The per-family table and the overall line."""
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        groups[v.family].append(v)
    lines = [f"{'family':34s} {'n':>3s} {'top-1':>7s} {'top-3':>7s} {'producer':>9s}"]
    faulty = [v for v in verdicts if not v.case.truth.healthy]
    for family in sorted(k for k in groups if k != HEALTHY):
        lines.append(_row(family, groups[family]))
    if faulty:
        lines.append(_row("all faults", faulty))
    healthy = groups.get(HEALTHY, [])
    alarms = sum(not v.clean for v in healthy)
    lines.append(f"{'healthy (false alarms)':34s} {len(healthy):3d} {alarms:>7d}")
    return "\n".join(lines)


def _row(name: str, group: list[Verdict]) -> str:
    n = len(group)
    top1 = sum(v.top1 for v in group)
    top3 = sum(v.top3 for v in group)
    with_producer = [v for v in group if v.producer is not None]
    producer = (
        f"{sum(bool(v.producer) for v in with_producer)}/{len(with_producer)}"
        if with_producer
        else "-"
    )
    return f"{name:34s} {n:3d} {top1:3d} {_pct(top1, n):>3s} {top3:3d} {_pct(top3, n):>3s} {producer:>9s}"


def _pct(k: int, n: int) -> str:
    return f"{round(100 * k / n)}%" if n else "-"
