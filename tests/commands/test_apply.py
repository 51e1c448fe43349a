"""`diagnose apply REPORT.json FIX_ID`: writes the fix into the report's own script, safely.

Only the script the run used is changed (resolved, confined to the report's or the current
folder, same sha256), through an exclusively created temporary file, keeping its line endings
and mode; the backup is created exclusively; no link is written through.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from diagnose.report import Event, Fix, Report, ScriptInfo
from tests.conftest import run_cli

SOURCE = """import torch

model = torch.nn.Linear(3, 1).half()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
"""
PATCHED_LINE = "model = torch.nn.Linear(3, 1).bfloat16()"
TRAINING = (
    "import torch\r\n"
    "\r\n"
    "model = torch.nn.Linear(3, 1)\r\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\r\n"
    "loss = model(torch.ones(2, 3)).sum()\r\n"
    "loss.backward()\r\n"
    "opt.step()\r\n"
)


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def write_report(path: Path, script: str, sha256: str | None) -> Path:
    report = Report(
        status="nonfinite",
        script=ScriptInfo(path=script, sha256=sha256),
        event=Event(kind="nonfinite", phase="forward", message="inf", dtype="float16"),
        fixes=[
            Fix(id=i, score=0.5, title=i, why="", example_patch="")
            for i in ("use-bf16", "add-lr-warmup", "enable-grad-clipping")
        ],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    report.write(path)
    return path


@pytest.fixture
def saved(tmp_path):
    """A script and a report made from it, saved beside it with a relative script path."""
    script = tmp_path / "train.py"
    script.write_text(SOURCE)
    return script, write_report(tmp_path / "report.json", "train.py", sha(SOURCE))


@pytest.fixture
def umask_022():
    """The usual umask, so that a file created with the default mode would show it."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_apply_writes_the_patch_and_a_backup(saved, tmp_path):
    script, report = saved
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "applied use-bf16 to train.py (original kept as train.py.diagnose-bak)"
    )
    assert PATCHED_LINE in script.read_text()
    assert (tmp_path / "train.py.diagnose-bak").read_text() == SOURCE
    assert listing(tmp_path) == {"train.py", "train.py.diagnose-bak", "report.json"}


def test_report_found_from_another_folder(saved, tmp_path):
    script, report = saved
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("apply", str(report), "use-bf16", "--no-backup", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert PATCHED_LINE in script.read_text()
    assert not (tmp_path / "train.py.diagnose-bak").exists()


def test_of_two_scripts_of_that_name_the_one_the_report_was_made_from_is_patched(saved, tmp_path):
    script, report = saved
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print('another script')\n")
    result = run_cli("apply", str(report), "use-bf16", cwd=work)
    assert result.returncode == 0, result.stderr
    assert PATCHED_LINE in script.read_text()
    assert (work / "train.py").read_text() == "print('another script')\n"


def test_dry_run_prints_the_diff_and_writes_nothing(saved, tmp_path):
    script, report = saved
    before = listing(tmp_path)
    result = run_cli("apply", "--dry-run", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["--- a/train.py", "+++ b/train.py"]
    assert f"+{PATCHED_LINE}" in result.stdout.splitlines()
    assert script.read_text() == SOURCE
    assert listing(tmp_path) == before


def test_a_symlink_at_the_old_temporary_name_is_not_written_through(saved, tmp_path):
    script, report = saved
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's other file\n")
    victim.chmod(0o640)
    (tmp_path / ".train.py.diagnose-tmp").symlink_to(victim)
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "the user's other file\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o640
    assert (tmp_path / ".train.py.diagnose-tmp").is_symlink()
    assert PATCHED_LINE in script.read_text()
    assert not script.is_symlink()
    assert listing(tmp_path) == {
        "train.py",
        "train.py.diagnose-bak",
        "report.json",
        "victim.txt",
        ".train.py.diagnose-tmp",
    }


def test_a_dangling_symlink_at_the_backup_name_is_skipped_not_followed(saved, tmp_path):
    script, report = saved
    assert not script.is_symlink()
    planted = tmp_path / "planted.py"
    (tmp_path / "train.py.diagnose-bak").symlink_to(planted)
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "applied use-bf16 to train.py (original kept as train.py.diagnose-bak.1)"
    )
    assert not os.path.lexists(planted)
    assert (tmp_path / "train.py.diagnose-bak").is_symlink()
    assert (tmp_path / "train.py.diagnose-bak.1").read_text() == SOURCE
    assert not (tmp_path / "train.py.diagnose-bak.1").is_symlink()


def test_an_existing_backup_is_kept_and_a_fresh_name_used(saved, tmp_path):
    _, report = saved
    (tmp_path / "train.py.diagnose-bak").write_text("an older backup\n")
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "train.py.diagnose-bak").read_text() == "an older backup\n"
    assert (tmp_path / "train.py.diagnose-bak.1").read_text() == SOURCE


