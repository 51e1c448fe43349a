"""The Config tab reads as settings, each beside where its value came from."""

from __future__ import annotations

from rich.console import Console

from diagnose.report import Report
from tests.tui.conftest import HOSTILE, load_fp16, show_tab
from tui.app import DiagnoseApp
from tui.widgets.config_view import ConfigView

SHA = "e978e9029e36" + "ab" * 26


def adamw_report() -> Report:
    """An AdamW run whose lr came from argv, eps from a YAML file and weight decay from the
    script, with the capture's bookkeeping (parse counter, empty lists, hashes) in it."""
    report = load_fp16()
    group = {
        "lr": 1000.0,
        "betas": [0.9, 0.999],
        "eps": 1e-8,
        "weight_decay": 0.01,
        "amsgrad": False,
        "foreach": None,
        "num_params": 4,
        "numel": 1218,
        "dtypes": ["float32"],
    }
    config = {
        "precision": "fp16",
        "optimizer": "AdamW",
        "lr": 1000.0,
        "grad_clip": {"kind": "norm", "max": 1.0, "function": "torch.nn.utils.clip_grad_norm_"},
        "grad_scaler": True,
        "args": {"lr": 1000.0, "epochs": 4},
        "args_given": {"lr": "--lr"},
        "args_parses": 1,
        "optimizers": [
            {"class": "AdamW", "module": "torch.optim.adamw", "steps": 37, "param_groups": [group]}
        ],
        "param_groups": [group],
        "autocast": [],
        "capture_errors": [],
        "sources": {},
        "origins": {
            "lr": {"kind": "argv", "value": 1000.0, "key": "lr", "token": "--lr=1e3", "index": 0},
            "eps": {
                "kind": "config-file",
                "file": "conf/train.yaml",
                "line": 4,
                "text": "1e-8",
                "sha256": SHA,
            },
            "weight_decay": {"kind": "script", "file": "train.py", "line": 22},
            "grad_clip.max": {"kind": "script", "file": f"{HOSTILE}.py", "line": 30},
        },
        "batch_size": 64,
    }
    data = report.model_dump(mode="json")
    data["config"] = config
    data["script"] = {"path": "train.py", "argv": ["--lr=1e3"], "sha256": SHA}
    return Report.model_validate(data)


def page(app: DiagnoseApp) -> str:
    """The Config tab's text, as its sections render at 120 columns."""
    console = Console(width=120, record=True, color_system=None)
    for static in app.query_one(ConfigView).query(".config-title, .config-section"):
        console.print(static.content)
    return console.export_text()


async def test_param_groups_are_a_table_with_each_value_s_origin():
    app = DiagnoseApp(adamw_report())
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "6")
        text = page(app)
    lines = text.splitlines()
    header = next(line for line in lines if "betas" in line)
    assert header.split() == ["group", "lr", "betas", "eps", "weight_decay", "trains"]
    row = lines[lines.index(header) + 1].split()
    assert row[:6] == ["0", "1000", "(0.9,", "0.999)", "1.00e-8", "0.01"]
    assert "lr set at            --lr=1e3 on the command line" in text
    assert "eps set at           conf/train.yaml:4 1e-8" in text
    assert "weight_decay set at  train.py:22" in text
    assert "AdamW  torch.optim.adamw  37 steps" in text


async def test_precision_scaler_and_clipping_are_labelled_rows():
    app = DiagnoseApp(adamw_report())
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "6")
        text = page(app)
    assert any(line.split()[:2] == ["precision", "fp16"] for line in text.splitlines() if line)
    assert "autocast     not used" in text
    assert "clipping     grad norm ≤ 1 by clip_grad_norm_" in text
    assert "[bold red]x[/]" in text  # the hostile origin shown as it is, never as markup
    assert "\x1b" not in text
    assert "lr      1000  --lr=1e3 on the command line" in text
    assert "epochs  4     default" in text


async def test_no_reprs_counters_empty_lists_or_full_hashes():
    app = DiagnoseApp(adamw_report())
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "6")
        text = page(app)
    for raw in ("args_parses", "capture_errors", "[]", "{", "'", "None", "foreach", SHA):
        assert raw not in text, raw
    assert "sha256 e978e9029e36…" in text
    assert "batch_size  64" in text
