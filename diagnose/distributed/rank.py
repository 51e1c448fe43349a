"""The command side of one rank: trace the script, hand the evidence to the session."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from diagnose.distributed.context import DistContext
from diagnose.report import Report


def run_rank(
    ctx: DistContext,
    script: str | Path,
    argv: Sequence[str],
    options: object,
    emit: Callable[[Report], None],
    report_path: Path | None = None,
) -> int:
    """Run ``script`` as rank ``ctx.rank``; the rank that combines the evidence analyses the
    combined report and passes it to ``emit``. Returns the exit status (0 clean, 1 not); a
    rank that ends with a problem tells torchrun what it was (``elastic.py``)."""
    from diagnose.distributed.elastic import record_diagnosis
    from diagnose.distributed.session import RankSession
    from diagnose.runner import enrich, trace_script

    analysed: list[Report] = []

    def on_combined(raw: Report) -> None:
        analysed.append(enrich(raw, raw.script.path or script, options))  # type: ignore[arg-type]
        emit(analysed[-1])

    session = RankSession(ctx, on_combined)
    session.start()
    options.on_tracer = session.set_tracer  # type: ignore[attr-defined]
    report = trace_script(script, list(argv), options)  # type: ignore[arg-type]
    outcome = session.run_ended(report)
    if outcome.code != 0:
        combined_by = None if analysed or ctx.aggregator != "rank0" else 0
        record_diagnosis(ctx.rank, analysed[-1] if analysed else report, report_path, combined_by)
        # Leave now: interpreter shutdown would tear down a process group whose peers may
        # be blocked in a collective this rank never joins (NCCL waits for its timeout).
        session.exit(outcome)
    return outcome.code
