"""Running a user's script: bad scripts get one clear line; the script's own fate is reported."""

from __future__ import annotations

import json

import pytest

from diagnose.errors import ExitStatus, UsageError
from diagnose.runner import check_script
from tests.conftest import run_cli


def test_missing_script_is_a_usage_error(tmp_path):
    result = run_cli(str(tmp_path / "nope.py"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"diagnose: error: {tmp_path / 'nope.py'}: no such script"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"\x7fELF\x00\x00binary", "binary file"),
        (b"def broken(:\n    pass\n", ":1: not valid Python"),
        (b"\xff\xfe latin", "not UTF-8"),
    ],
)
def test_not_python_is_a_usage_error(tmp_path, content, fragment):
    script = tmp_path / "train.py"
    script.write_bytes(content)
    with pytest.raises(UsageError, match=fragment):
        check_script(script)
    result = run_cli(str(script))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr


def test_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="is a folder"):
        check_script(tmp_path)


def test_a_fifo_or_a_device_as_script_is_one_line_without_waiting(tmp_path):
    import os

    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        result = run_cli(str(path), timeout=60)
        assert result.returncode == 2
        assert result.stderr.strip() == f"diagnose: error: {path}: not a regular file ({kind})"


def test_script_gets_its_own_argv_main_and_path(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, helper_mod\n"
        "assert __name__ == '__main__'\n"
        "print('ARGV', sys.argv[1:], helper_mod.VALUE + 1)\n"
    )
    result = run_cli("--format", "json", str(script), "--lr", "1", "-x")
    assert result.returncode == ExitStatus.UNTRAINED, result.stderr
    assert "ARGV ['--lr', '1', '-x'] 42" in result.stderr  # script output kept, off the JSON
    report = json.loads(result.stdout)
    assert report["status"] == "untrained"
    assert report["script"]["argv"] == ["--lr", "1", "-x"]


def test_the_report_names_the_packages_the_run_imported_outside_the_standard_library(tmp_path):
    (tmp_path / "userlib_pkg.py").write_text("import json\n")
    script = tmp_path / "train.py"
    script.write_text("import torch, userlib_pkg\nprint(torch.ones(1))\n")
    result = run_cli("--format", "json", str(script))
    assert result.returncode == ExitStatus.UNTRAINED, result.stderr
    libraries = json.loads(result.stdout)["config"]["libraries"]
    assert {"torch", "userlib_pkg"} <= set(libraries)
    assert not {"json", "sys", "diagnose"} & set(libraries)


def test_a_model_updated_by_hand_still_tells_the_runs_precision(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "def main():\n"
        "    model = torch.nn.Linear(3, 1).double()\n"
        "    for _ in range(3):\n"
        "        model.zero_grad()\n"
        "        model(torch.randn(4, 3, dtype=torch.float64)).pow(2).mean().backward()\n"
        "        with torch.no_grad():\n"
        "            for p in model.parameters():\n"
        "                p -= 0.1 * p.grad\n"
        "main()\n"
    )
    result = run_cli("--format", "json", str(script))
    config = json.loads(result.stdout)["config"]
    assert (config["precision"], config["param_dtypes"]) == ("fp64", {"float64": 4})


@pytest.mark.parametrize("exit_line", ["sys.exit(3)", "raise SystemExit(3)", "exit(3)"])
def test_a_healthy_run_that_exits_3_is_clean_and_exits_3(tmp_path, exit_line):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(3):\n"
        "    opt.zero_grad()\n"
        "    model(torch.ones(2, 3)).pow(2).mean().backward()\n"
        "    opt.step()\n"
        f"{exit_line}\n"
    )
    result = run_cli("--format", "json", str(script))
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "clean" and report["event"] is None
    assert report["exit_code"] == 3
    assert len(report["history"]) == 3
    text = run_cli("--format", "text", str(script))
    assert text.returncode == 3
    first = text.stdout.splitlines()[0]
    assert "exited with status 3 after a clean run" in first and "3 optimizer steps" in first
    markdown = run_cli("--format", "markdown", str(script))
    assert "Clean run, but the script exited with status 3" in markdown.stdout


def test_sys_exit_zero_after_training_is_a_clean_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(torch.ones(2, 3)).pow(2).mean().backward()\n"
        "opt.step()\n"
        "sys.exit(0)\n"
    )
    result = run_cli("--format", "json", str(script))
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert (report["status"], report["exit_code"]) == ("clean", 0)


ARGPARSE_SCRIPT = """\
import argparse, torch
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for _ in range(2):
    opt.zero_grad()
    model(torch.ones(2, 3)).pow(2).mean().backward()
    opt.step()
"""


