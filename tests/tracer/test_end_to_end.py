"""Training scripts with a known cause, through ``diagnose_script`` and through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnose.runner import diagnose_script
from tests.conftest import run_cli

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def line_of(name: str, text: str) -> int:
    lines = (SCRIPTS / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


# script -> (phase, step, module, op, text on the line named, or None)
CASES = {
    "zero_std_norm.py": ("forward", 2, "norm", "div", "return (x - mean) / std"),
    "log_softmax_ce.py": ("loss", 2, None, "log", "torch.log(picked)"),
    "dataloader_nan.py": ("input", 1, "Sequential", None, None),
    "fp16_linear_overflow.py": ("forward", 5, "fc2", "linear", None),
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_diagnose_script_names_phase_module_op_line_and_step(script):
    phase, step, module, op, text = CASES[script]
    report = diagnose_script(SCRIPTS / script, [])
    event = report.event
    assert report.status == "nonfinite"
    assert (event.phase, event.step, event.module, event.op) == (phase, step, module, op)
    if text is not None:
        assert Path(event.location.file).name == script
        assert event.location.line == line_of(script, text)
    assert report.history and report.frames


def test_diagnose_script_on_a_healthy_run_is_clean():
    report = diagnose_script(SCRIPTS / "fp32_healthy.py", [])
    assert report.status == "clean" and report.event is None and len(report.history) == 20


@pytest.mark.slow
@pytest.mark.parametrize("script", ["zero_std_norm.py", "log_softmax_ce.py"])
def test_the_cli_json_report_names_the_same_event(script):
    phase, step, module, op, text = CASES[script]
    result = run_cli("--format", "json", str(SCRIPTS / script))
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    event = report["event"]
    assert report["status"] == "nonfinite"
    assert (event["phase"], event["step"], event["module"], event["op"]) == (
        phase,
        step,
        module,
        op,
    )
    assert event["location"]["line"] == line_of(script, text)


@pytest.mark.slow
def test_the_cli_on_a_healthy_run_exits_zero_with_the_whole_history():
    result = run_cli("--format", "json", str(SCRIPTS / "fp32_healthy.py"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "clean" and len(report["history"]) == 20
