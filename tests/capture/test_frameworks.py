"""transformers TrainingArguments, captured only when the script builds them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.capture.conftest import snapshot

transformers = pytest.importorskip("transformers")


def arguments(tmp_path, **overrides):
    settings = dict(
        output_dir=str(tmp_path),
        use_cpu=True,
        report_to=[],
        learning_rate=5e-4,
        warmup_steps=10,
        max_grad_norm=0.5,
        gradient_accumulation_steps=2,
        lr_scheduler_type="cosine",
        optim="adamw_torch",
        logging_nan_inf_filter=True,
    )
    settings.update(overrides)
    return transformers.TrainingArguments(**settings)


def test_training_arguments_are_captured(capture, tmp_path):
    arguments(tmp_path)
    config = snapshot(capture)
    hf = config["transformers"]
    assert hf["class"] == "TrainingArguments"
    assert hf["learning_rate"] == 5e-4 and hf["warmup_steps"] == 10
    assert hf["max_grad_norm"] == 0.5 and hf["gradient_accumulation_steps"] == 2
    assert hf["lr_scheduler_type"] == "cosine" and hf["optim"] == "adamw_torch"
    assert hf["logging_nan_inf_filter"] is True
    assert hf["fp16"] is False and hf["bf16"] is False


def test_declared_facts_fill_in_before_training_starts(capture, tmp_path):
    arguments(tmp_path)
    config = snapshot(capture)
    assert config["lr"] == 5e-4
    assert config["grad_clip"] == {"kind": "norm", "max": 0.5, "calls": 0}
    assert config["sources"] == {"lr": "transformers", "grad_clip": "transformers"}


@pytest.mark.slow
def test_training_arguments_from_a_script_that_imports_transformers_later(tmp_path):
    code = textwrap.dedent(f"""
        import json, sys
        from diagnose.capture import ConfigCapture
        cap = ConfigCapture().install()
        assert "transformers" not in sys.modules
        from transformers import TrainingArguments
        TrainingArguments(output_dir={str(tmp_path)!r}, use_cpu=True, report_to=[],
                          learning_rate=0.25, max_grad_norm=0.0)
        config = cap.snapshot()
        cap.uninstall()
        print(json.dumps(config["transformers"]))
        print(json.dumps(config["grad_clip"]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    hf_line, clip_line = done.stdout.strip().splitlines()[-2:]
    assert json.loads(hf_line)["learning_rate"] == 0.25
    assert json.loads(clip_line) is None  # max_grad_norm=0 disables clipping in the Trainer


def _origin_of_training_arguments(tmp_path, script: str, argv: list[str]) -> dict | None:
    """Run ``script`` under a capture with ``argv`` as its command line, as the runner does;
    where its TrainingArguments got their arguments."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    code = textwrap.dedent(f"""
        import json, runpy, sys
        from diagnose.capture import ConfigCapture
        sys.argv = [{str(path)!r}, *{argv!r}]
        cap = ConfigCapture().install()
        runpy.run_path(sys.argv[0], run_name="__main__")
        config = cap.snapshot()
        cap.uninstall()
        print(json.dumps((config.get("origins") or {{}}).get("transformers.TrainingArguments")))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


PARSED = """
    import sys
    from transformers import HfArgumentParser, TrainingArguments
    parser = HfArgumentParser(TrainingArguments)
    if sys.argv[-1].endswith(".json"):
        (args,) = parser.parse_json_file(json_file=sys.argv[-1])
    else:
        (args,) = parser.parse_args_into_dataclasses()
"""


@pytest.mark.slow
def test_training_arguments_parsed_from_the_command_line_came_from_there(tmp_path):
    argv = ["--output_dir", str(tmp_path), "--use_cpu", "--learning_rate", "0.25"]
    origin = _origin_of_training_arguments(tmp_path, PARSED, argv)
    assert origin is not None and origin["kind"] == "argv"
    assert origin["token"] in argv and argv[origin["index"]] == origin["token"]


@pytest.mark.slow
def test_training_arguments_read_from_a_json_file_came_from_that_file(tmp_path):
    settings = tmp_path / "args.json"
    settings.write_text(json.dumps({"output_dir": str(tmp_path), "learning_rate": 0.25}))
    origin = _origin_of_training_arguments(tmp_path, PARSED, [str(settings)])
    assert origin is not None and (origin["kind"], origin["file"]) == ("config-file", str(settings))


@pytest.mark.slow
def test_training_arguments_built_in_the_script_came_from_that_call(tmp_path):
    script = f"""
        from transformers import TrainingArguments
        # TrainingArguments(output_dir="elsewhere")
        args = TrainingArguments(output_dir={str(tmp_path)!r}, learning_rate=0.25)
    """
    origin = _origin_of_training_arguments(tmp_path, script, [])
    assert origin is not None and (origin["kind"], origin["line"]) == ("script", 4)
    assert origin["key"] == "TrainingArguments"
