"""lower-weight-decay: the decay set where the run got it, to lr x weight_decay of 1e-4."""

from __future__ import annotations

from diagnose.patches import make_patch
from tests.patches.helpers import diff_body, patch, report_for


def _config(name: str = "AdamW", lr: float = 1e-2, wd: float = 50.0, **more) -> dict:
    groups = [{"lr": lr, "weight_decay": wd}, {"lr": lr, "weight_decay": 0.0}]
    return {"optimizer": name, "optimizers": [{"class": name, "param_groups": groups}], **more}


def test_the_literal_in_the_optimizer_call_is_lowered_to_a_share_of_1e_4_per_step(tmp_path):
    result = patch(
        tmp_path,
        "lower-weight-decay",
        "import torch\nopt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=50.0)\n",
        config=_config(),
    )
    assert diff_body(result) == [
        "-opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=50.0)",
        "+opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01)",
    ]


def test_a_module_constant_or_a_flag_default_is_changed_where_it_is_set(tmp_path):
    constant = patch(
        tmp_path,
        "lower-weight-decay",
        "import torch\nWD = 0.5\nopt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=WD)\n",
        config=_config("SGD", 0.1, 0.5),
    )
    assert diff_body(constant) == ["-WD = 0.5", "+WD = 0.001"]
    assert "`WD = ...` on line 2" in constant.note
    flag = patch(
        tmp_path,
        "lower-weight-decay",
        """
        import argparse, torch
        p = argparse.ArgumentParser()
        p.add_argument("--weight-decay", type=float, default=50.0)
        args = p.parse_args()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=args.weight_decay)
        """,
        config=_config(),
    )
    assert diff_body(flag) == [
        '-p.add_argument("--weight-decay", type=float, default=50.0)',
        '+p.add_argument("--weight-decay", type=float, default=0.01)',
    ]
    assert "the default of --weight-decay" in flag.note


def test_a_decay_given_on_the_command_line_is_lowered_there(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    origin = {"kind": "argv", "token": "--wd=30", "index": 0, "key": "wd", "value": 30.0}
    report = report_for(script, config=_config(wd=30.0, origins={"weight_decay": origin}))
    report.script.argv = ["--wd=30", "--epochs", "2"]
    result = make_patch("lower-weight-decay", script, report)
    assert result.argv == ["--wd=0.01", "--epochs", "2"] and result.diff is None, result.note


def _argv_report(tmp_path, token: str, wd: float, replaced: float):
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    origin = {
        "kind": "argv",
        "token": token,
        "index": 0,
        "key": "weight_decay",
        "value": wd,
        "overrides": replaced,
        "overrides_at": "config.py:12",
    }
    report = report_for(script, config=_config(wd=wd, origins={"weight_decay": origin}))
    report.script.argv = [token]
    return script, report


def test_a_token_that_replaced_a_trainable_decay_goes_back_to_the_replaced_value(tmp_path):
    # lr 1e-2 x 0.005 = 5e-5 per step: the script's own value trains
    script, report = _argv_report(tmp_path, "--weight_decay=30.0", 30.0, 0.005)
    result = make_patch("lower-weight-decay", script, report)
    assert result.argv == ["--weight_decay=0.005"], result.note
    assert "0.005 is what config.py:12 sets, which '--weight_decay=30.0' replaced" in result.note


def test_a_decay_flag_goes_back_to_the_scripts_own_default(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--weight-decay', type=float, default=0.01)\n"
    )
    origin = {"kind": "argv", "token": "1000", "index": 1, "key": "weight_decay", "value": 1e3}
    config = _config(wd=1e3, origins={"weight_decay": origin})
    config.update(args={"weight_decay": 1e3}, args_given={"weight_decay": "--weight-decay"})
    report = report_for(script, config=config)
    report.script.argv = ["--weight-decay", "1000"]
    result = make_patch("lower-weight-decay", script, report)
    assert result.argv == ["--weight-decay", "0.01"], result.note
    assert "0.01 is the script's default of --weight-decay, which '--weight-decay 1000'" in (
        result.note
    )


def test_a_replaced_value_that_would_erase_the_weights_too_is_not_gone_back_to(tmp_path):
    # lr 1e-2 x 5 = 5% per step: as strong as the detector fires on
    script, report = _argv_report(tmp_path, "--weight_decay=30.0", 30.0, 5.0)
    result = make_patch("lower-weight-decay", script, report)
    assert result.argv == ["--weight_decay=0.01"], result.note
    assert "replaced" not in result.note


def test_under_transformers_trainer_it_is_the_training_arguments_weight_decay(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', weight_decay=30.0)\n"
    )
    where = {"kind": "script", "file": str(script), "line": 2, "key": "TrainingArguments"}
    config = _config(
        lr=5e-5, wd=30.0, transformers={}, origins={"transformers.TrainingArguments": where}
    )
    result = make_patch("lower-weight-decay", script, report_for(script, config=config))
    assert diff_body(result) == [
        "-args = TrainingArguments(output_dir='o', weight_decay=30.0)",
        "+args = TrainingArguments(output_dir='o', weight_decay=2.0)",  # 5e-5 x 2 = 1e-4
    ]


def test_a_decay_the_script_does_not_spell_gets_no_patch(tmp_path):
    result = patch(
        tmp_path,
        "lower-weight-decay",
        "import torch\nopt = torch.optim.AdamW(groups, lr=1e-2)\n",
        config=_config(),
    )
    assert result.diff is None
    assert "no optimizer call in the script sets weight_decay=50" in result.note


def test_a_decay_read_from_a_dict_a_class_or_a_namespace_is_changed_where_it_is_set(tmp_path):
    entry = patch(
        tmp_path,
        "lower-weight-decay",
        """
        import torch
        HP = {"optim": {"lr": 0.1, "weight_decay": 0.5}}
        opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=HP["optim"]["weight_decay"])
        """,
        config=_config("SGD", 0.1, 0.5),
    )
    assert diff_body(entry) == [
        '-HP = {"optim": {"lr": 0.1, "weight_decay": 0.5}}',
        '+HP = {"optim": {"lr": 0.1, "weight_decay": 0.001}}',
    ]
    assert 'HP["optim"]["weight_decay"] on line 2' in entry.note
    field = patch(
        tmp_path,
        "lower-weight-decay",
        """
        import dataclasses, torch
        @dataclasses.dataclass
        class Config:
            weight_decay: float = 0.5
        cfg = Config()
        opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=cfg.weight_decay)
        """,
        config=_config("SGD", 0.1, 0.5),
    )
    assert diff_body(field) == [
        "-    weight_decay: float = 0.5",
        "+    weight_decay: float = 0.001",
    ]
    keyword = patch(
        tmp_path,
        "lower-weight-decay",
        """
        import types, torch
        cfg = types.SimpleNamespace(lr=0.1, weight_decay=0.5)
        opt = torch.optim.SGD(m.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        """,
        config=_config("SGD", 0.1, 0.5),
    )
    assert diff_body(keyword)[-1] == "+cfg = types.SimpleNamespace(lr=0.1, weight_decay=0.001)"


def test_a_decay_two_configs_could_hold_is_not_guessed_at(tmp_path):
    result = patch(
        tmp_path,
        "lower-weight-decay",
        """
        import types, torch
        a = types.SimpleNamespace(weight_decay=0.5)
        b = types.SimpleNamespace(weight_decay=0.5)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=a.weight_decay)
        """,
        config=_config("SGD", 0.1, 0.5),
    )
    assert result.diff is None and "no optimizer call in the script sets" in result.note
