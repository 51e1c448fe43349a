"""``DiagnoseCallback``: the diagnose Tracer inside a transformers ``Trainer``.

    trainer = Trainer(model, args, train_dataset=data,
                      callbacks=[DiagnoseCallback(report_path="diagnose.json")])
    trainer.train()      # raises diagnose.NonFiniteDetected at the first inf/nan

The tracer starts at ``on_train_begin`` and stops at ``on_train_end``; the run's
``TrainingArguments`` (fp16/bf16, learning rate, warmup, max_grad_norm, gradient accumulation,
``logging_nan_inf_filter``, ...) land in the report's ``config["transformers"]``. When the
callback is passed to the Trainer's constructor it also sees the training end by an exception
(``NonFiniteDetected`` or the script's own), so the tracer is always removed and the report is
still built and written; ``callback.report`` holds it, analysed like the command line's
(symptoms, ranked fixes, patches against the calling script) unless ``analyze=False``.

Under ``diagnose train.py`` the callback joins the tracer already running the script rather
than starting a second one, so the command line's report is the same with or without it.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

try:
    from transformers.trainer_callback import TrainerCallback
except ImportError as missing:
    raise ImportError(
        "diagnose.integrations.transformers needs transformers: pip install transformers"
    ) from missing

from diagnose.integrations.session import ReportingCallback


class DiagnoseCallback(ReportingCallback, TrainerCallback):
    """Trace the Trainer's training loop; ``report`` is set when training ends."""

    def __init__(
        self, report_path: str | Path | None = None, *, analyze: bool = True, **tracer_options: Any
    ) -> None:
        self._setup(report_path, analyze, tracer_options)

    # -- Trainer events ----------------------------------------------------------------
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        trainer = _calling_trainer(self)
        if trainer is not None:
            _finish_on_exception(trainer, self)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        def observe(capture: Any) -> None:
            capture.observe_training_arguments(args)
            capture.observe(
                optimizer=kwargs.get("optimizer"),
                lr_scheduler=kwargs.get("lr_scheduler"),
                model=kwargs.get("model"),
            )

        optimizer = kwargs.get("optimizer")
        self.start(observe, [optimizer] if optimizer is not None else [])

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.finish()


def _calling_trainer(callback: DiagnoseCallback) -> Any:
    """The Trainer whose constructor is running this callback's ``on_init_end``."""
    frame = inspect.currentframe()
    try:
        for _ in range(8):
            frame = frame.f_back if frame is not None else None
            if frame is None:
                return None
            candidate = frame.f_locals.get("self")
            handler = getattr(candidate, "callback_handler", None)
            if handler is not None and callback in getattr(handler, "callbacks", []):
                return candidate
        return None
    finally:
        del frame


def _finish_on_exception(trainer: Any, callback: DiagnoseCallback) -> None:
    """Let ``trainer.train`` end the tracer when training stops by an exception."""
    train = trainer.train

    def train_and_finish(*args: Any, **kwargs: Any) -> Any:
        try:
            return train(*args, **kwargs)
        except BaseException as exc:
            callback.finish(exc)
            raise

    train_and_finish.__wrapped__ = train  # type: ignore[attr-defined]
    train_and_finish.__doc__ = train.__doc__
    trainer.train = train_and_finish
