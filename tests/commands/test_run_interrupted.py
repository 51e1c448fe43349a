"""A run that does not reach its end keeps what it saw: Ctrl-C, SIGTERM, the script's own
KeyboardInterrupt or ``os._exit``, a process killed outright, a working directory changed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from diagnose.report import Report, ReportError
from tests.conftest import ROOT

TRAIN = textwrap.dedent("""
    import os, signal, sys, time
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    then = sys.argv[1]
    for step in range(1, 100_000):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step == 3:
            print("ready", flush=True)
            if then == "raise":
                raise KeyboardInterrupt
            if then == "os-exit":
                os._exit(3)
            if then == "chdir":
                os.mkdir("elsewhere")
                os.chdir("elsewhere")
                break
            if then == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
        if step > 3:
            time.sleep(0.01)  # wait to be stopped
""")


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "diagnose", *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    proc = _start(tmp_path, *args)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _wait_ready(proc: subprocess.Popen) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "ready":
            return
    raise AssertionError(f"the script never got ready: {proc.stderr.read() if proc.stderr else ''}")


def _assert_what_the_run_saw(report: Report) -> None:
    assert report.frames, "the frames before the stop"
    assert report.history and report.history[0].step == 0
    assert report.config.optimizer and "SGD" in report.config.optimizer
    assert report.config.lr == 0.01


@pytest.mark.parametrize(
    "signum, status",
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_run_stopped_by_a_signal_writes_its_report_and_exits_as_after_that_signal(
    tmp_path, signum, status
):
    proc = _start(tmp_path, "--report", "r.json", "train.py", "wait")
    _wait_ready(proc)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == status, err
    report = Report.load(tmp_path / "r.json")
    assert report.status == "interrupted"
    assert report.event is None
    stopped = report.interruption
    assert stopped is not None and stopped.cause == signal.Signals(signum).name
    assert stopped.stopped_at_step is not None and stopped.stopped_at_step >= 3
    assert stopped.stopped_at_step >= report.history[-1].step  # the steps it completed
    _assert_what_the_run_saw(report)
    assert f"by {signal.Signals(signum).name}" in out  # the diagnosis is shown
    assert f"report written to {tmp_path / 'r.json'}" in err
    assert "Traceback" not in err


def test_a_keyboard_interrupt_the_script_raises_is_an_interrupted_run(tmp_path):
    done = _run(tmp_path, "--report", "r.json", "train.py", "raise")
    assert done.returncode == 130, done.stderr
    report = Report.load(tmp_path / "r.json")
    assert report.status == "interrupted"
    assert report.interruption.cause == "KeyboardInterrupt"
    assert report.interruption.stopped_at_step == 3
    _assert_what_the_run_saw(report)
    assert "interrupted at step 3" in done.stdout


def test_os_exit_from_the_script_writes_the_report_first_and_keeps_the_exit_code(tmp_path):
    done = _run(tmp_path, "--report", "r.json", "train.py", "os-exit")
    assert done.returncode == 3, done.stderr
    report = Report.load(tmp_path / "r.json")
    assert report.status == "exception"
    assert report.event.message == "the script called os._exit(3)"
    assert report.event.location.file.endswith("train.py") and report.event.location.line
    _assert_what_the_run_saw(report)
    assert "os._exit(3)" in done.stderr.splitlines()[0]  # one line says what happened
    assert "the script called os._exit(3)" in done.stdout  # and the diagnosis follows


def test_a_script_that_changes_directory_does_not_move_the_report(tmp_path):
    done = _run(tmp_path, "--report", "r.json", "train.py", "chdir")
    assert done.returncode == 0, done.stderr
    assert Report.load(tmp_path / "r.json").status == "clean"
    assert not (tmp_path / "elsewhere" / "r.json").exists()
    assert f"report written to {tmp_path / 'r.json'}" in done.stderr


def test_a_run_killed_outright_leaves_no_older_report_passing_for_its_own(tmp_path):
    old = Report(status="clean", script={"path": "earlier.py"})
    old.write(tmp_path / "r.json")
    done = _run(tmp_path, "--report", "r.json", "train.py", "sigkill")
    assert done.returncode == -signal.SIGKILL
    report = Report.load(tmp_path / "r.json")
    assert report.status == "interrupted"
    assert report.interruption.cause == "unfinished"
    assert report.script.path == "train.py"
    assert "killed" in report.interruption.message


def test_a_report_in_a_missing_folder_is_refused_before_the_script_runs(tmp_path):
    done = _run(tmp_path, "--report", "no/such/folder/r.json", "train.py", "raise")
    assert done.returncode == 2
    assert done.stdout == ""  # the script never printed "ready"
    [line] = done.stderr.splitlines()
    assert "no such folder" in line and "no/such/folder" in line


def test_a_report_that_cannot_be_written_after_the_run_still_shows_the_diagnosis(tmp_path):
    done = _run(tmp_path, "--report", "/dev/full", "train.py", "raise")
    assert done.returncode == 130  # the run's own status, not an internal error
    assert "interrupted at step 3" in done.stdout
    [line] = [x for x in done.stderr.splitlines() if "report" in x]
    assert line == "diagnose: could not write the report to /dev/full: No space left on device"
    assert "internal error" not in done.stderr


def test_an_existing_report_is_replaced_whole_through_a_temporary_file(tmp_path):
    old = Report(status="clean", script={"path": "earlier.py"})
    old.write(tmp_path / "r.json")
    with open(tmp_path / "r.json", encoding="utf-8") as reader:  # a reader of the old report
        done = _run(tmp_path, "--report", "r.json", "train.py", "raise")
        assert done.returncode == 130
        assert json.loads(reader.read())["script"]["path"] == "earlier.py", "never half-written"
    assert Report.load(tmp_path / "r.json").status == "interrupted"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "train.py"]


FILL = textwrap.dedent("""
    import os, sys
    import torch

    fd = os.open(os.path.join(sys.argv[1], "filler"), os.O_WRONLY | os.O_CREAT)
    for chunk in (b"x" * 4096, b"x"):  # the disk fills up, to the last byte
        try:
            while True:
                os.write(fd, chunk)
        except OSError:
            pass
    os.close(fd)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
