"""Settings a framework owns, set where the framework got them: the Lightning Trainer's
gradient_clip_val and precision, transformers' fp16 switch turned into bf16."""

from __future__ import annotations

import hashlib
import textwrap

import pytest

from diagnose.patches import make_patch
from diagnose.patches.source import NoPatch
from diagnose.patches.trainer_settings import with_mapping_key
from tests.patches.helpers import diff_body, report_for

LIGHTNING = {"class": "Trainer", "gradient_clip_val": None}


def _config_file(path, text: str, line: int, key: str, **extra) -> tuple:
    """``text`` written to ``path``, and the origin that names its ``line`` as the run read it."""
    path.write_text(text, encoding="utf-8")
    origin = {
        "kind": "config-file",
        "file": str(path),
        "line": line,
        "key": key,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        **extra,
    }
    return path, origin


MODULE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)
"""


def _patched(tmp_path, fix: str, source: str, config: dict, argv: list[str] | None = None):
    """``fix``'s patch of ``source`` (as train.py) for a report with ``config`` and ``argv``."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    report = report_for(script, config=config)
    if argv is not None:
        report.script.argv = argv
    return make_patch(fix, script, report)


def _clip(
    tmp_path,
    source: str,
    origin: dict | None,
    argv: list[str] | None = None,
    fix: str = "enable-grad-clipping",
    lightning: dict | None = None,
):
    origins = {"lightning.Trainer": origin} if origin else {}
    config = {"lightning": lightning or LIGHTNING, "origins": origins}
    return _patched(tmp_path, fix, source, config, argv)


def test_the_trainer_call_in_the_script_gains_the_argument(tmp_path):
    source = MODULE + "\ntrainer = L.Trainer(max_epochs=2, logger=False)\n"
    line = source.count("\n")
    result = _clip(tmp_path, source, {"kind": "script", "line": line, "key": "trainer"})
    assert diff_body(result) == [
        "-trainer = L.Trainer(max_epochs=2, logger=False)",
        "+trainer = L.Trainer(max_epochs=2, logger=False, gradient_clip_val=1.0)",
    ]
    assert "gradient_clip_val=1.0" in result.note


def test_a_trainer_call_spread_over_lines_keeps_its_layout(tmp_path):
    source = MODULE + "\ntrainer = L.Trainer(\n    max_epochs=2,\n    logger=False,\n)\n"
    line = source.count("\n") - 3
    result = _clip(tmp_path, source, {"kind": "script", "line": line, "key": "trainer"})
    assert result.new_source is not None and result.new_source.endswith(
        "trainer = L.Trainer(\n    max_epochs=2,\n    logger=False,\n    gradient_clip_val=1.0,\n)\n"
    )


def test_a_trainer_given_unpacked_arguments_gets_no_patch(tmp_path):
    source = MODULE + "\ntrainer = L.Trainer(**settings)\n"
    line = source.count("\n")
    result = _clip(tmp_path, source, {"kind": "script", "line": line, "key": "trainer"})
    assert result.diff is None and "unpacked" in result.note


def test_the_trainer_section_of_the_config_file_gains_the_key(tmp_path):
    text = "seed_everything: 0\ntrainer:  # the Trainer\n  max_epochs: 2\n\n  logger: false\n"
    config, origin = _config_file(tmp_path / "cli.yaml", text, 2, "trainer")
    result = _clip(tmp_path, MODULE, origin)
    assert result.file == str(config)
    assert result.file_source == (
        "seed_everything: 0\ntrainer:  # the Trainer\n  gradient_clip_val: 1.0\n"
        "  max_epochs: 2\n\n  logger: false\n"
    )
    assert "cli.yaml:2" in result.note


def test_trainer_tokens_on_the_command_line_get_one_more(tmp_path):
    origin = {"kind": "argv", "key": "trainer", "token": "--trainer.max_epochs=2", "index": 1}
    argv = ["fit", "--trainer.max_epochs=2"]
    result = _clip(tmp_path, MODULE, origin, argv=argv)
    assert result.argv == [*argv, "--trainer.gradient_clip_val=1.0"]


def test_no_known_place_says_which_argument_to_give_instead_of_a_clip_call(tmp_path):
    result = _clip(tmp_path, MODULE + "\nloss.backward()\n", None)
    assert result.diff is None and "gradient_clip_val=1.0" in result.note


def test_a_module_that_optimizes_by_hand_is_told_to_clip_in_its_step(tmp_path):
    source = MODULE + "\n    automatic_optimization = False\n"
    result = _clip(tmp_path, source, {"kind": "script", "line": 1, "key": "trainer"})
    assert result.diff is None and "self.clip_gradients" in result.note


