"""Running the test cases that every rule carries (the meta-test and `diagnose rules test`)."""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.engine.loader import Rule
from diagnose.engine.ranking import rule_confidence


@dataclass(frozen=True)
class CaseFailure:
    rule: str
    file: str
    line: int | None
    kind: str  # "match" or "no_match"
    index: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: rule {self.rule}: tests.{self.kind}[{self.index}]: {self.reason}"


def run_cases(rules: list[Rule]) -> tuple[int, list[CaseFailure]]:
    """Run every case of every rule; returns (cases run, failures). A rule without both kinds
    of case is a failure too."""
    count = 0
    failures: list[CaseFailure] = []
    for rule in rules:
        for kind, cases, want in (
            ("match", rule.match_cases, True),
            ("no_match", rule.no_match_cases, False),
        ):
            if not cases:
                failures.append(
                    CaseFailure(rule.id, rule.path, None, kind, 0, f"the rule has no {kind} case")
                )
            for i, facts in enumerate(cases):
                count += 1
                timeouts: list[str] = []
                fired = rule_confidence(rule, dict(facts), timeouts) is not None
                if fired != want or timeouts:
                    reason = (
                        "expected the rule to fire, it did not"
                        if want
                        else ("expected the rule not to fire, it did")
                    )
                    if timeouts:
                        reason = f"a `matches` test ran past its time bound on {timeouts[0]}"
                    failures.append(
                        CaseFailure(
                            rule.id, rule.path, rule.lines.get(f"{kind}[{i}]"), kind, i, reason
                        )
                    )
    return count, failures
