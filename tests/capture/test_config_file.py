"""--config FILE: reading YAML/JSON with clear errors, and merging over captured facts."""

from __future__ import annotations

import pytest

from diagnose.capture import load_config_file, merge_config
from diagnose.errors import UsageError
from diagnose.report import Config

CAPTURED = {
    "precision": "fp32",
    "optimizer": "AdamW",
    "lr": 1e-3,
    "grad_clip": None,
    "grad_scaler": False,
    "sources": {},
    "capture_errors": [],
}


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_file_with_exponent_numbers(tmp_path):
    path = write(tmp_path, "c.yaml", "precision: fp16\nlr: 3e-4\nwarmup_steps: 100\n")
    assert load_config_file(path) == {"precision": "fp16", "lr": 3e-4, "warmup_steps": 100}


def test_json_file(tmp_path):
    path = write(tmp_path, "c.json", '{"lr": 0.1, "grad_clip": {"kind": "value", "max": 1}}')
    assert load_config_file(path)["grad_clip"] == {"kind": "value", "max": 1}


def test_empty_file_is_no_facts(tmp_path):
    assert load_config_file(write(tmp_path, "c.yaml", "# nothing yet\n")) == {}


def test_missing_file(tmp_path):
    with pytest.raises(UsageError, match=r"nope\.yaml: no such config file$"):
        load_config_file(tmp_path / "nope.yaml")


def test_bad_yaml_names_line_and_column(tmp_path):
    path = write(tmp_path, "c.yaml", "lr: 0.1\nprecision: [fp16\n")
    with pytest.raises(UsageError) as raised:
        load_config_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:3:1: not valid YAML:")
    assert "\n" not in message


def test_bad_json_names_line_and_column(tmp_path):
    path = write(tmp_path, "c.json", '{\n  "lr": 0.1,\n}')
    with pytest.raises(UsageError, match=r"c\.json:3:1: not valid JSON"):
        load_config_file(path)


@pytest.mark.parametrize("text, kind", [("- lr\n- 0.1\n", "a list"), ("fp16\n", "a string")])
def test_not_a_mapping(tmp_path, text, kind):
    with pytest.raises(UsageError, match=f"holds a mapping of facts .*got {kind}$"):
        load_config_file(write(tmp_path, "c.yaml", text))


def test_a_folder_is_not_a_config_file(tmp_path):
    with pytest.raises(UsageError, match="is a folder"):
        load_config_file(tmp_path)


def test_user_values_override_and_add_with_sources():
    merged = merge_config(
        CAPTURED, {"lr": 0.5, "grad_clip": 1.0, "warmup_steps": 10, "precision": "16-mixed"}
    )
    assert merged["lr"] == 0.5 and merged["optimizer"] == "AdamW"
    assert merged["grad_clip"] == {"kind": "norm", "max": 1.0}
    assert merged["precision"] == "fp16-autocast"
    assert merged["warmup_steps"] == 10
    assert merged["sources"] == {
        "lr": "config-file",
        "grad_clip": "config-file",
        "warmup_steps": "config-file",
        "precision": "config-file",
    }
    Config.model_validate(merged)
    assert CAPTURED["lr"] == 1e-3  # the captured dict is left alone


def test_nested_values_merge_key_by_key():
    captured = {**CAPTURED, "grad_clip": {"kind": "norm", "max": 1.0, "calls": 5}}
    merged = merge_config(captured, {"grad_clip": {"max": 0.25}})
    assert merged["grad_clip"] == {"kind": "norm", "max": 0.25, "calls": 5}
    assert merged["sources"] == {"grad_clip.max": "config-file"}


def test_user_can_say_there_is_no_clipping():
    captured = {**CAPTURED, "grad_clip": {"kind": "norm", "max": 1.0}}
    assert merge_config(captured, {"grad_clip": None})["grad_clip"] is None


def test_numeric_strings_become_numbers_for_typed_keys():
    assert merge_config(CAPTURED, {"lr": "0.01"})["lr"] == 0.01


@pytest.mark.parametrize(
    "user, message",
    [
        ({"lr": "fast"}, r"my\.yaml: lr: Input should be a valid number"),
        ({"precision": "fp8"}, r"my\.yaml: precision: 'fp8' is not one of fp32, "),
        ({"grad_clip": {"kind": "sideways", "max": 1}}, r"my\.yaml: grad_clip\.kind: "),
        ({"grad_clip": "yes"}, r"my\.yaml: grad_clip: give a number"),
    ],
)
def test_bad_values_name_the_key(user, message):
    with pytest.raises(UsageError, match=message):
        merge_config(CAPTURED, user, origin="my.yaml")


# --- bounded reading: alias bombs, FIFOs, devices ----------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)  # 10^9 values once the aliases are expanded, in under 400 bytes


def _config_in_child(path) -> subprocess.CompletedProcess:
    """load_config_file in a child process with a timeout: a regression cannot hang the suite."""
    code = (
        "import sys\nfrom diagnose.capture import load_config_file\nfrom diagnose.errors import"
        " UsageError\ntry:\n    load_config_file(sys.argv[1])\nexcept UsageError as exc:\n"
        "    print(exc)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )


def test_a_yaml_alias_bomb_is_one_line_in_bounded_time_and_memory(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    done = _config_in_child(bomb)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{bomb}: YAML too large / too many aliases (more than 100,000 values once aliases "
        "are expanded, at line 5)"
    ]


def test_aliases_within_the_limit_still_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("base: &b {lr: 0.001}\nother: *b\nlr: 3e-4\n")
    assert load_config_file(path)["other"] == {"lr": 0.001}


def test_a_config_nested_past_the_recursion_limit_is_one_line(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UsageError, match="nested too deep"):
        load_config_file(path)


def test_a_fifo_config_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    done = _config_in_child(fifo)
    assert done.stdout.splitlines() == [f"{fifo}: not a regular file (a FIFO)"]


def test_dev_zero_as_config_is_refused_in_bounded_time():
    done = _config_in_child("/dev/zero")
    assert done.stdout.splitlines() == ["/dev/zero: not a regular file (a character device)"]


def test_a_config_past_the_size_cap_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:
        fh.truncate(4 * 1024 * 1024 + 1)
    with pytest.raises(UsageError, match="larger than the 4 MiB"):
        load_config_file(path)