def test_float16_precision_is_the_trainers_own_to_switch_to_bfloat16(tmp_path):
    fp16 = {**LIGHTNING, "precision": "16-mixed"}
    source = MODULE + '\ntrainer = L.Trainer(precision="16-mixed", max_epochs=2)\n'
    line = source.count("\n")
    origin = {"kind": "script", "line": line, "key": "trainer"}
    result = _clip(tmp_path, source, origin, fix="use-bf16", lightning=fp16)
    assert diff_body(result)[1] == '+trainer = L.Trainer(precision="bf16-mixed", max_epochs=2)'
    origin = {"kind": "argv", "key": "trainer", "token": "--trainer.precision=16", "index": 1}
    argv = ["fit", "--trainer.precision=16", "--trainer.max_epochs=2"]
    result = _clip(tmp_path, MODULE, origin, argv=argv, fix="use-bf16", lightning=fp16)
    assert result.argv == ["fit", "--trainer.max_epochs=2", "--trainer.precision=bf16-mixed"]


class TestWithMappingKey:
    def test_a_value_there_is_replaced_in_place(self):
        text = "trainer:\n  precision: 16-mixed  # fp16\n  max_epochs: 2\n"
        assert with_mapping_key(text, 1, "precision", "bf16-mixed", "bf16-mixed") == (
            "trainer:\n  precision: bf16-mixed\n  max_epochs: 2\n"
        )

    def test_a_nested_mapping_with_crlf_line_ends(self):
        text = "fit:\r\n    trainer:\r\n        max_epochs: 2\r\nmodel:\r\n    lr: 0.1\r\n"
        assert with_mapping_key(text, 2, "gradient_clip_val", "1.0", 1.0) == (
            "fit:\r\n    trainer:\r\n        gradient_clip_val: 1.0\r\n        max_epochs: 2\r\n"
            "model:\r\n    lr: 0.1\r\n"
        )

    @pytest.mark.parametrize(
        ("text", "why"),
        [
            ('{"trainer": {"max_epochs": 2}}\n', "not a block mapping"),
            ("trainer: {max_epochs: 2}\n", "not a block mapping"),
            ("trainer:\nmodel:\n  lr: 1\n", "empty"),
            # an alias of the mapping elsewhere would change with it
            ("trainer: &shared\n  max_epochs: 2\nvalidate: *shared\n", "more than that key"),
        ],
    )
    def test_what_cannot_take_the_key_is_refused(self, text, why):
        with pytest.raises(NoPatch, match=why):
            with_mapping_key(text, 1, "gradient_clip_val", "1.0", 1.0)


class TestTrainingArgumentsFp16:
    def _bf16(self, tmp_path, source: str, origin: dict, argv: list[str] | None = None):
        config = {"transformers": {"fp16": True}, "origins": {"fp16": origin}}
        return _patched(tmp_path, "use-bf16", source, config, argv)

    def test_the_call_argument_in_the_script(self, tmp_path):
        source = 'args = TrainingArguments(output_dir="o", fp16=True)\n'
        result = self._bf16(tmp_path, source, {"kind": "script", "line": 1, "key": "fp16"})
        assert diff_body(result)[1] == '+args = TrainingArguments(output_dir="o", bf16=True)'

    def test_the_flag_on_the_command_line(self, tmp_path):
        origin = {"kind": "argv", "key": "fp16", "index": 2, "token": "--fp16"}
        argv = ["--output_dir", "o", "--fp16", "--max_steps=10"]
        result = self._bf16(tmp_path, "import transformers\n", origin, argv=argv)
        assert result.argv == ["--output_dir", "o", "--bf16", "--max_steps=10"]

    def test_the_key_of_a_json_file(self, tmp_path):
        text = '{\n  "output_dir": "o",\n  "fp16": true\n}\n'
        _config, origin = _config_file(tmp_path / "args.json", text, 3, "fp16")
        result = self._bf16(tmp_path, "import transformers\n", origin)
        assert result.file_source == '{\n  "output_dir": "o",\n  "bf16": true\n}\n'

    def test_a_line_that_no_longer_turns_it_on_gets_no_patch(self, tmp_path):
        source = "args = TrainingArguments(fp16=False)\n"
        result = self._bf16(tmp_path, source, {"kind": "script", "line": 1, "key": "fp16"})
        assert result.diff is None and "no longer turns fp16 on" in result.note