""")


def _on_a_small_filesystem(tmp_path: Path) -> subprocess.CompletedProcess:
    """Run diagnose with its report on a 256 KiB tmpfs of its own (a private mount
    namespace: nothing stays mounted), then list the report's folder."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no private mount namespace here")
    (tmp_path / "fill.py").write_text(FILL)
    small = tmp_path / "small"
    small.mkdir()
    shell = (
        'mount -t tmpfs -o size=256k tmpfs "$1" || exit 99; '
        '"$2" -m diagnose --report "$1/r.json" fill.py "$1"; rc=$?; '
        'echo "left: $(ls -A "$1" | tr "\\n" " ")" >&2; exit $rc'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", shell, "sh", str(small), sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if done.returncode == 99:
        pytest.skip("cannot mount a tmpfs here")
    return done


def test_a_full_disk_after_the_run_costs_the_report_not_the_diagnosis(tmp_path):
    done = _on_a_small_filesystem(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "clean run" in done.stdout
    target = tmp_path / "small" / "r.json"
    assert (
        f"diagnose: could not write the report to {target}: No space left on device"
        in done.stderr.splitlines()
    )
    assert "internal error" not in done.stderr
    assert done.stderr.splitlines()[-1].split() == ["left:", "filler"], (
        "no temporary file and no start-of-run report is left behind"
    )


def test_ctrl_c_during_the_analysis_stops_it_and_keeps_what_the_run_saw(tmp_path):
    (tmp_path / "train.py").write_text((ROOT / "examples" / "fp16_overflow.py").read_text())
    report_path = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "diagnose", "--verify", "--report", "r.json", "train.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:  # the run's evidence is written as soon as it ends, before the (long) verification
        while proc.poll() is None:
            with contextlib.suppress(OSError, ReportError):
                if Report.load(report_path).status == "nonfinite":
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    report = Report.load(report_path)
    assert report.status == "nonfinite" and report.event.module == "0" and report.frames
    assert any("analysis interrupted" in w for w in report.warnings)
    assert "first non-finite" in out  # the evidence is still shown