def test_a_symlinked_script_patches_its_target_and_stays_a_link(tmp_path):
    real = tmp_path / "src" / "train.py"
    real.parent.mkdir()
    real.write_text(SOURCE)
    link = tmp_path / "train.py"
    link.symlink_to(Path("src") / "train.py")
    report = write_report(tmp_path / "report.json", "train.py", sha(SOURCE))
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "applied use-bf16 to src/train.py (the target of train.py; "
        "original kept as src/train.py.diagnose-bak)"
    )
    assert link.is_symlink() and os.readlink(link) == str(Path("src") / "train.py")
    assert PATCHED_LINE in real.read_text()
    assert (tmp_path / "src" / "train.py.diagnose-bak").read_text() == SOURCE


def test_crlf_endings_are_kept_on_every_line_also_the_added_ones(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(TRAINING.encode())
    report = write_report(tmp_path / "report.json", "train.py", sha(TRAINING))
    result = run_cli("apply", str(report), "enable-grad-clipping", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = script.read_bytes()
    lines = data.split(b"\r\n")
    assert b"torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)" in lines
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert data.replace(b"\r\n", b"\n").decode() == TRAINING.replace("\r\n", "\n").replace(
        "loss.backward()\n",
        "loss.backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    )
    assert (tmp_path / "train.py.diagnose-bak").read_bytes() == TRAINING.encode()


def test_the_scripts_mode_is_kept_and_the_backup_gets_it_too(saved, tmp_path, umask_022):
    script, report = saved
    script.chmod(0o700)
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(script.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "train.py.diagnose-bak").stat().st_mode) == 0o700


def test_an_executable_script_stays_executable(saved, tmp_path):
    script, report = saved
    script.chmod(0o755)
    assert run_cli("apply", str(report), "use-bf16", cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_changed_script_is_refused_unless_forced(saved, tmp_path):
    script, report = saved
    edited = SOURCE + "print('edited')\n"
    script.write_text(edited)
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "diagnose: error: train.py: changed since the report was made (its sha256 differs); "
        "run diagnose again (--force patches it anyway)"
    )
    assert script.read_text() == edited
    assert listing(tmp_path) == {"train.py", "report.json"}
    forced = run_cli("apply", "--force", str(report), "use-bf16", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert script.read_text() == edited.replace(".half()", ".bfloat16()")


def test_a_report_without_hash_is_refused_unless_forced(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SOURCE + "print('edited since')\n")
    report = write_report(tmp_path / "report.json", "train.py", None)
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "diagnose: error: train.py: the report has no hash of the script it was made from, so "
        "it cannot tell whether the script changed since (--force patches it anyway)"
    )
    assert script.read_text() == SOURCE + "print('edited since')\n"
    forced = run_cli("apply", "--force", str(report), "use-bf16", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert PATCHED_LINE in script.read_text()


@pytest.mark.parametrize("named", ["../elsewhere/other.py", "ABSOLUTE", "escape.py"])
def test_a_report_naming_a_file_outside_its_folder_is_refused_unless_forced(tmp_path, named):
    """The report names a file with the right hash (a crafted report can), outside its folder:
    by ``..``, by an absolute path, or through a symlink leading out."""
    other = tmp_path / "elsewhere" / "other.py"
    other.parent.mkdir()
    other.write_text(SOURCE)
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "escape.py").symlink_to(other)
    named = str(other) if named == "ABSOLUTE" else named
    report = write_report(reports / "report.json", named, sha(SOURCE))
    result = run_cli("apply", str(report), "use-bf16", cwd=reports)
    assert result.returncode == 2
    line = result.stderr.strip()
    assert line.startswith("diagnose: error: ") and "\n" not in line
    assert line.endswith(
        f"resolves to {other}, outside the report's folder or the current folder; "
        "the report may name only its own script (--force patches it anyway)"
    )
    assert other.read_text() == SOURCE
    assert listing(other.parent) == {"other.py"}
    forced = run_cli("apply", "--force", str(report), "use-bf16", cwd=reports)
    assert forced.returncode == 0, forced.stderr
    assert PATCHED_LINE in other.read_text()


def test_a_script_named_with_script_is_the_users_choice_but_still_hash_checked(tmp_path):
    other = tmp_path / "elsewhere" / "train.py"
    other.parent.mkdir()
    other.write_text(SOURCE)
    reports = tmp_path / "reports"
    report = write_report(reports / "report.json", "train.py", sha(SOURCE))
    result = run_cli("apply", str(report), "use-bf16", "--script", str(other), cwd=reports)
    assert result.returncode == 0, result.stderr
    assert PATCHED_LINE in other.read_text()
    again = run_cli("apply", str(report), "use-bf16", "--script", str(other), cwd=reports)
    assert again.returncode == 2
    assert "changed since the report was made" in again.stderr


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_script_path_that_is_not_a_regular_file_gets_one_line(tmp_path, kind):
    script = tmp_path / "train.py"
    if kind == "fifo":
        os.mkfifo(script)
    else:
        script.mkdir()
    report = write_report(tmp_path / "report.json", "train.py", sha(SOURCE))
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    what = "a FIFO" if kind == "fifo" else "a folder"
    assert result.stderr.strip() == f"diagnose: error: train.py: not a regular file ({what})"


def test_bad_input_gets_one_line(saved, tmp_path):
    _, report = saved
    cases = [
        (
            ["apply", str(report), "nope"],
            "diagnose: error: the report has no fix 'nope' "
            "(its fixes: use-bf16, add-lr-warmup, enable-grad-clipping)",
        ),
        (
            ["apply", str(report), "add-lr-warmup"],
            "diagnose: error: add-lr-warmup: no patch to apply (no automatic patch: expected one "
            "`opt.step()` statement)",
        ),
        (
            ["apply", str(tmp_path / "missing.json"), "use-bf16"],
            f"diagnose: error: {tmp_path / 'missing.json'}: no such report file",
        ),
    ]
    for args, line in cases:
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.strip() == line


def test_a_missing_script_gets_one_line(tmp_path):
    report = write_report(tmp_path / "reports" / "report.json", "gone.py", sha(SOURCE))
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "diagnose: error: gone.py: the script of this report is not there (looked in the "
        "current folder and the report's folder); name it with --script"
    )


def test_a_report_from_a_real_run_of_a_crlf_script_applies_and_keeps_crlf(tmp_path):
    """The run's hash is of the script's bytes, CRLF included, and the patch keeps them."""
    source = (
        "import torch\r\n"
        "\r\n"
        "model = torch.nn.Linear(4, 1).half()\r\n"
        "torch.nn.init.ones_(model.weight)  # 4 x 6e4 passes fp16's 65504 on every run\r\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\r\n"
        "x = torch.full((2, 4), 6e4, dtype=torch.float16)\r\n"
        "for step in range(3):\r\n"
        "    loss = model(x).float().mean()\r\n"
        "    loss.backward()\r\n"
        "    opt.step()\r\n"
    )
    script = tmp_path / "train.py"
    script.write_bytes(source.encode())
    run = run_cli("--format", "json", "--report", "report.json", "train.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    result = run_cli("apply", "report.json", "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        script.read_bytes()
        == source.replace(".half()", ".bfloat16()")
        .replace("dtype=torch.float16", "dtype=torch.bfloat16")
        .encode()
    )
