"""`diagnose match`: exit codes, JSON shape, stdin logs and extra dataset files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SEED, run_cli

GRADSCALER = """\
Traceback (most recent call last):
  File "finetune.py", line 112, in <module>
    scaler.unscale_(optimizer)
ValueError: Attempting to unscale FP16 gradients.
"""


def test_piped_traceback_matches_and_prints_solutions():
    out = run_cli("match", "-", stdin=GRADSCALER)
    assert out.returncode == 0, out.stderr
    assert "1. gradscaler-attempting-to-unscale-fp16-gradients" in out.stdout
    assert "Solutions:" in out.stdout and "Example fix:" in out.stdout


def test_a_single_argument_naming_a_file_reads_the_file(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(GRADSCALER.encode() + b"\xff progress bar bytes that are not UTF-8\n")
    out = run_cli("match", str(log))
    assert out.returncode == 0, out.stderr
    assert "1. gradscaler-attempting-to-unscale-fp16-gradients" in out.stdout
    assert str(log) not in out.stdout


def test_words_that_are_not_a_file_are_the_message_and_dash_still_reads_stdin():
    words = run_cli("match", "--format", "json", "KeyError:", "'epoch_loop'")
    lines = json.loads(words.stdout)["query"]["error_lines"]
    assert lines[0]["text"] == "KeyError: 'epoch_loop'"
    piped = run_cli("match", "-", stdin=GRADSCALER)
    assert piped.returncode == 0 and "gradscaler-attempting" in piped.stdout


@pytest.mark.parametrize("name", ["no-such.log", "logs/train", "run.log.1", "out.txt"])
def test_a_mistyped_file_name_is_one_line_and_status_2_not_a_message(tmp_path, name):
    missing = run_cli("match", name, cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"diagnose: error: {name}: no such file (to match it as a message: --message TEXT)"
    ]
    assert missing.stdout == ""


def test_a_folder_is_not_read_as_a_log(tmp_path):
    folder = run_cli("match", str(tmp_path))
    assert folder.returncode == 2
    assert folder.stderr.strip().endswith(
        f"{tmp_path}: a folder, not a log file (to match it as a message: --message TEXT)"
    )


def test_message_passes_text_that_looks_like_a_file_name_as_the_message(tmp_path):
    out = run_cli("match", "--format", "json", "--message", "no-such.log", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["query"]["error_lines"][0]["text"] == "no-such.log"
    both = run_cli("match", "--message", "x", "y", cwd=tmp_path)
    assert both.returncode == 2 and len(both.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "word", ["KeyError", "torch.cuda.OutOfMemoryError", "RuntimeError:a/b", "nan", "3.5"]
)
def test_one_word_messages_are_not_taken_for_paths(word):
    from diagnose.commands.match import looks_like_a_path

    assert not looks_like_a_path(word)


def test_help_says_a_file_can_be_given():
    out = run_cli("match", "--help")
    assert "the path of a file that holds it" in " ".join(out.stdout.split())


def test_json_shape():
    out = run_cli("match", "--format", "json", "--limit", "2", stdin=GRADSCALER)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"query", "matches", "nearest", "training_log", "dump"}
    assert data["training_log"] is None  # a traceback, not a log whose loss went nan
    first = data["matches"][0]
    assert {"record_id", "slug", "score", "reason", "kind"} <= set(first)
    assert first["slug"] == "gradscaler-attempting-to-unscale-fp16-gradients"
    assert 0 <= first["score"] <= 1 and len(data["matches"]) <= 2
    assert data["query"]["error_lines"][0]["class"] == "ValueError"


def test_no_match_exits_1_and_shows_nearest_as_such():
    out = run_cli("match", "zebra giraffe quokka")
    assert out.returncode == 1
    assert "No record matches this error." in out.stdout
    data = json.loads(run_cli("match", "--format", "json", "zebra giraffe quokka").stdout)
    assert data["matches"] == [] and all(n["score"] < 0.72 for n in data["nearest"])


def test_near_misses_are_shown_as_not_matches_and_unrelated_records_not_at_all():
    out = run_cli("match", "RuntimeError: the shapes of mat1 and mat2 do not fit")
    assert out.returncode == 1
    assert "No record matches this error." in out.stdout
    assert "Not matches: the closest records score below the 0.72 a match needs" in out.stdout
    assert "  - mat1-and-mat2-shapes-cannot-be-multiplied  score 0." in out.stdout
    far = run_cli("match", "zebra giraffe quokka")
    assert "Not matches" not in far.stdout
    assert "No record comes close either" in far.stdout


def test_a_traceback_without_its_message_asks_for_the_message():
    ipython = (
        "RuntimeError                              Traceback (most recent call last)\n"
        "<ipython-input-14-82ec354902a5> in <module>()\n"
        "----> 8     train_epoch()\n"
    )
    out = run_cli("match", "-", stdin=ipython)
    assert out.returncode == 1
    assert "[final] RuntimeError  (its message is not in the input)" in out.stdout
    assert "Traceback (most recent call last)" not in out.stdout
    assert "paste the line after the traceback" in out.stdout


def test_usage_errors_exit_2_with_one_line():
    empty = run_cli("match", stdin="")
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
    missing = run_cli("match", "--dataset", "/no/such/file.json", "boom")
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == "diagnose: error: --dataset /no/such/file.json: no such file or folder"
    )


def test_extra_dataset_adds_records_and_reports_bad_ones(tmp_path):
    good = json.loads(SEED.read_text(encoding="utf-8"))["record"]
    good.update(
        id="00000000000000aa",
        slug="my-team-flux-capacitor",
        errorMessage="FluxCapacitorError: flux level 88 exceeded",
        messagePattern=r"flux level \d+ exceeded",
        errorClass="FluxCapacitorError",
    )
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(good) + "\n" + '{"id": 3}\n', encoding="utf-8")
    out = run_cli(
        "match",
        "--dataset",
        str(path),
        "--format",
        "json",
        "FluxCapacitorError: flux level 121 exceeded",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["matches"][0]["slug"] == "my-team-flux-capacitor"
    problems = [line for line in out.stderr.splitlines() if "mine.jsonl:2" in line]
    assert problems, out.stderr


# --- bounded work: backtracking patterns, FIFOs, endless stdin ---------------------------------

BACKTRACKING = ["(?=(a+)+$)", "(?:x|(a+)+$)", "((a+)+)?$"]


def _evil_dataset(tmp_path, pattern: str):
    shipped = sorted((ROOT / "dataset" / "records").glob("*.json"))[0]
    evil = json.loads(shipped.read_text(encoding="utf-8"))["record"]
    evil.update(id="00000000000000ee", slug="evil", messagePattern=pattern, errorMessage="aaa!")
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(evil), encoding="utf-8")
    return path


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_a_backtracking_record_pattern_finishes_and_other_records_still_match(tmp_path, pattern):
    path = _evil_dataset(tmp_path, pattern)
    out = run_cli("match", "--dataset", str(path), "a" * 40 + "!", timeout=60)
    assert out.returncode == 1  # nothing matches, in bounded time
    out = run_cli(
        "match",
        "--dataset",
        str(path),
        "--format",
        "json",
        "a" * 40 + "!\nRuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        timeout=60,
    )
    assert json.loads(out.stdout)["matches"][0]["kind"] == "pattern", out.stderr


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_a_crashing_script_with_a_backtracking_dataset_finishes(tmp_path, pattern):
    path = _evil_dataset(tmp_path, pattern)
    script = tmp_path / "crash.py"
    script.write_text(f"raise ValueError({'a' * 40 + '!'!r})\n")
    out = run_cli("--dataset", str(path), "--format", "json", str(script), timeout=60)
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["status"] == "exception"


def test_a_pattern_that_runs_out_of_time_is_named_once(tmp_path):
    path = _evil_dataset(tmp_path, "((a+)+)?$")
    out = run_cli("match", "--dataset", str(path), "a" * 40 + "!", timeout=60)
    named = [line for line in out.stderr.splitlines() if "time bound" in line]
    assert named == [
        "diagnose: warning: record 00000000000000ee: its messagePattern ran past its time bound "
        "and was counted as not matching"
    ]


def test_a_fifo_or_a_device_as_file_is_one_line(tmp_path):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        out = run_cli("match", path, timeout=60)
        assert out.returncode == 2
        assert out.stderr.startswith(f"diagnose: error: {path}: not a regular file (a ")


def test_an_endless_stdin_is_refused_in_bounded_time():
    with open("/dev/zero", "rb") as zero:
        out = subprocess.run(
            [sys.executable, "-m", "diagnose", "match", "-"],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert out.returncode == 2
    assert out.stderr.startswith("diagnose: error: stdin: more than the 256 MiB")


def test_only_the_end_of_a_big_log_file_is_read(tmp_path):
    log = tmp_path / "train.log"
    with log.open("w") as fh:
        fh.write("step 1 ok\n" * 1_500_000)  # 15 MB of progress
        fh.write("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n")
    out = run_cli("match", "--format", "json", str(log), timeout=60)
    assert out.returncode == 0, out.stderr
    assert (
        json.loads(out.stdout)["matches"][0]["slug"] == "mat1-and-mat2-shapes-cannot-be-multiplied"
    )
