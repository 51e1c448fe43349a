"""DiagnoseCallback for Lightning: a tiny LightningModule trained by ``lightning.Trainer`` on CPU."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

L = pytest.importorskip("lightning")

from diagnose.integrations.lightning import DiagnoseCallback  # noqa: E402
from diagnose.tracer import NonFiniteDetected, Tracer  # noqa: E402


class Regressor(L.LightningModule):
    def __init__(self, lr: float = 0.05) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.lr)
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=2)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }


def loader(nan_row: int | None = None) -> torch.utils.data.DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 8, generator=generator)
    y = x.sum(dim=1, keepdim=True)
    if nan_row is not None:
        x[nan_row, 3] = float("nan")
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)


def fit(
    callback: DiagnoseCallback,
    module: L.LightningModule | None = None,
    nan_row: int | None = None,
    **overrides,
) -> L.Trainer:
    settings = dict(
        accelerator="cpu",
        max_steps=4,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        gradient_clip_val=0.5,
        gradient_clip_algorithm="value",
        callbacks=[callback],
    )
    settings.update(overrides)
    trainer = L.Trainer(**settings)
    torch.manual_seed(0)
    trainer.fit(module or Regressor(), loader(nan_row))
    return trainer


def test_healthy_fit_reports_clean_with_the_trainer_config(tmp_path):
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    hooks_before = len(torch.nn.modules.module._global_forward_hooks)
    fit(callback)
    report = callback.report
    assert report is not None and report.status == "clean" and report.fixes == []
    config = report.config.model_dump()
    lightning = config["lightning"]
    assert lightning["precision"] == "32-true"
    assert lightning["precision_plugin"] == "Precision"
    assert lightning["gradient_clip_val"] == 0.5
    assert lightning["gradient_clip_algorithm"] == "value"
    assert lightning["optimizers"] == [{"class": "AdamW", "param_groups": 1, "lr": [0.05]}]
    assert lightning["lr_schedulers"][0]["class"] == "LinearLR"
    assert lightning["lr_schedulers"][0]["interval"] == "step"
    assert lightning["module_class"] == "Regressor"
    assert config["optimizer"] == "AdamW" and config["precision"] == "fp32"
    assert config["grad_clip"]["kind"] == "value" and config["grad_clip"]["calls"] == 4
    assert len(report.history) == 4
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "clean"
    assert callback.tracer is None
    assert len(torch.nn.modules.module._global_forward_hooks) == hooks_before


def test_a_nan_in_the_data_stops_fit_and_names_the_input(tmp_path):
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    hooks_before = len(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(NonFiniteDetected):
        fit(callback, nan_row=9)  # the third batch of four rows
    report = callback.report
    assert report is not None and report.status == "nonfinite"
    assert (report.event.phase, report.event.step, report.event.sample_indices) == ("input", 2, [9])
    assert report.fixes[0].id == "sanitize-inputs"
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["event"]["phase"] == "input"
    assert saved["config"]["lightning"]["gradient_clip_val"] == 0.5
    assert callback.tracer is None
    assert len(torch.nn.modules.module._global_forward_hooks) == hooks_before


def test_an_exception_in_training_step_is_the_event_and_the_tracer_is_removed(tmp_path):
    class Broken(Regressor):
        def training_step(self, batch, batch_idx):
            if batch_idx == 1:
                raise ValueError("bad batch")
            return super().training_step(batch, batch_idx)

    callback = DiagnoseCallback(report_path=tmp_path / "report.json", analyze=False)
    hooks_before = len(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(ValueError, match="bad batch"):
        fit(callback, Broken())
    report = callback.report
    assert report is not None and report.status == "exception"
    assert report.event.exception_type == "ValueError" and report.event.message == "bad batch"
    assert report.event.location.file == __file__
    assert report.event.location.function == "training_step"
    assert len(report.history) == 1
    assert len(torch.nn.modules.module._global_forward_hooks) == hooks_before
    assert (tmp_path / "report.json").exists()


def test_a_bad_step_is_stopped_inside_the_optimizer_closure_before_its_update(tmp_path):
    # Lightning runs training_step and backward inside optimizer.step(closure): the tracer
    # checks the gradients when the closure returns, so the weights stay finite, and it still
    # reads the device once a step (the callback joins the tracer already running).
    module = Regressor(lr=1e6)
    callback = DiagnoseCallback(report_path=tmp_path / "report.json", analyze=False)
    tracer = Tracer()
    with pytest.raises(NonFiniteDetected), tracer:
        fit(callback, module, max_steps=20, gradient_clip_val=None)
    assert tracer.event is not None and tracer.event.phase in ("loss", "backward")
    assert all(bool(torch.isfinite(p).all()) for p in module.parameters())
    assert tracer.syncs <= len(tracer.history) + 1  # one a step, and the event's own step


class PlainListRegressor(Regressor):
    """Its hidden layers sit in a plain list: configure_optimizers never hands them over."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = [nn.Linear(8, 8) for _ in range(2)]

    def training_step(self, batch, batch_idx):
        x, y = batch
        for layer in self.hidden:
            x = torch.tanh(layer(x))
        return nn.functional.mse_loss(self.net(x), y)


def test_a_fit_that_cannot_learn_is_reported_silent(tmp_path):
    callback = DiagnoseCallback(report_path=tmp_path / "report.json")
    fit(callback, PlainListRegressor())
    report = callback.report
    assert report.status == "silent"
    # training_step is not forward: the list's layers run as models of their own, whose
    # parameters get gradients that no optimizer holds
    assert [s.id for s in report.symptoms][:1] == ["parameters-not-in-optimizer"]
    assert report.learning.optimizer_steps == 4