class TestTrainingArgumentsWarmup:
    """add-lr-warmup under transformers' Trainer: warmup_steps where TrainingArguments got
    their other arguments."""

    def _warmup(self, tmp_path, source: str, origin: dict | None, argv=None, hf=None):
        origins = {"transformers.TrainingArguments": origin} if origin else {}
        config = {"transformers": hf or {"class": "TrainingArguments"}, "origins": origins}
        return _patched(tmp_path, "add-lr-warmup", source, config, argv)

    def test_the_training_arguments_call_in_the_script_gains_warmup_steps(self, tmp_path):
        source = 'from transformers import TrainingArguments\nargs = TrainingArguments("o")\n'
        origin = {"kind": "script", "line": 2, "key": "TrainingArguments"}
        result = self._warmup(tmp_path, source, origin)
        assert diff_body(result)[1] == '+args = TrainingArguments("o", warmup_steps=100)'

    def test_arguments_parsed_from_the_command_line_get_one_more_flag(self, tmp_path):
        origin = {"kind": "argv", "key": "TrainingArguments", "token": "--output_dir", "index": 0}
        argv = ["--output_dir", "o", "--learning_rate", "3e-4"]
        result = self._warmup(tmp_path, "import transformers\n", origin, argv=argv)
        assert result.argv == [*argv, "--warmup_steps=100"] and result.diff is None

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                '{\n  "output_dir": "o",\n  "learning_rate": 3.0\n}\n',
                '{\n  "warmup_steps": 100,\n  "output_dir": "o",\n  "learning_rate": 3.0\n}\n',
            ),
            ('{"output_dir": "o", "warmup_steps": 0}', '{"output_dir": "o", "warmup_steps": 100}'),
            (
                "# run\noutput_dir: o\nlearning_rate: 3.0\n",
                "# run\nwarmup_steps: 100\noutput_dir: o\nlearning_rate: 3.0\n",
            ),
        ],
        ids=["json-file", "json-key-given-as-0", "yaml-file"],
    )
    def test_the_file_an_argument_parser_read_gains_the_key_at_its_top_level(
        self, tmp_path, text, expected
    ):
        config, origin = _config_file(tmp_path / "args.json", text, 1, "TrainingArguments")
        result = self._warmup(tmp_path, "import transformers\n", origin)
        assert result.file == str(config) and result.file_source == expected

    def test_a_constant_schedule_is_told_to_use_the_one_with_warmup(self, tmp_path):
        origin = {"kind": "script", "line": 1, "key": "TrainingArguments"}
        hf = {"class": "TrainingArguments", "lr_scheduler_type": "constant"}
        result = self._warmup(tmp_path, "TrainingArguments('o')\n", origin, hf=hf)
        assert result.diff is None and "constant_with_warmup" in result.note

    def test_under_lightning_the_warmup_belongs_in_configure_optimizers(self, tmp_path):
        result = _clip(tmp_path, MODULE, {"kind": "script", "line": 1}, fix="add-lr-warmup")
        assert result.diff is None and "configure_optimizers" in result.note


class TestDtypeByName:
    """use-bf16 where a float16 dtype was chosen by name: the token, the file's line."""

    def _fix(self, tmp_path, source: str, origin: dict, argv=None, fix="use-bf16"):
        config = {"precision": "fp16-autocast", "origins": {"precision": origin}}
        return _patched(tmp_path, fix, source, config, argv)

    def test_the_token_on_the_command_line_names_bfloat16(self, tmp_path):
        origin = {"kind": "argv", "key": "dtype", "index": 1, "token": "--dtype=float16"}
        origin["value"] = "float16"
        argv = ["config/train_shakespeare_char.py", "--dtype=float16", "--max_iters=50"]
        result = self._fix(tmp_path, "import torch\n", origin, argv=argv)
        assert result.argv == ["config/train_shakespeare_char.py", "--dtype=bfloat16", argv[2]]

    def test_the_scripts_setting_line_names_bfloat16_and_float32_for_the_upcast(self, tmp_path):
        source = 'dtype = "float16"  # or bfloat16\nptdtype = {"float16": torch.float16}[dtype]\n'
        origin = {"kind": "script", "key": "dtype", "line": 1, "value": "float16"}
        bf16 = self._fix(tmp_path, source, origin)
        assert diff_body(bf16)[:2] == [
            '-dtype = "float16"  # or bfloat16',
            '+dtype = "bfloat16"  # or bfloat16',
        ]
        fp32 = self._fix(tmp_path, source, origin, fix="upcast-to-fp32")
        assert diff_body(fp32)[1] == '+dtype = "float32"  # or bfloat16'

    def test_a_config_key_spelt_fp16_becomes_bf16_in_that_file(self, tmp_path):
        text = "trainer:\n  mixed_precision: fp16\n"
        _config, origin = _config_file(
            tmp_path / "train.yaml", text, 2, "mixed_precision", value="fp16"
        )
        result = self._fix(tmp_path, "import torch\n", origin)
        assert result.file_source == "trainer:\n  mixed_precision: bf16\n"
        upcast = self._fix(tmp_path, "import torch\n", origin, fix="upcast-to-fp32")
        assert upcast.file is None  # fp16's family need not have an fp32 spelling


def test_a_flag_given_with_its_value_as_the_next_token_gets_that_token_replaced(tmp_path):
    origin = {"kind": "argv", "key": "trainer", "token": "--trainer.max_epochs=2", "index": 1}
    argv = ["fit", "--trainer.gradient_clip_val", "0", "--trainer.max_epochs=2"]
    result = _clip(tmp_path, MODULE, origin, argv=argv)
    assert result.argv == ["fit", "--trainer.gradient_clip_val", "1.0", "--trainer.max_epochs=2"]