@pytest.mark.parametrize(
    "argv, code",
    [(["--lrr", "0.1"], 2), (["--help"], ExitStatus.UNTRAINED)],
    ids=["mistyped-flag", "script-help"],
)
def test_a_script_that_exits_before_its_first_step_is_untrained(tmp_path, argv, code):
    script = tmp_path / "train.py"
    script.write_text(ARGPARSE_SCRIPT)
    result = run_cli("--format", "json", str(script), *argv)
    assert result.returncode == code, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "untrained" and report["history"] == []
    assert report["exit_code"] == (2 if code == 2 else 0)
    text = run_cli("--format", "text", str(script), *argv)
    assert text.returncode == code
    lines = text.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("diagnose:"))
    assert len(lines[at]) <= 120
    first = " ".join(line.strip() for line in lines[at : at + 2])  # a long path: two lines
    assert "clean" not in text.stdout
    assert "never trained" in first and "before its first training step" in first
    assert ("exited with status 2" in first) == (code == 2)


def test_a_script_that_returns_without_training_is_untrained(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nmodel = torch.nn.Linear(3, 1)\nprint(model(torch.ones(1, 3)))\n"
    )
    result = run_cli("--format", "json", str(script))
    assert result.returncode == ExitStatus.UNTRAINED
    report = json.loads(result.stdout)
    assert (report["status"], report["exit_code"]) == ("untrained", None)


def test_the_same_script_that_trains_is_clean(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(ARGPARSE_SCRIPT)
    result = run_cli("--format", "json", str(script), "--lr", "0.01")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "clean"


def test_exiting_while_handling_a_failure_reports_the_failure(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "try:\n"
        "    torch.ones(2, 3) @ torch.ones(4, 5)\n"
        "except RuntimeError as exc:\n"
        "    print('failed', exc)\n"
        "    sys.exit(2)\n"
    )
    result = run_cli("--format", "json", str(script))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["status"] == "exception" and report["exit_code"] == 2
    assert report["event"]["exception_type"] == "RuntimeError"
    assert report["event"]["location"]["line"] == 3


def test_script_exception_is_reported_with_traceback_and_location(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\na = torch.ones(2, 3)\nb = torch.ones(4, 5)\nc = a @ b\n")
    result = run_cli("--format", "json", str(script))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    event = report["event"]
    assert report["status"] == "exception"
    assert event["exception_type"] == "RuntimeError"
    assert "mat1 and mat2 shapes cannot be multiplied" in event["message"]
    assert event["location"]["line"] == 4
    assert "Traceback" in event["traceback"] and "runpy" not in event["traceback"]


def test_a_library_s_escape_sequences_leave_its_message_whole_not_in_pieces(tmp_path):
    # the way some torch errors bold a word: the report keeps the words, not "[1m" litter
    script = tmp_path / "train.py"
    script.write_text(  # built from pieces, so the source lines quoted in the report hold none
        "import torch\n"
        "B, R = chr(27) + '[' + '1m', chr(27) + '[' + '0m'\n"
        "OSC = chr(27) + ']5' + '2;c;' + 'ZWNobyBwd25lZA==' + chr(7)\n"
        "raise RuntimeError('Expected ' + B + 'all tensors' + R + ' to be on the same device'\n"
        "                   + chr(10) + OSC + 'detail')\n"
    )
    report_path = tmp_path / "r.json"
    for fmt in ("json", "text", "markdown"):
        result = run_cli("--format", fmt, "--report", str(report_path), str(script))
        assert result.returncode == 1, result.stderr
        assert "\x1b" not in result.stdout and "[1m" not in result.stdout
        assert "52;c" not in result.stdout and "\\u001b" not in result.stdout
        assert "Expected all tensors to be on the same device" in result.stdout
    event = json.loads(report_path.read_text())["event"]
    assert event["message"] == "Expected all tensors to be on the same device"
    assert event["details"] == ["detail"]


INTERRUPTED_LOOP = """
import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
    if step == 1:
        raise KeyboardInterrupt
"""


def test_a_keyboard_interrupt_ends_the_run_with_an_interrupted_report(tmp_path):
    import os
    import signal

    from diagnose.runner import diagnose_script

    script = tmp_path / "train.py"
    script.write_text(INTERRUPTED_LOOP)
    exit_before = os._exit
    report = diagnose_script(script)
    assert report.status == "interrupted" and report.event is None
    assert report.interruption.cause == "KeyboardInterrupt"
    assert report.interruption.stopped_at_step == 2 == len(report.history)
    assert report.fixes == []
    # What the run changed for its duration is as it was.
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert os._exit is exit_before


def test_a_failing_stage_costs_a_warning_in_plain_text_not_the_diagnosis():
    from diagnose.report import Report, ScriptInfo
    from diagnose.runner import RunOptions, _stage

    def broken(report):
        raise ValueError("\x1b[1mbold\x1b[0m reason")

    report = Report(status="clean", script=ScriptInfo(path="train.py"))
    out = _stage(report, "matcher", RunOptions(), broken)
    assert out is report
    assert out.warnings == ["matcher failed: ValueError: bold reason"]
