"""Framework configs: transformers ``TrainingArguments`` and the Lightning ``Trainer``.

Neither library is imported on the script's behalf: the classes are wrapped when (and only if)
the script imports them, through post-import hooks. Values are read at snapshot time, since
both frameworks adjust their arguments after construction.
"""

from __future__ import annotations

import inspect
import weakref
from types import ModuleType
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.post_import import PostImportHooks
from diagnose.capture.refs import WeakOrderedSet
from diagnose.capture.values import UNSAFE, json_safe, pick

TRAINING_ARGUMENT_FIELDS = (
    "fp16",
    "bf16",
    "fp16_full_eval",
    "bf16_full_eval",
    "tf32",
    "learning_rate",
    "warmup_steps",
    "warmup_ratio",
    "max_grad_norm",
    "gradient_accumulation_steps",
    "logging_nan_inf_filter",
    "lr_scheduler_type",
    "lr_scheduler_kwargs",
    "optim",
    "optim_args",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "per_device_train_batch_size",
    "max_steps",
    "num_train_epochs",
    "label_smoothing_factor",
    "gradient_checkpointing",
    "torch_compile",
    "use_cpu",
    "seed",
)

LIGHTNING_FIELDS = (
    "precision",
    "gradient_clip_val",
    "gradient_clip_algorithm",
    "accumulate_grad_batches",
    "max_steps",
    "max_epochs",
    "accelerator",
    "devices",
    "strategy",
    "detect_anomaly",
    "num_nodes",
)

LIGHTNING_MODULES = ("lightning.pytorch.trainer.trainer", "pytorch_lightning.trainer.trainer")

NAN_INF_FILTER_NOTE = (
    "logging_nan_inf_filter=True: the Trainer logs the mean of earlier losses in place of a nan "
    "or inf loss, so its logs can look fine while training produces non-finite losses"
)


class TransformersWatcher:
    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._arguments: WeakOrderedSet[Any] = WeakOrderedSet()

    def install(self, patcher: Patcher, hooks: PostImportHooks) -> None:
        def patch(module: ModuleType) -> None:
            patcher.wrap(
                module.TrainingArguments,
                "__post_init__",
                after=self._constructed,
                label="TrainingArguments.__post_init__",
            )

        hooks.when_imported("transformers.training_args", patch)

    def _constructed(self, _result: Any, arguments: Any, *args: Any, **kwargs: Any) -> None:
        self._arguments.add(arguments)

    def add(self, arguments: Any) -> None:
        """Register TrainingArguments handed over directly (the Trainer callback does this)."""
        self._arguments.add(arguments)

    def snapshot(self, config: dict[str, Any]) -> None:
        instances = list(self._arguments)
        if not instances:
            return
        latest = instances[-1]
        described = pick(latest, TRAINING_ARGUMENT_FIELDS)
        described["class"] = type(latest).__name__
        changed = _changed_fields(latest)
        if changed:
            described["init_args"] = changed
            described["init_changed"] = list(changed)
        hides = bool(described.get("logging_nan_inf_filter"))
        described["logs_hide_nonfinite_loss"] = hides
        if hides:
            described["notes"] = [NAN_INF_FILTER_NOTE]
        config["transformers"] = described


MAX_CHANGED_FIELDS = 200


def _changed_fields(arguments: Any) -> dict[str, Any]:
    """The dataclass fields of ``arguments`` whose value is not their default (plain values
    only): the ones a command line, a config file or a call must have spelt."""
    import dataclasses

    changed: dict[str, Any] = {}
    try:
        fields = dataclasses.fields(arguments)
    except TypeError:
        return changed
    for field in fields[: MAX_CHANGED_FIELDS * 4]:
        if not field.init or field.default is dataclasses.MISSING:
            continue
        try:
            value = getattr(arguments, field.name)
        except Exception:
            continue
        if isinstance(value, (bool, int, float, str)) and not _same_value(value, field.default):
            changed[field.name] = value
            if len(changed) >= MAX_CHANGED_FIELDS:
                break
    return changed


def _same_value(value: Any, default: Any) -> bool:
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    if isinstance(value, (int, float)) and isinstance(default, (int, float)):
        return value == default
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:
        return False


