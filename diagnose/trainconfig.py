"""The training config a report carries: declared models the capture fills and readers read.

``diagnose.capture`` writes a snapshot as plain JSON data; ``Config.model_validate`` turns it
into these models, and facts, patches and renderers read their attributes. The JSON a report
writes is a published contract, so a declared field the capture did not fill is not written
(a run writes the keys it wrote before, no ``null`` for the others), every key keeps the
place it had in the data, and a value keeps its JSON type (an int lr stays ``1``, an ``"inf"``
the capture wrote for a non-finite value stays that string). Unknown keys still load and are
written back as they came (``extra="allow"``): a newer or another tool's report keeps them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# A hyper-parameter as the capture writes it: a number of the type it had, a bool, or the
# string "inf"/"-inf"/"nan" for a non-finite value (strict JSON has no such numbers).
Value = bool | int | float | str
# ... or, for some optimizers, a list of them (Adafactor's eps is a pair, its first maybe null)
Setting = Value | list[Value | None]


class Declared(BaseModel):
    """Writes only what it was given, in the order it was given (see the module docstring)."""

    model_config = ConfigDict(
        extra="allow",
        ser_json_inf_nan="strings",
        serialize_by_alias=True,  # "class" is read and written as "class"
    )
    # fields written even when they were not given (the report's long-standing keys)
    always: ClassVar[frozenset[str]] = frozenset()
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, Declared) and not model._order:
            model._order = tuple(k for k in data if isinstance(k, str))
        return model

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        given = self.model_fields_set | self.always
        names = {_key(name, info): name for name, info in type(self).model_fields.items()}
        kept = {k: v for k, v in data.items() if k not in names or names[k] in given}
        # the long-standing keys first, as declared; then the others in the order they came
        leading = [k for k, name in names.items() if name in self.always and k in kept]
        place = {key: i for i, key in enumerate(self._order)}
        rest = sorted((k for k in kept if k not in leading), key=lambda k: place.get(k, len(place)))
        return {k: kept[k] for k in [*leading, *rest]}

    def __eq__(self, other: object) -> bool:
        """Equal values are equal models, whatever order their keys came in."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )


def _key(name: str, info: Any) -> str:
    return info.serialization_alias or info.alias or name


class ClipRecord(Declared):
    """One clipping function the run called: its limit, how often, and around unscale_."""

    kind: Literal["norm", "value"]
    max: Value | None = None
    function: str | None = Field(None, description='e.g. "torch.nn.utils.clip_grad_norm_"')
    calls: int | None = None
    norm_type: Value | None = None
    max_values: list[Value | None] | None = Field(
        None, description="The limits it was called with, when they changed during the run."
    )
    clip_after_unscale: bool | None = Field(
        None,
        description="Under an enabled GradScaler: every clip came after scaler.unscale_ "
        "(false: at least one clipped the scaled gradients; null: no scaler seen).",
    )
    calls_before_unscale: int | None = None
    why: str | None = Field(None, description="Why a record is not counted as clipping.")


class GradClip(ClipRecord):
    """The clipping that applies: the most called function with a finite limit."""

    always: ClassVar[frozenset[str]] = frozenset({"kind", "max"})

    max: float


class ParamGroup(Declared):
    """One param group of an optimizer: its hyper-parameters (any the optimizer keeps) and
    the parameters it trains."""

    lr: Setting | None = None
    initial_lr: Setting | None = None
    eps: Setting | None = None
    weight_decay: Setting | None = None
    num_params: int | None = None
    numel: int | None = None
    dtypes: list[str] | None = None


class OptimizerInfo(Declared):
    """One optimizer the run built or stepped."""

    name: str | None = Field(None, alias="class", description='Its class, e.g. "AdamW".')
    module: str | None = None
    steps: int | None = Field(None, description="Optimizer steps it took.")
    initial_lr: Value | None = None
    param_groups: list[ParamGroup] | None = None


class SchedulerInfo(Declared):
    """An lr scheduler: its class, its settings, and warmup where its structure shows it."""

    name: str | None = Field(None, alias="class")
    last_lr: list[Value | None] | None = None
    first_lr: list[Value | None] | None = None
    base_lrs: list[Value | None] | None = None
    warmup: dict[str, Any] | None = Field(
        None, description='{"steps": int | null, "evidence": str} when a warmup is visible.'
    )
    schedulers: list[SchedulerInfo] | None = None


class AutocastRegion(Declared):
    """Entries into autocast regions of one (device type, dtype, enabled)."""

    device_type: str | None = None
    dtype: str | None = None
    enabled: bool | None = None
    entries: int | None = None


class ScalerInfo(Declared):
    """A GradScaler the run built."""

    name: str | None = Field(None, alias="class")
    device: str | None = None
    enabled: bool | None = None
    init_scale: float | None = None
    growth_factor: float | None = None
    backoff_factor: float | None = None
    growth_interval: int | None = None
    used: bool | None = None
    scale: float | None = None
    growth_tracker: int | None = None


class CallSite(Declared):
    """One line of the user's code that called a training call, and how often."""

    file: str
    line: int
    function: str | None = None
    calls: int | None = None


