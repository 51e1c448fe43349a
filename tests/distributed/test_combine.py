"""Choosing the rank where the first non-finite value was born, from every rank's evidence."""

from typing import Any

from diagnose.distributed.combine import combine
from diagnose.report import Event, Report, ScriptInfo


def _rank(
    rank: int,
    status: str,
    *,
    step: int | None = None,
    phase: str | None = None,
    time: float = 100.0,
    local_finite: bool | None = None,
    kind: str = "nonfinite",
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "rank": rank,
        "status": status,
        "time": time,
        "step": step,
        "phase": phase,
        "history_length": step or 0,
        "distributed": {"world_size": 2, "backend": "gloo"},
    }
    if local_finite is not None:
        data["local_grads"] = {
            "finite": local_finite,
            "nonfinite_params": [] if local_finite else ["fc.weight"],
        }
    if status in ("nonfinite", "exception", "clean"):
        event = None
        if status != "clean":
            event = Event(
                kind=kind,
                phase=phase,
                step=step,
                message=f"rank {rank} event",
                exception_type="ValueError" if kind == "exception" else None,
            )
        report = Report(status=status, script=ScriptInfo(path="train.py"), event=event)
        data["report"] = report.model_dump(mode="json")
        data["summary"] = event.message if event else "saw nothing"
    else:
        data["summary"] = "saw nothing; stopped"
    return data


def test_an_input_event_beats_a_backward_event_on_another_rank_at_the_same_step():
    evidence = {
        0: _rank(0, "nonfinite", step=3, phase="backward", time=1.0),
        1: _rank(1, "nonfinite", step=3, phase="input", time=2.0),
    }
    report = combine(evidence, 2)
    assert report.event.rank == 1 and report.event.phase == "input"
    assert [r.primary for r in report.ranks] == [False, True]


def test_an_earlier_step_wins_whatever_its_phase():
    evidence = {
        0: _rank(0, "nonfinite", step=2, phase="optimizer", time=5.0),
        1: _rank(1, "nonfinite", step=3, phase="input", time=1.0),
    }
    assert combine(evidence, 2).event.rank == 0


def test_the_rank_whose_own_gradients_were_bad_before_the_all_reduce_is_the_producer():
    evidence = {
        0: _rank(0, "nonfinite", step=5, phase="backward", time=1.0, local_finite=True),
        1: _rank(1, "nonfinite", step=5, phase="backward", time=2.0, local_finite=False),
    }
    report = combine(evidence, 2)
    assert report.event.rank == 1
    assert report.event.message == "rank 1 event"


def test_a_rank_stopped_before_its_own_check_is_still_named_from_its_local_gradients():
    evidence = {
        0: _rank(0, "nonfinite", step=5, phase="backward", local_finite=True),
        1: _rank(1, "stopped", step=5, local_finite=False),
    }
    report = combine(evidence, 2)
    assert report.event.rank == 1
    assert any("rank 1's own gradients were non-finite" in d for d in report.event.details)
    assert report.ranks[1].status == "stopped" and report.ranks[1].primary


def test_a_crash_on_one_rank_is_the_event_and_the_others_say_they_saw_nothing():
    evidence = {0: _rank(0, "stopped", step=2), 1: _rank(1, "exception", step=2, kind="exception")}
    report = combine(evidence, 2)
    assert report.status == "exception" and report.event.rank == 1
    assert report.ranks[0].status == "stopped" and "saw nothing" in report.ranks[0].summary


def test_every_rank_clean_is_a_clean_run_with_each_rank_listed():
    evidence = {0: _rank(0, "clean", step=8), 1: _rank(1, "clean", step=8)}
    report = combine(evidence, 2)
    assert report.status == "clean" and report.event is None
    assert [r.status for r in report.ranks] == ["clean", "clean"]
    assert report.config.model_dump()["distributed"] == {"world_size": 2, "backend": "gloo"}


def test_a_rank_that_left_no_evidence_is_listed_as_missing_with_a_warning():
    report = combine({0: _rank(0, "nonfinite", step=1, phase="forward")}, 2)
    assert report.ranks[1].status == "missing"
    assert any("rank(s) 1" in w for w in report.warnings)
