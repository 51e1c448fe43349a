"""diagnose stopping a run on purpose is reported as the diagnosis, whatever the script's
handlers do with the stop: an ``except Exception`` handler never sees it, and a script that
catches it anyway (``except BaseException``) and re-raises, exits or raises its own error
from it is still a stopped run, not a failing one."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from diagnose import diagnose_script
from diagnose.stops import RunStopped, stopped_by
from diagnose.tracer import NonFiniteDetected, NonFiniteStop

LOOP = """
import logging, sys, torch
from torch import nn

log = logging.getLogger("train")
log.addHandler(logging.StreamHandler(sys.stderr))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=float(sys.argv[1]))


def train():
    for step in range(6):
        x = torch.randn(16, 4)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

HANDLERS = {
    "except Exception: log; raise": """
try:
    train()
except Exception:
    log.exception("training failed")
    raise
""",
    "except BaseException: log; raise": """
try:
    train()
except BaseException:
    log.exception("training stopped")
    raise
""",
    "except BaseException: sys.exit(1)": """
try:
    train()
except BaseException as exc:
    print(f"stopped: {type(exc).__name__}")
    sys.exit(1)
""",
    "except BaseException: raise its own error": """
class JobFailed(Exception):
    pass

try:
    train()
except BaseException as exc:
    raise JobFailed("the job failed") from exc
""",
}


def script_with(tmp_path: Path, handler: str) -> Path:
    script = tmp_path / "train.py"
    script.write_text(LOOP + HANDLERS[handler])
    return script


@pytest.mark.parametrize("handler", list(HANDLERS))
def test_a_nan_is_the_diagnosis_whatever_the_handler(tmp_path, capfd, handler):
    report = diagnose_script(script_with(tmp_path, handler), ["1e30"])
    assert report.status == "nonfinite" and report.event.kind == "nonfinite"
    assert report.event.step == 1 and report.event.phase == "forward"


def test_an_except_exception_handler_never_sees_the_stop(tmp_path, capfd):
    diagnose_script(script_with(tmp_path, "except Exception: log; raise"), ["1e30"])
    out, err = capfd.readouterr()
    assert "training failed" not in out + err and "Traceback" not in out + err


@pytest.mark.parametrize("handler", list(HANDLERS))
def test_max_steps_is_a_clean_run_whatever_the_handler(tmp_path, handler):
    report = diagnose_script(script_with(tmp_path, handler), ["0.01"], max_steps=3)
    assert report.status == "clean" and report.event is None, report.event
    assert [row.step for row in report.history] == [0, 1, 2]


def test_a_script_exiting_3_after_its_run_is_clean_and_keeps_the_status(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(LOOP + "train()\nraise SystemExit(3)\n")
    report = diagnose_script(script, ["0.01"])
    assert report.status == "clean" and report.event is None and report.exit_code == 3


def test_the_stop_is_not_an_exception_and_carries_the_event(tmp_path):
    report = diagnose_script(script_with(tmp_path, "except Exception: log; raise"), ["1e30"])
    stop = NonFiniteStop(report.event, report.frames, report.history)
    assert isinstance(stop, RunStopped) and not isinstance(stop, Exception)
    assert str(stop) == report.event.message
    again = pickle.loads(pickle.dumps(stop))
    assert type(again) is NonFiniteStop and again.event == report.event
    api = NonFiniteDetected(report.event, report.frames, report.history)
    assert isinstance(api, RuntimeError) and stopped_by(api) is None


def test_stopped_by_follows_what_was_raised_while_handling_a_stop():
    def exit_from(exc: BaseException) -> SystemExit:
        try:
            try:
                raise exc
            except BaseException:
                raise SystemExit(1)  # noqa: B904 - the implicit context is the point
        except SystemExit as exit_:
            return exit_

    stop = RunStopped("stopped")
    assert stopped_by(exit_from(stop)) is stop
    assert stopped_by(exit_from(ValueError("bad"))) is None
    assert stopped_by(None) is None
