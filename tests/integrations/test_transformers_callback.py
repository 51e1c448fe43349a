"""DiagnoseCallback: a tiny random GPT-2 trained by the transformers Trainer on CPU."""

from __future__ import annotations

import json
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from diagnose.integrations.transformers import DiagnoseCallback  # noqa: E402
from diagnose.tracer import NonFiniteDetected  # noqa: E402


def tiny_gpt2() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    return transformers.GPT2LMHeadModel(config)


def dataset(n: int = 16) -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(n):
        ids = torch.randint(0, 64, (8,), generator=generator)
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def trainer(model, tmp_path, callback, **overrides):
    settings = dict(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        report_to=[],
        max_steps=3,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        warmup_steps=1,
        max_grad_norm=1.0,
        logging_steps=1,
        save_strategy="no",
        dataloader_num_workers=0,
    )
    settings.update(overrides)
    args = transformers.TrainingArguments(**settings)
    return transformers.Trainer(
        model=model, args=args, train_dataset=dataset(), callbacks=[callback]
    )


@pytest.mark.slow
def test_healthy_training_reports_clean_with_the_training_arguments(tmp_path):
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    trainer(tiny_gpt2(), tmp_path, callback).train()
    report = callback.report
    assert report is not None and report.status == "clean"
    config = report.config.model_dump()
    assert config["transformers"]["learning_rate"] == 1e-3
    assert config["transformers"]["max_grad_norm"] == 1.0
    assert config["optimizer"] == "AdamW"
    assert config["grad_clip"]["kind"] == "norm" and config["grad_clip"]["calls"] == 3
    assert config["lr_scheduler"]["warmup"]["steps"] == 1
    assert len(report.history) == 3
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "clean"
    assert callback.tracer is None  # removed at on_train_end
    assert torch.optim.Optimizer.__init__.__module__ == "torch.optim.optimizer"


@pytest.mark.slow
def test_a_nan_weight_stops_training_and_the_report_is_still_written(tmp_path):
    model = tiny_gpt2()
    with torch.no_grad():
        model.transformer.h[0].mlp.c_fc.weight[0, 0] = float("nan")
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    hooks_before = len(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(NonFiniteDetected):
        trainer(model, tmp_path, callback).train()
    assert callback.report is not None and callback.report.status == "nonfinite"
    assert callback.report.event.module is not None
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["status"] == "nonfinite"
    assert saved["config"]["transformers"]["logging_nan_inf_filter"] is True
    assert len(torch.nn.modules.module._global_forward_hooks) == hooks_before
    assert "transformers" in sys.modules


class PlainListRegressor(torch.nn.Module):
    """Its hidden layers sit in a plain list: the Trainer's optimizer never holds them."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(4, 16)
        self.hidden = [torch.nn.Linear(16, 16) for _ in range(2)]
        self.out = torch.nn.Linear(16, 1)

    def forward(self, x, labels=None):
        h = torch.relu(self.inp(x))
        for layer in self.hidden:
            h = torch.relu(layer(h))
        pred = self.out(h).squeeze(-1)
        return {"loss": torch.nn.functional.mse_loss(pred, labels), "logits": pred}


@pytest.mark.slow
def test_a_trainer_run_that_cannot_learn_is_reported_silent(tmp_path):
    torch.manual_seed(0)
    rows = [{"x": torch.randn(4), "labels": torch.randn(())} for _ in range(16)]
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        report_to=[],
        max_steps=4,
        per_device_train_batch_size=4,
        save_strategy="no",
        dataloader_num_workers=0,
    )
    model = PlainListRegressor()
    transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[callback]).train()
    report = callback.report
    assert report.status == "silent"
    assert [s.id for s in report.symptoms][:1] == ["unregistered-submodules"]
    assert [n.container for n in report.learning.unregistered][:1] == ["model.hidden (a list)"]
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "silent"


def test_a_report_path_over_the_script_or_a_non_report_file_is_refused_before_training(
    tmp_path, monkeypatch
):
    from diagnose.errors import UsageError

    script = tmp_path / "train.py"
    script.write_text("print('train')\n")
    monkeypatch.setattr(sys, "argv", [str(script)])
    with pytest.raises(UsageError, match="is the running script"):
        DiagnoseCallback(report_path=script)
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    with pytest.raises(UsageError, match="not a diagnose report"):
        DiagnoseCallback(report_path=notes)
    assert script.read_text() == "print('train')\n" and notes.read_text() == "# notes\n"
    DiagnoseCallback(report_path=tmp_path / "report.json")  # a new file is fine
