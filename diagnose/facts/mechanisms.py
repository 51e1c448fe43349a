"""Facts from what the tracer read off an op's own arguments and the batch: CTC samples without
an alignment, softmax rows masked everywhere, batch rows a dtype cast made inf
(``Event.ctc_infeasible``, ``Event.masked_rows``, ``Event.batch_cast``)."""

from __future__ import annotations

from typing import Any

from diagnose.report import Report

Facts = dict[str, Any]


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def mechanism_facts(report: Report, facts: Facts) -> None:
    event = report.event
    samples = _get(event, "ctc_infeasible")
    if samples:
        first = samples[0]
        facts["ctc.infeasible_count"] = _get(event, "ctc_infeasible_count") or len(samples)
        facts["ctc.sample"] = _get(first, "sample")
        facts["ctc.input_length"] = _get(first, "input_length")
        facts["ctc.target_length"] = _get(first, "target_length")
        facts["ctc.needed"] = _get(first, "needed")
    masked = _get(event, "masked_rows")
    if masked:
        rows = _get(masked, "rows") or []
        facts["mask.rows_all_inf"] = _get(masked, "count")
        facts["mask.rows_total"] = _get(masked, "total")
        facts["mask.first_row"] = list(rows[0]) if rows else None
        facts["mask.softmax_op"] = _get(masked, "op")
        location = _get(masked, "location")
        facts["mask.softmax_line"] = _get(location, "line") if location else None
    cast = _get(event, "batch_cast")
    if cast:
        for key in ("input", "source_dtype", "dtype", "max_abs"):
            facts[f"batch_cast.{key}"] = _get(cast, key)
