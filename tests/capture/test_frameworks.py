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