class LightningWatcher:
    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._trainers: WeakOrderedSet[Any] = WeakOrderedSet()
        self._init_args: weakref.WeakKeyDictionary[Any, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        # the arguments given a value other than their default: what a config or a call spelt
        self._changed: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()

    def install(self, patcher: Patcher, hooks: PostImportHooks) -> None:
        for name in LIGHTNING_MODULES:
            hooks.when_imported(name, lambda module: self._patch(patcher, module))

    def _patch(self, patcher: Patcher, module: ModuleType) -> None:
        trainer_class = module.Trainer
        init = trainer_class.__init__
        try:
            signature: inspect.Signature | None = inspect.signature(init)
        except (TypeError, ValueError):
            signature = None

        def constructed(_result: Any, trainer: Any, *args: Any, **kwargs: Any) -> None:
            given: dict[str, Any] = {}
            changed: list[str] = []
            if signature is not None:
                bound = signature.bind_partial(trainer, *args, **kwargs)
                for key, value in list(bound.arguments.items())[1:]:
                    safe = json_safe(value)
                    given[key] = safe if safe is not UNSAFE else type(value).__name__
                    if safe is not UNSAFE and not _is_default(signature, key, value):
                        changed.append(key)
            self.add(trainer, given)
            if changed:
                self._changed[trainer] = changed

        patcher.wrap(trainer_class, "__init__", after=constructed, label="Trainer.__init__")

    def add(self, trainer: Any, init_args: dict[str, Any] | None = None) -> None:
        self._trainers.add(trainer)
        if init_args is not None:
            self._init_args[trainer] = init_args

    def snapshot(self, config: dict[str, Any]) -> None:
        trainers = list(self._trainers)
        if not trainers:
            return
        trainer = trainers[-1]
        described: dict[str, Any] = {"class": type(trainer).__name__}
        init_args = self._init_args.get(trainer, {})
        for field in LIGHTNING_FIELDS:
            value: Any = UNSAFE
            try:
                value = json_safe(getattr(trainer, field))
            except Exception:
                value = UNSAFE
            if value is UNSAFE and field in init_args:
                value = init_args[field]
            if value is not UNSAFE:
                described[field] = value
        described.update(_lightning_training_objects(trainer))
        if init_args:
            described["init_args"] = init_args
        if trainer in self._changed:
            described["init_changed"] = self._changed[trainer]
        config["lightning"] = described


def _is_default(signature: inspect.Signature, key: str, value: Any) -> bool:
    parameter = signature.parameters.get(key)
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return False
    default = parameter.default
    try:
        return value is default or (type(value) is type(default) and bool(value == default))
    except Exception:
        return False


def _lightning_training_objects(trainer: Any) -> dict[str, Any]:
    """Precision plugin, strategy, module, and what ``configure_optimizers`` returned.

    Each part is read on its own: before ``fit`` sets the strategy up, or on an older
    Lightning, some are missing and the others still count.
    """
    out: dict[str, Any] = {}
    readers = {
        "precision_plugin": lambda: _class_name(trainer.precision_plugin),
        "strategy_class": lambda: _class_name(trainer.strategy),
        "module_class": lambda: _class_name(trainer.lightning_module),
        "optimizers": lambda: [_describe_optimizer(o) for o in trainer.optimizers],
        "lr_schedulers": lambda: [_describe_scheduler(c) for c in trainer.lr_scheduler_configs],
    }
    for key, read in readers.items():
        try:
            value = read()
        except Exception:
            continue
        if value is not None:
            out[key] = value
    scaler = getattr(getattr(trainer, "precision_plugin", None), "scaler", None)
    out["precision_plugin_scaler"] = scaler is not None
    return out


def _class_name(obj: Any) -> str | None:
    return type(obj).__name__ if obj is not None else None


def _describe_optimizer(optimizer: Any) -> dict[str, Any]:
    inner = getattr(optimizer, "_optimizer", optimizer)  # a LightningOptimizer wrapper
    groups = getattr(inner, "param_groups", [])
    lrs = [json_safe(group.get("lr")) for group in groups]
    return {
        "class": type(inner).__name__,
        "param_groups": len(groups),
        "lr": [lr if lr is not UNSAFE else None for lr in lrs],
    }


def _describe_scheduler(config: Any) -> dict[str, Any]:
    described: dict[str, Any] = {"class": _class_name(getattr(config, "scheduler", None))}
    for field in ("interval", "frequency", "monitor", "name"):
        safe = json_safe(getattr(config, field, None))
        if safe is not UNSAFE:
            described[field] = safe
    return described
