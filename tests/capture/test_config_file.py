"""--config FILE: reading YAML/JSON with clear errors, and merging over captured facts."""

from __future__ import annotations

import pytest

from diagnose.capture import load_config_file, merge_config
from diagnose.errors import UsageError
from diagnose.report import Config

CAPTURED = {"precision": "fp32", "optimizer": "AdamW", "lr": 1e-3, "grad_clip": None,
            "grad_scaler": False, "sources": {}, "capture_errors": []}


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
    merged = merge_config(CAPTURED, {"lr": 0.5, "grad_clip": 1.0, "warmup_steps": 10,
                                     "precision": "16-mixed"})
    assert merged["lr"] == 0.5 and merged["optimizer"] == "AdamW"
    assert merged["grad_clip"] == {"kind": "norm", "max": 1.0}
    assert merged["precision"] == "fp16-autocast"
    assert merged["warmup_steps"] == 10
    assert merged["sources"] == {"lr": "config-file", "grad_clip": "config-file",
                                 "warmup_steps": "config-file", "precision": "config-file"}
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


@pytest.mark.parametrize("user, message", [
    ({"lr": "fast"}, r"my\.yaml: lr: Input should be a valid number"),
    ({"precision": "fp8"}, r"my\.yaml: precision: 'fp8' is not one of fp32, "),
    ({"grad_clip": {"kind": "sideways", "max": 1}}, r"my\.yaml: grad_clip\.kind: "),
    ({"grad_clip": "yes"}, r"my\.yaml: grad_clip: give a number"),
])
def test_bad_values_name_the_key(user, message):
    with pytest.raises(UsageError, match=message):
        merge_config(CAPTURED, user, origin="my.yaml")
