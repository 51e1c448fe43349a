"""A pasted log is read with its framework's settings: what the Trainer already does is not
advice, and what its command line turned off is."""

from __future__ import annotations

from diagnose.matching.divergence import diagnose_log
from diagnose.matching.logconfig import HF_MAX_GRAD_NORM, read_framework

ROWS = """\
{'loss': 3.4512, 'grad_norm': 2.113, 'learning_rate': 0.0004987, 'epoch': 0.05}
{'loss': 3.1021, 'grad_norm': 3.872, 'learning_rate': 0.0004951, 'epoch': 0.1}
{'loss': 2.9843, 'grad_norm': 15.22, 'learning_rate': 0.0004902, 'epoch': 0.15}
{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.0004851, 'epoch': 0.2}
{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.0004801, 'epoch': 0.25}
"""


def _log(flags: str) -> str:
    return f"$ python run_clm.py --model_name_or_path gpt2 {flags} --output_dir out\n{ROWS}"


def test_a_trainer_log_clips_at_the_default_max_grad_norm_and_its_fp16_flag_is_read():
    found = read_framework("--fp16 --learning_rate 5e-4", ROWS.splitlines())
    assert found.transformers == {"fp16": True, "bf16": False, "max_grad_norm": HF_MAX_GRAD_NORM}
    assert found.precision == "fp16-autocast"


def test_flags_given_with_values_are_read_and_other_logs_have_no_trainer():
    found = read_framework("--bf16=True --max_grad_norm 0", ROWS.splitlines())
    assert found.transformers == {"fp16": False, "bf16": True, "max_grad_norm": 0.0}
    assert read_framework("--fp16", ["step 4 | loss nan"]).transformers is None
    assert read_framework("--mixed_precision fp16", ["step 4 | loss nan"]).precision == (
        "fp16-autocast"
    )


def test_clipping_is_not_advised_under_a_trainer_that_already_clips():
    fixes = [f.id for f in diagnose_log(_log("--fp16")).fixes]
    assert "enable-grad-clipping" not in fixes
    assert fixes[0] == "lower-learning-rate"


def test_clipping_is_advised_when_the_command_line_turned_the_trainers_off():
    fixes = [f.id for f in diagnose_log(_log("--fp16 --max_grad_norm 0")).fixes]
    assert "enable-grad-clipping" in fixes