class TrainingCalls(Declared):
    """The lines that called ``backward``, ``Optimizer.step`` and ``zero_grad`` in the run:
    the training loop is the one that holds them (patches place loop-level edits there)."""

    backward: list[CallSite] = Field(default_factory=list)
    step: list[CallSite] = Field(default_factory=list)
    zero_grad: list[CallSite] = Field(default_factory=list)


class Origin(Declared):
    """Where the run's value of one setting came from (``diagnose.capture.origins``)."""

    kind: str = Field(
        description='"argv" (a command-line token), "config-file" (a file the run read) '
        'or "script" (a literal in the script).'
    )
    value: Value | None = None
    key: str | None = Field(None, description="The key that spells it, e.g. learning_rate.")
    token: str | None = Field(None, description="argv: the token that holds the value.")
    index: int | None = Field(None, description="argv: that token's index in script.argv.")
    file: str | None = None
    line: int | None = None
    text: str | None = Field(None, description="The value as the file spells it.")
    sha256: str | None = Field(None, description="The file's hash as the run read it.")
    candidates: int | None = Field(
        None, description="How many places of this kind spell the value (>1: ambiguous)."
    )
    overrides: Value | None = Field(
        None,
        description="argv: the other value a file the run read (else the script) gives the "
        "same key, which the token replaced.",
    )
    overrides_at: str | None = Field(None, description="argv: where that value is (file:line).")


class Config(Declared):
    """Training config captured from the run (and a ``--config`` file), key by key below;
    unknown keys are kept as given."""

    always: ClassVar[frozenset[str]] = frozenset(
        {"precision", "optimizer", "lr", "grad_clip", "grad_scaler"}
    )

    precision: str = "unknown"
    optimizer: str | None = None
    lr: float | None = None
    grad_clip: GradClip | None = None
    grad_scaler: bool = False
    # the script's argparse values, and where each came from
    args: dict[str, Any] | None = Field(None, description="The script's parsed argparse values.")
    args_given: dict[str, str] | None = Field(
        None,
        description='dest -> the option given on the command line ("--lr"), or "positional".',
    )
    args_defaults: dict[str, Any] | None = Field(
        None, description="dest -> the parser's default, for the values not given."
    )
    args_unrecorded: list[str] | None = Field(
        None, description="dests whose values have no JSON form."
    )
    args_parses: int | None = None
    # frameworks: the settings read from TrainingArguments and the Lightning Trainer
    transformers: dict[str, Any] | None = None
    lightning: dict[str, Any] | None = None
    # optimizers and schedulers
    optimizers: list[OptimizerInfo] | None = None
    param_groups: list[ParamGroup] | None = Field(
        None, description="The first optimizer's param groups."
    )
    optimizer_steps: int | None = None
    lr_initial: Value | None = None
    lr_scheduler: SchedulerInfo | str | None = None
    lr_schedulers: list[SchedulerInfo] | None = None
    # precision
    autocast: list[AutocastRegion] | None = None
    autocast_dtype: str | list[str] | None = None
    scaler: ScalerInfo | None = None
    scalers: list[ScalerInfo] | None = None
    # clipping
    grad_clips: list[ClipRecord] | None = None
    grad_clip_inactive: ClipRecord | None = None
    clip_after_unscale: bool | None = Field(
        None, description="As grad_clip.clip_after_unscale, given in a config file."
    )
    # the loss
    loss: dict[str, Any] | None = None
    losses: list[dict[str, Any]] | None = None
    loss_fn: dict[str, Any] | None = Field(
        None, description="The loss's settings given in a config file, e.g. ignore_index."
    )
    param_dtypes: dict[str, int] | None = Field(
        None, description="Elements per dtype over the trained parameters."
    )
    sources: dict[str, str] | None = Field(
        None, description='key -> where its value came from ("transformers", "config-file").'
    )
    origins: dict[str, Origin] | None = Field(
        None,
        description='setting ("lr", "grad_clip.max", "eps", "weight_decay", a switch that is '
        'on: "fp16", a float16 dtype chosen by name: "precision") -> where the run\'s value came from; '
        '"lightning.Trainer" / "transformers.TrainingArguments": where the Lightning Trainer / '
        "the TrainingArguments got their arguments (a setting left at its default is given "
        "there).",
    )
    libraries: list[str] | None = Field(
        None,
        description="Top-level packages the run imported from outside the standard library "
        "(a dataset record of a library is related to a diagnosis only when the run used it).",
    )
    capture_errors: list[str] | None = None
    training_calls: TrainingCalls | None = Field(
        None, description="The user's lines that called backward, optimizer step and zero_grad."
    )


def readable_config(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A saved report's config with every declared key this version cannot read left out.

    An older or another tool's report may hold, under a key declared here, a value of another
    shape; the report still loads, without that key, and a warning names it. A bad value of
    one of the long-standing keys (``lr: "fast"``) is left for the caller to reject.
    """
    kept = dict(config)
    dropped: list[str] = []
    for _ in range(len(kept) + 1):  # each round drops a key or stops
        try:
            Config.model_validate(kept)
            break
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            unreadable = sorted(k for k in bad if k in kept and k not in Config.always)
            if not unreadable:
                break
            for key in unreadable:
                del kept[key]
            dropped += unreadable
    warnings = [f"config.{key}: not in a form this diagnose reads; left out" for key in dropped]
    return kept, warnings
