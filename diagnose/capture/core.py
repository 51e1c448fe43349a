"""``ConfigCapture``: watch a running, unmodified script and report how its training is set up.

Install before the script runs (patches chained onto torch, argparse and — only once the
script imports them — transformers and Lightning); take ``snapshot()`` whenever a report is
built; ``uninstall()`` puts every patched attribute back. The watchers keep weak references
and read values at snapshot time, so a training step costs a few dictionary updates at most.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diagnose.capture.args import ArgparseWatcher
from diagnose.capture.files import FileReadWatcher, imported_module_files, installation_roots
from diagnose.capture.frameworks import LightningWatcher, TransformersWatcher
from diagnose.capture.origins import find_origins
from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.post_import import PostImportHooks
from diagnose.capture.precision import (
    AutocastWatcher,
    ScalerWatcher,
    classify,
    param_dtypes,
)
from diagnose.capture.refs import WeakOrderedSet

LIGHTNING_PRECISION = {
    "16-mixed": "fp16-autocast",
    "16": "fp16-autocast",
    "bf16-mixed": "bf16-autocast",
    "bf16": "bf16-autocast",
    "16-true": "fp16",
    "bf16-true": "bf16",
    "32-true": "fp32",
    "32": "fp32",
    "64-true": "fp64",
    "64": "fp64",
}


class ConfigCapture:
    """Captures the training config of the code that runs between install and uninstall."""

    def __init__(self) -> None:
        self.errors = ErrorLog()
        self._patcher = Patcher(self.errors)
        self._hooks = PostImportHooks(self.errors)
        self._installed = False
        self.args = ArgparseWatcher(self.errors)
        self.transformers = TransformersWatcher(self.errors)
        self.lightning = LightningWatcher(self.errors)
        self._torch_ready = False
        self.optimizers: Any = None
        self.schedulers: Any = None
        self.autocast: Any = None
        self.scalers: Any = None
        self.clipping: Any = None
        self.losses: Any = None
        self.calls: Any = None
        self._models: WeakOrderedSet[Any] = WeakOrderedSet()
        self.files = FileReadWatcher()
        self._argv: list[str] = []

    # -- lifecycle -------------------------------------------------------------------------
    def install(self) -> ConfigCapture:
        """Start watching. Idempotent; a piece that cannot be patched is noted and skipped."""
        if self._installed:
            return self
        self._installed = True
        self._patcher = Patcher(self.errors)
        self._hooks = PostImportHooks(self.errors)
        self._argv = [a for a in sys.argv if isinstance(a, str)]  # the script's, set by the runner
        self._guard("files", self.files.install)
        self._guard("argparse", lambda: self.args.install(self._patcher))
        self._guard("torch", self._install_torch)
        self._guard("transformers", lambda: self.transformers.install(self._patcher, self._hooks))
        self._guard("lightning", lambda: self.lightning.install(self._patcher, self._hooks))
        return self

    def uninstall(self) -> None:
        """Stop watching and restore every patched attribute (newest patch first)."""
        if not self._installed:
            return
        self._installed = False
        self.files.uninstall()
        if self.optimizers is not None:
            self._guard("optimizer hook", self.optimizers.uninstall)
        if self.calls is not None:
            self._guard("call site hook", self.calls.uninstall)
        self._guard("import hooks", self._hooks.close)
        self._patcher.restore_all()

    @property
    def installed(self) -> bool:
        return self._installed

    def __enter__(self) -> ConfigCapture:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    def _install_torch(self) -> None:
        from diagnose.capture.calls import CallSiteWatcher
        from diagnose.capture.clipping import ClipWatcher
        from diagnose.capture.loss import LossWatcher
        from diagnose.capture.optim import OptimizerWatcher, SchedulerWatcher

        if not self._torch_ready:
            self.optimizers = OptimizerWatcher(self.errors)
            self.schedulers = SchedulerWatcher(self.errors)
            self.autocast = AutocastWatcher(self.errors)
            self.scalers = ScalerWatcher(self.errors)
            self.clipping = ClipWatcher(self.errors, self.scalers)
            self.losses = LossWatcher(self.errors)
            self.calls = CallSiteWatcher(self.errors)
            self._torch_ready = True
        for watcher in (
            self.optimizers,
            self.schedulers,
            self.autocast,
            self.scalers,
            self.clipping,
            self.losses,
            self.calls,
        ):
            self._guard(type(watcher).__name__, lambda w=watcher: w.install(self._patcher))

    def _guard(self, where: str, action: Any) -> None:
        try:
            action()
        except Exception as exc:
            self.errors.record(where, exc)

    # -- objects handed over by integrations -----------------------------------------------
    def observe_training_arguments(self, arguments: Any) -> None:
        self.transformers.add(arguments)

    def observe_lightning_trainer(self, trainer: Any) -> None:
        self.lightning.add(trainer)

    def observe(
        self,
        *,
        optimizer: Any = None,
        lr_scheduler: Any = None,
        model: Any = None,
        scaler: Any = None,
    ) -> None:
        """Objects built before ``install`` that a framework callback hands over.

        Framework wrappers (accelerate's ``AcceleratedOptimizer``/``AcceleratedScheduler``)
        are unwrapped to the torch objects inside.
        """
        if not self._torch_ready:
            return
        optimizer = getattr(optimizer, "optimizer", optimizer)
        lr_scheduler = getattr(lr_scheduler, "scheduler", lr_scheduler)
        if optimizer is not None:
            self._guard("observe optimizer", lambda: self.optimizers.add(optimizer))
        if lr_scheduler is not None:
            self._guard("observe scheduler", lambda: self.schedulers.add(lr_scheduler))
        if model is not None:
            self._models.add(model)
        if scaler is not None:
            self.scalers.add(scaler)

    # -- the snapshot ----------------------------------------------------------------------
    def snapshot(self, modules: Iterable[Any] | None = None) -> dict[str, Any]:
        """The config as JSON-ready data that validates as ``diagnose.report.Config``.

        ``modules``: models known to the caller (e.g. the tracer); their parameters count
        towards ``param_dtypes`` with the optimizers' parameters.
        """
        config: dict[str, Any] = {
            "precision": "unknown",
            "optimizer": None,
            "lr": None,
            "grad_clip": None,
            "grad_scaler": False,
        }
        sources: dict[str, str] = {}
        watchers = [self.args, self.transformers, self.lightning]
        if self._torch_ready:
            watchers += [
                self.optimizers,
                self.schedulers,
                self.autocast,
                self.scalers,
                self.clipping,
                self.losses,
                self.calls,
            ]
        for watcher in watchers:
            self._guard(f"snapshot {type(watcher).__name__}", lambda w=watcher: w.snapshot(config))
        self._guard("snapshot precision", lambda: self._precision(config, modules))
        self._guard("snapshot frameworks", lambda: _framework_defaults(config, sources))
        config["sources"] = sources
        self._guard("snapshot origins", lambda: self._origins(config))
        # the TrainingArguments' changed values only find where they came from: they hold
        # run-specific text (a temporary output_dir), and the report keeps their names
        (config.get("transformers") or {}).pop("init_args", None)
        self._guard("snapshot libraries", lambda: config.update(libraries=imported_libraries()))
        config["capture_errors"] = self.errors.as_list()
        return config

    def _origins(self, config: dict[str, Any]) -> None:
        script = Path(self._argv[0]).resolve() if self._argv else None
        modules = _own_modules(_own_folders(script)) if script is not None else []
        found = find_origins(config, self._argv[1:], script, self.files.paths(), modules)
        if found:
            config["origins"] = found

    def _precision(self, config: dict[str, Any], modules: Iterable[Any] | None) -> None:
        params: dict[int, Any] = {}
        if self.optimizers is not None:
            params.update((id(p), p) for p in self.optimizers.parameters())
        for module in [*(modules or []), *self._models]:
            params.update((id(p), p) for p in module.parameters())
        if not params:
            params.update((id(p), p) for p in _main_module_parameters())
        dtypes = param_dtypes(params.values())
        config["param_dtypes"] = dtypes
        autocast_dtypes = self.autocast.enabled_dtypes() if self.autocast is not None else []
        config["precision"] = classify(dtypes, autocast_dtypes)


MAX_OWN_MODULES = 200


def imported_libraries() -> list[str]:
    """The top-level packages imported so far from outside the standard library."""
    names = {name.partition(".")[0] for name in list(sys.modules)}
    return sorted(
        n
        for n in names
        if n.isidentifier()
        and not n.startswith("_")
        and n not in sys.stdlib_module_names
        and n != "diagnose"
    )


def _own_folders(script: Path) -> list[Path]:
    """Where the user's own packages live: the script's folder, the working directory when the
    script lies below it (a project run from its root, ``python projects/x/train.py``), and the
    folders ``PYTHONPATH`` names."""
    folders = [script.parent]
    cwd = Path.cwd()
    if script.is_relative_to(cwd):
        folders.append(cwd)
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            folders.append(Path(entry).resolve())
    return list(dict.fromkeys(folders))


def _own_modules(folders: list[Path]) -> list[Path]:
    """The Python files the run imported from the user's own folders and below (the user's
    package, not an installed one): where a project keeps its defaults."""
    found: list[Path] = []
    installed = (*installation_roots(), str(Path(__file__).resolve().parents[1]) + os.sep)
    for name in imported_module_files():
        if not name.endswith(".py") or name.startswith(installed):
            continue  # installed, the standard library, or diagnose's own
        path = Path(name)
        if not any(path.is_relative_to(folder) for folder in folders):
            continue
        if not {"site-packages", "dist-packages", ".venv"} & set(path.parts):
            found.append(path)
            if len(found) >= MAX_OWN_MODULES:
                break
    return found


def _main_module_parameters() -> list[Any]:
    """Parameters of nn.Modules bound to globals of ``__main__`` (when no optimizer was seen)."""
    torch = sys.modules.get("torch")
    main = sys.modules.get("__main__")
    if torch is None or main is None:
        return []
    found: list[Any] = []
    for value in list(vars(main).values()):
        if isinstance(value, torch.nn.Module):
            found.extend(value.parameters())
    return found


def _framework_defaults(config: dict[str, Any], sources: dict[str, str]) -> None:
    """Facts a framework has declared but the run has not shown yet (e.g. it failed early)."""
    hf = config.get("transformers")
    if hf:
        if config["precision"] == "unknown" and (hf.get("fp16") or hf.get("bf16")):
            config["precision"] = "fp16-autocast" if hf.get("fp16") else "bf16-autocast"
            sources["precision"] = "transformers"
        if config["lr"] is None and isinstance(hf.get("learning_rate"), (int, float)):
            config["lr"] = float(hf["learning_rate"])
            sources["lr"] = "transformers"
        max_norm = hf.get("max_grad_norm")
        if (
            config["grad_clip"] is None
            and isinstance(max_norm, (int, float))
            and max_norm > 0
            and not config.get("optimizer_steps")
        ):
            config["grad_clip"] = {"kind": "norm", "max": float(max_norm), "calls": 0}
            sources["grad_clip"] = "transformers"
    pl = config.get("lightning")
    if pl:
        precision = LIGHTNING_PRECISION.get(str(pl.get("precision")))
        if config["precision"] == "unknown" and precision:
            config["precision"] = precision
            sources["precision"] = "lightning"
        clip = pl.get("gradient_clip_val")
        if (
            config["grad_clip"] is None
            and isinstance(clip, (int, float))
            and clip > 0
            and not config.get("optimizer_steps")
        ):
            kind = "value" if pl.get("gradient_clip_algorithm") == "value" else "norm"
            config["grad_clip"] = {"kind": kind, "max": float(clip), "calls": 0}
            sources["grad_clip"] = "lightning"
