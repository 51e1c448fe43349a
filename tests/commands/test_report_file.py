"""The ``--report`` target: resolved and checked before the run, one clear line when it
cannot be written, and a stream (a pipe, ``/dev/stdout``) gets one whole report."""

from __future__ import annotations

import argparse
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.commands.report_file import ReportFile
from diagnose.commands.run import run_inputs
from diagnose.errors import UsageError
from diagnose.report import Report
from tests.conftest import run_cli
from tests.untrusted import examples


def test_a_relative_path_is_fixed_to_where_it_was_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = ReportFile.check(tmp_path.joinpath("r.json").relative_to(tmp_path))
    monkeypatch.chdir("/")
    assert target.path == tmp_path / "r.json"


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("missing/r.json", "no such folder"),
        (".", "is a folder, not a file"),
    ],
)
def test_a_path_that_cannot_take_a_report_is_one_clear_line(tmp_path, name, fragment):
    with pytest.raises(UsageError) as info:
        ReportFile.check(tmp_path / name)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_a_stream_gets_the_final_report_only(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    target = ReportFile.check(fifo)
    evidence = Report(status="nonfinite", script={"path": "train.py"})
    target.claim(evidence)
    target.checkpoint(evidence)
    assert target.write(Report(status="clean", script={"path": "train.py"}))
    reader.join(timeout=30)
    assert json.loads(got[0])["status"] == "clean"


# --- a report never replaces what the user did not ask to have replaced ----------------------

ROLES = ("script", "config", "dataset", "rules", "arg", "arg=")
SPELLINGS = ("same", "dotted", "symlink", "link-chain", "hardlink")


def _spell(tmp_path, target, how: str):
    """Another name for ``target``: the report path an attacker (or a typo) would give."""
    if how == "same":
        return target
    if how == "dotted":
        return tmp_path / "sub" / ".." / target.name
    link = tmp_path / f"{how}.json"
    if how == "symlink":
        os.symlink(target, link)
    elif how == "link-chain":
        os.symlink(target, tmp_path / "hop")
        os.symlink(tmp_path / "hop", link)
    else:
        os.link(target, link)
    return link


def _args(tmp_path, role: str, victim):
    script = victim if role == "script" else tmp_path / "train.py"
    script.write_text("print('trained')\n") if not script.exists() else None
    return argparse.Namespace(
        script=str(script),
        config=victim if role == "config" else None,
        dataset=[victim] if role == "dataset" else [],
        rules=[victim] if role == "rules" else [],
        script_args={"arg": [str(victim)], "arg=": [f"--data={victim}"]}.get(role, ["--lr", "1"]),
    )


@given(
    role=st.sampled_from(ROLES),
    how=st.sampled_from(SPELLINGS),
    text=st.sampled_from(["x = 1\n", '{"a": 1}\n']),
)
@examples(60)
def test_a_report_path_naming_an_input_of_the_run_is_refused_in_one_line(
    tmp_path_factory, role, how, text
):
    tmp_path = tmp_path_factory.mktemp("run")
    (tmp_path / "sub").mkdir()
    victim = tmp_path / "input.txt"
    victim.write_text(text)
    given_path = _spell(tmp_path, victim, how)
    with pytest.raises(UsageError) as info:
        ReportFile.check(Path(given_path), run_inputs(_args(tmp_path, role, victim)))
    message = str(info.value)
    assert "\n" not in message and message.startswith("--report ")
    assert "would overwrite it" in message
    assert victim.read_text() == text


def test_an_existing_file_that_is_not_a_report_is_never_replaced(tmp_path):
    module = tmp_path / "utils.py"  # imported by the script, named nowhere on the command line
    module.write_text("def helper(): ...\n")
    with pytest.raises(UsageError, match="exists and is not a diagnose report; not replaced"):
        ReportFile.check(module)
    readme = tmp_path / "README.md"
    readme.write_text("# notes\n")
    os.symlink(readme, tmp_path / "r.json")
    with pytest.raises(UsageError, match="not a diagnose report"):
        ReportFile.check(tmp_path / "r.json")


def test_a_new_path_an_empty_file_and_an_earlier_report_are_written(tmp_path):
    ReportFile.check(tmp_path / "new.json")
    (tmp_path / "empty.json").write_text("")
    ReportFile.check(tmp_path / "empty.json")
    earlier = tmp_path / "earlier.json"
    Report.model_validate({"status": "clean", "script": {"path": "t.py"}}).write(earlier)
    ReportFile.check(earlier).claim(
        Report.model_validate({"status": "clean", "script": {"path": "u.py"}})
    )
    assert json.loads(earlier.read_text())["script"]["path"] == "u.py"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_link_to_another_users_file_is_refused_and_never_replaced(tmp_path):
    theirs = tmp_path / "theirs.json"
    Report.model_validate({"status": "clean", "script": {"path": "t.py"}}).write(theirs)
    os.chown(theirs, 4321, 4321)
    before = theirs.read_bytes()
    os.symlink(theirs, tmp_path / "mine.json")
    with pytest.raises(UsageError, match=r"belongs to another user \(uid 4321\); not replaced"):
        ReportFile.check(tmp_path / "mine.json")
    with pytest.raises(PermissionError):  # and the writer itself refuses, whoever calls it
        Report.model_validate({"status": "clean", "script": {"path": "x.py"}}).write(
            tmp_path / "mine.json"
        )
    assert theirs.read_bytes() == before and os.stat(theirs).st_uid == 4321


def test_the_script_named_as_its_own_report_never_runs_and_is_unchanged(tmp_path):
    script = tmp_path / "train.py"
    source = "open('ran', 'w').write('yes')\n"
    script.write_text(source)
    run = run_cli("--format", "text", "--report", str(script), str(script), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "is the script of this run" in run.stderr
    assert script.read_text() == source and not (tmp_path / "ran").exists()


def test_an_output_the_script_is_told_to_write_is_refused_as_a_report_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the script resolves its own relative paths
    args = argparse.Namespace(
        script=str(tmp_path / "train.py"),
        config=None,
        dataset=[],
        rules=[],
        script_args=["--save=model.pt"],
    )
    (tmp_path / "train.py").write_text("")
    with pytest.raises(UsageError, match=r"is a file named in the script's arguments \(model.pt\)"):
        ReportFile.check(tmp_path / "model.pt", run_inputs(args))


def test_a_file_the_script_puts_at_the_report_path_is_kept_and_the_diagnosis_still_shown(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "m = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(2):\n"
        "    opt.zero_grad(); m(torch.randn(4, 2)).sum().backward(); opt.step()\n"
        "open('out.bin', 'wb').write(b'weights')\n"
    )
    run = run_cli("--format", "text", "--report", "out.bin", str(script), cwd=tmp_path)
    assert (tmp_path / "out.bin").read_bytes() == b"weights"
    assert "is no longer this run's report" in run.stderr and "internal error" not in run.stderr
    assert "optimizer steps" in run.stdout  # the diagnosis is shown all the same
