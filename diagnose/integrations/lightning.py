"""``DiagnoseCallback``: the diagnose Tracer inside a Lightning ``Trainer``.

    trainer = L.Trainer(..., callbacks=[DiagnoseCallback(report_path="diagnose.json")])
    trainer.fit(model, loader)   # raises diagnose.NonFiniteDetected at the first inf/nan

The tracer starts at ``on_train_start`` (after ``configure_optimizers`` ran) and stops at
``on_train_end``; when ``fit`` ends by an exception, Lightning calls ``on_exception`` and the
tracer is removed and the report still built and written. The report's
``config["lightning"]`` holds the Trainer's precision and its plugin, ``gradient_clip_val``
and ``gradient_clip_algorithm``, gradient accumulation, and the optimizers and lr schedulers
that ``configure_optimizers`` returned; those optimizers also feed the usual ``optimizer``,
``lr`` and ``lr_scheduler`` entries. ``callback.report`` holds the report, analysed like the
command line's (symptoms, ranked fixes, patches) unless ``analyze=False``.

Works with the ``lightning`` package and with the older ``pytorch_lightning``: the callback
subclasses the ``Callback`` of whichever the process has imported (``lightning`` first), since
each Trainer accepts only its own package's callbacks.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from diagnose.integrations.session import ReportingCallback

PACKAGES = ("lightning.pytorch", "pytorch_lightning")


def _lightning() -> ModuleType:
    """The Lightning package the script uses: one already imported, else the first installed."""
    for name in PACKAGES:
        module = sys.modules.get(name)
        if module is not None:
            return module
    for name in PACKAGES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(
        "diagnose.integrations.lightning needs Lightning: pip install lightning "
        "(or pytorch-lightning)"
    )


_pl = _lightning()


class DiagnoseCallback(ReportingCallback, _pl.Callback):  # type: ignore[misc,name-defined]
    """Trace ``Trainer.fit``'s training loop; ``report`` is set when training ends."""

    def __init__(
        self, report_path: str | Path | None = None, *, analyze: bool = True, **tracer_options: Any
    ) -> None:
        super().__init__()
        self._setup(report_path, analyze, tracer_options)

    # -- Trainer events ----------------------------------------------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        optimizers = [getattr(o, "_optimizer", o) for o in trainer.optimizers]
        self.start(lambda capture: _observe(capture, trainer), optimizers)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.finish(exception)


def _observe(capture: Any, trainer: Any) -> None:
    """Hand the Trainer and what ``configure_optimizers`` built to the config capture."""
    capture.observe_lightning_trainer(trainer)
    for optimizer in trainer.optimizers:
        capture.observe(optimizer=getattr(optimizer, "_optimizer", optimizer))
    for config in trainer.lr_scheduler_configs:
        capture.observe(lr_scheduler=config.scheduler)
    capture.observe(model=trainer.lightning_module)
    scaler = getattr(trainer.precision_plugin, "scaler", None)
    if scaler is not None:
        capture.observe(scaler=scaler)
