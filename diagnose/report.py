"""The Report: the JSON contract between a run, the rule engine, the renderers and other tools.

Keys listed in DESIGN.md are relied on by other people's tools: rename nothing, add freely.
Every model accepts unknown keys (``extra="allow"``) so that a report written by a newer
version still loads; ``Report.load`` says when the version is newer than this one knows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from diagnose import jsonsafe
from diagnose.atomic import write_atomic
from diagnose.errors import read_user_text
from diagnose.safetext import json_text
from diagnose.trainconfig import (  # noqa: F401 (GradClip: part of the model)
    Config,
    GradClip,
    readable_config,
)

REPORT_VERSION = 1

Status = Literal["clean", "nonfinite", "exception", "interrupted", "silent", "untrained"]
Phase = Literal["input", "forward", "loss", "backward", "optimizer"]


class _Model(BaseModel):
    # inf and nan are the whole point of a report: write them as "Infinity"/"NaN" strings
    # (valid JSON) rather than pydantic's default null, which would lose them.
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="strings")


class Location(_Model):
    """A place in the user's own code."""

    file: str
    line: int
    function: str | None = None
    code: str | None = None
    via: str | None = Field(
        None, description="file:line inside an installed library that the user's line called."
    )


class TensorStats(_Model):
    """Summary of one tensor seen by the tracer; cheap to compute, cheap to store."""

    name: str = Field(description='Role of the tensor, e.g. "input[0]", "output", "weight".')
    dtype: str | None = None
    shape: list[int] = Field(default_factory=list)
    abs_min: float | None = Field(None, description="Smallest non-zero |x|; None when unknown.")
    abs_max: float | None = Field(None, description="Largest |x|; inf or nan when non-finite.")
    nan: int | None = Field(None, description="Count of nan elements; None when not counted.")
    inf: int | None = Field(None, description="Count of +-inf elements; None when not counted.")
    headroom: float | None = Field(
        None, description="dtype's largest finite value / abs_max; < 2 is flagged near_limit."
    )
    near_limit: bool = False
    min: float | None = Field(
        None, description="Smallest finite signed value (tells log/sqrt of a negative from 0)."
    )
    max: float | None = Field(None, description="Largest finite signed value.")
    zeros: int | None = Field(
        None, description="Count of elements exactly 0; None when not counted."
    )

    @field_validator("min", "max", "zeros", mode="before")
    @classmethod
    def _unknown_if_not_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # Added after version 1 shipped: a report from another tool that puts something else
        # under these keys still loads, with the value unknown.
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if info.field_name == "zeros" and not float(value).is_integer():
            return None
        return value

    @property
    def finite(self) -> bool:
        if self.nan or self.inf:
            return False
        return self.abs_max is None or _is_finite(self.abs_max)


class Frame(_Model):
    """One module call (or a loss / optimizer checkpoint) kept in the ring buffer."""

    index: int = Field(description="Position in the run's sequence of calls.")
    step: int | None = None
    phase: Phase | None = None
    module: str | None = None
    module_type: str | None = None
    inputs: list[TensorStats] = Field(default_factory=list)
    outputs: list[TensorStats] = Field(default_factory=list)
    weights: list[TensorStats] = Field(default_factory=list)
    producer: bool = Field(False, description="True for the frame that produced the event.")

    @property
    def finite(self) -> bool:
        return all(s.finite for s in (*self.inputs, *self.outputs, *self.weights))


class StepSummary(_Model):
    """What a summary row of the history adds: the span it covers and its extremes."""

    last_step: int
    steps: int = Field(description="How many optimizer steps the row stands for.")
    loss_min: float | None = Field(None, description="Smallest finite loss.")
    loss_max: float | None = Field(None, description="Largest finite loss.")
    grad_norm_max: float | None = Field(
        None, description="Largest gradient norm; inf or nan when one of the steps' was."
    )
    loss_scale_max: float | None = None
    skipped_steps: int = Field(0, description="Steps a GradScaler skipped.")
    near_limit_steps: int = Field(0, description="Steps with values near their dtype's limit.")


class StepRecord(_Model):
    """Per optimizer step, kept over the whole run."""

    step: int
    loss: float | None = None
    grad_norm: float | None = Field(
        None,
        description="Total norm of the parameter gradients; where a clip by norm ran, the norm "
        "it measured before clipping.",
    )
    max_activation: float | None = Field(
        None,
        description="Largest |x| of any module's output (loss modules left out); measured on "
        "detailed steps only, null on a light step.",
    )
    max_output: float | None = Field(
        None,
        description="Largest |x| of the model's own outputs (its root calls; loss modules left "
        "out), measured on every step; null in reports written before it existed.",
    )
    lr: float | None = None
    loss_scale: float | None = None
    skipped: bool = Field(False, description="True when a GradScaler skipped this step.")
    near_limit: bool = False
    detailed: bool = Field(
        True,
        description=(
            "True when every module call was watched this step; False on a light step, where "
            "only the model's outputs are (max_output) and max_activation is null."
        ),
    )
    summary: StepSummary | None = Field(
        None,
        description=(
            "Set on a row that stands for the steps step..summary.last_step of a long run's "
            "middle: loss and grad_norm are then their means, max_activation and max_output the "
            "largest measured, lr the "
            "last, loss_scale the smallest, skipped and near_limit true if any step was."
        ),
    )

    @property
    def covers(self) -> int:
        """How many optimizer steps this row stands for."""
        return self.summary.steps if self.summary is not None else 1


class OpSource(_Model):
    """The watched op that made one input of the producing op from plain numbers."""

    input: int = Field(description="Index of that input in op_inputs.")
    op: str
    numbers: list[float] = Field(
        default_factory=list,
        description="The plain numbers it was given (the 1e-8 of std + 1e-8).",
    )
    location: Location | None = None


class InputValues(_Model):
    """The numbers of one input of the producing op, as the tracer measured them (the
    figures its ``details`` line writes in words)."""

    name: str = Field(description='Role of the input, as in op_inputs ("input[0]").')
    role: str | None = Field(
        None,
        description='The op\'s parameter it was passed as ("input", "weight", "bias", '
        '"target"), from the op\'s signature; null when it cannot be told.',
    )
    dtype: str | None = None
    min: float | None = Field(None, description="Smallest finite signed value.")
    max: float | None = Field(None, description="Largest finite signed value.")
    min_abs: float | None = Field(
        None,
        description="Smallest finite |x|, 0 when the input holds a zero (TensorStats.abs_min "
        "leaves zeros out).",
    )
    max_abs: float | None = Field(None, description="Largest |x|; inf or nan when non-finite.")


class CtcSample(_Model):
    """One sample of a CTC loss whose input is too short for its target: no alignment exists,
    so its loss is inf (and its gradient nan)."""

    sample: int = Field(description="Position of the sample in the batch.")
    input_length: int
    target_length: int
    needed: int = Field(
        description="Frames an alignment needs: the target's length plus one blank between "
        "each pair of equal neighbouring symbols."
    )


class MaskedRows(_Model):
    """Rows of a softmax's input that are -inf everywhere: their softmax is 0/0 = nan."""

    op: str = Field(description='The softmax-like op ("softmax", "log_softmax").')
    location: Location | None = None
    count: int = Field(description="How many rows are -inf everywhere.")
    total: int = Field(description="Rows of the input along the softmax's dim.")
    rows: list[list[int]] = Field(
        default_factory=list,
        description="Indices of the first of them over the other dims (batch first).",
    )


class BatchCast(_Model):
    """Rows of the batch that were finite as the DataLoader gave them and became inf when
    cast to a narrower dtype before the model or the loss (a float16 precision setting,
    ``.half()``): the data is fine, its dtype is too narrow for it."""

    input: str = Field(description='Which tensor: "input[0]" of the model, "target" of a loss.')
    source_dtype: str = Field(description='The dtype the loader gave ("float32").')
    dtype: str = Field(description='The dtype it was cast to ("float16").')
    max_abs: float = Field(description="The largest |x| of those rows as the loader gave them.")
    rows: int = Field(
        description="How many non-finite rows the cast reproduced (of those checked)."
    )


class CallFrame(_Model):
    """One frame of the user's own code on the way to an op (file, line, function)."""

    file: str
    line: int
    function: str | None = None


class CrossCheck(_Model):
    """How the event's producer was confirmed by a second, independent method."""

    method: str = Field(
        description='The confirming method, e.g. "anomaly-mode replay" of the step\'s backward '
        '(a backward event) or "float64 replay of the op" (a forward one).'
    )
    agreed: bool | None = Field(
        description="Whether the first method named the same producer; when not, the event "
        "gives the confirmed one and ``first`` what the first method said. None: the second "
        "method did not see the value born (it neither confirms nor refutes)."
    )
    first: str | None = Field(
        None, description="The producer the first method named, when the two disagree."
    )
    detail: str = Field("", description="What was checked and what it saw, for people.")


class Accumulation(_Model):
    """What a reducing op (matmul, linear, conv, bmm, einsum, attention) computed, recomputed
    in float64 from its own inputs: the accumulated magnitude, not the inputs' headroom,
    decides whether its compute dtype overflowed."""

    op: str
    compute_dtype: str = Field(description="The dtype the op computed its result in.")
    dtype_max: float = Field(description="The largest finite value of that dtype.")
    terms: int | None = Field(None, description="Products summed into each output value (K).")
    bound: float | None = Field(
        None, description="max|a| * max|b| * K: the most each output value could reach."
    )
    max_abs: float | None = Field(
        None, description="The largest |result| recomputed in float64 (None: not finite there)."
    )
    attention: bool = Field(False, description="Its result went on to a softmax: attention scores.")
    scaled_after: bool = Field(
        False, description="A scale (a division or multiplication) was applied after the product."
    )


class CrashSite(_Model):
    """A line of the user's code that a crash's explanation points at, and its part in it."""

    role: str = Field(
        description='"crash" (where it raised), "saved" (the forward op whose saved tensor was '
        'changed), "modified" (the in-place op that changed it), "carried" (a tensor kept '
        'across steps), "cut" (where the graph was cut), "producer" (what made the bad input), '
        '"built" (where the module was built).'
    )
    file: str
    line: int
    function: str | None = None
    code: str | None = None
    what: str | None = Field(None, description="The op or call at that line, in words.")


class CrashEdit(_Model):
    """The one change a crash's fix makes, as the live run showed it."""

    kind: str = Field(
        description='"layer-size", "out-of-place", "inplace-flag", "detach" or "cast".'
    )
    file: str
    line: int
    target: str | None = Field(
        None, description="The call, argument or name changed (in_features, h, relu_)."
    )
    value: str | None = Field(None, description="The value it is set to (5408, float32).")


class Crash(_Model):
    """What the live run showed about the exception the script raised."""

    family: str = Field(description="The symptom id it belongs to (shape-mismatch, ...).")
    evidence: list[str] = Field(default_factory=list)
    module: str | None = Field(None, description="Qualified name of the module that raised.")
    module_type: str | None = None
    sizes: dict[str, int] = Field(
        default_factory=dict, description="The module's declared sizes (in_features, ...)."
    )
    input_shape: list[int] | None = None
    expected: int | None = None
    got: int | None = None
    sites: list[CrashSite] = Field(default_factory=list)
    chain: list[Location] = Field(
        default_factory=list, description="The user's frames, outermost (the loop) first."
    )
    edit: CrashEdit | None = None
    checked: list[str] = Field(
        default_factory=list, description="What was looked at when the cause was not shown."
    )


class Event(_Model):
    """Where the first non-finite value was born, or what the script raised."""

    kind: Literal["nonfinite", "exception"]
    phase: Phase | None = None
    step: int | None = Field(None, description="Optimizer steps completed before the event.")
    rank: int | None = None
    module: str | None = None
    module_type: str | None = None
    op: str | None = None
    location: Location | None = None
    optimizer_location: Location | None = Field(
        None,
        description="For an optimizer-phase event: where the optimizer was built (its eps, "
        "its lr are set there); location is its step() call.",
    )
    dtype: str | None = None
    message: str
    value: str | None = Field(None, description='"nan", "inf", "-inf" or a mix, e.g. "nan+inf".')
    op_inputs: list[TensorStats] = Field(
        default_factory=list, description="Statistics of the producing op's inputs."
    )
    op_numbers: list[float] | None = Field(
        None,
        description="The plain numbers the producing op was given beside its tensors "
        "(the 1e39 of x * 1e39, a fill value, an eps).",
    )
    op_input_sources: list[OpSource] | None = Field(
        None,
        description="For inputs of the producing op that an earlier watched op made "
        "with plain numbers (an eps added to a divisor): that op, its numbers and its line.",
    )
    op_input_values: list[InputValues] | None = Field(
        None,
        description="The producing op's inputs as numbers, one per op_inputs entry, in the "
        "same order: true min |x|, max |x|, signed min and max, dtype.",
    )
    details: list[str] = Field(default_factory=list)
    sample_indices: list[int] | None = Field(
        None, description="Dataset indices of the offending samples (phase input)."
    )
    exception_type: str | None = None
    traceback: str | None = None
    op_value: str | None = Field(
        None,
        description='What the producing op itself returned ("-inf" from log(0)), when '
        "it differs from what reached the checked place (a nan loss).",
    )
    ignore_index: int | None = Field(
        None, description="ignore_index of the cross-entropy / nll_loss op that produced it."
    )
    targets_total: int | None = Field(None, description="Targets fed to that loss op.")
    targets_ignored: int | None = Field(
        None, description="Of those, how many equal ignore_index (all: a mean over nothing)."
    )
    ctc_infeasible: list[CtcSample] | None = Field(
        None,
        description="For a ctc_loss op: the samples whose input is shorter than their target "
        "needs (the first of them).",
    )
    ctc_infeasible_count: int | None = Field(
        None, description="How many samples of that ctc_loss have no alignment."
    )
    masked_rows: MaskedRows | None = Field(
        None,
        description="A softmax on the way from the producing op to the caught value that "
        "received rows of -inf only.",
    )
    batch_cast: BatchCast | None = Field(
        None,
        description="The non-finite values were finite in the DataLoader's batch: a cast to a "
        "narrower dtype on the way to the model or the loss made them inf.",
    )
    call_chain: list[CallFrame] | None = Field(
        None,
        description="The user's own frames from the training loop's call down to the op's line, "
        "outermost first.",
    )
    cross_check: CrossCheck | None = Field(
        None, description="The producer confirmed by a second method, and whether they agreed."
    )
    accumulation: Accumulation | None = Field(
        None,
        description="A reducing op's result recomputed in float64: what it accumulated against "
        "its compute dtype's range.",
    )
    crash: Crash | None = Field(
        None, description="For an exception: what the live run showed about its cause."
    )

    @model_validator(mode="before")
    @classmethod
    def _values_of_an_older_report(cls, data: Any) -> Any:
        # Reports written before op_input_values existed carry those numbers only in the
        # detail line: read them from there once, here, so nothing downstream parses prose.
        if isinstance(data, dict) and data.get("op_input_values") is None:
            values = legacy_input_values(data.get("op_inputs"), data.get("details"))
            if values is not None:
                data = {**data, "op_input_values": values}
        return data


class ScriptInfo(_Model):
    path: str
    argv: list[str] = Field(default_factory=list)
    sha256: str | None = Field(
        None, description="Hash of the script as it ran; `apply` refuses a changed script."
    )


class Symptom(_Model):
    id: str
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[str] = Field(default_factory=list)
    title: str | None = None


class Fix(_Model):
    id: str
    score: float
    title: str
    why: str
    example_patch: str
    patch: str | None = None
    verified: bool | None = None
    rules: list[str] = Field(default_factory=list, description="Rules that support this fix.")
    evidence: list[str] = Field(default_factory=list)
    patch_note: str | None = Field(None, description="Why no patch, or how to apply it.")
    verify_note: str | None = Field(None, description="What the verification re-run saw.")
    patch_file: str | None = Field(
        None, description="The config file `patch` is a diff of (absent: the script)."
    )
    patch_argv: list[str] | None = Field(
        None, description="The script's arguments to run with instead (a setting given in argv)."
    )


class MatchRef(_Model):
    record_id: str
    slug: str
    score: float
    reason: str | None = None
    error_message: str | None = Field(None, description="The record's canonical message.")
    solutions: list[str] = Field(default_factory=list)
    example_fix: str | None = None
    kind: str | None = Field(
        None, description='"pattern" or "similar" for an exception; "related" to a symptom.'
    )


class Interruption(_Model):
    """Why a run ended before the script did, and how far it had got."""

    cause: Literal["SIGINT", "SIGTERM", "SIGHUP", "KeyboardInterrupt", "unfinished"] = Field(
        description='The signal that stopped the run, "KeyboardInterrupt" when the script '
        'raised it itself, or "unfinished": this report was written when the run '
        "started and nothing replaced it (diagnose still running, or killed by "
        "SIGKILL, out of memory or a crash before it could write what it saw)."
    )
    stopped_at_step: int | None = Field(
        None, description="Optimizer steps completed when the run stopped."
    )
    message: str = Field(description="One line for the user.")
    pid: int | None = Field(None, description="Process id of the diagnose run.")


class HistoryNote(_Model):
    """Says that a long run's history keeps every step only near its start and its end."""

    steps: int = Field(description="Optimizer steps the history stands for.")
    first_kept: int = Field(description="Rows kept as they were from the start of the run.")
    last_kept: int = Field(description="Rows kept as they were before the event or the end.")
    summarized: int = Field(description="Steps between those, given as summary rows.")
    message: str


class RankSummary(_Model):
    """One process of a distributed run: what it saw, so ranks that saw nothing say so."""

    rank: int
    status: Literal["clean", "nonfinite", "exception", "interrupted", "stopped", "missing"] = Field(
        description='"stopped": ended because another rank stopped first; "missing": left '
        'no evidence (killed before it could write); "interrupted": stopped by '
        "SIGINT or SIGTERM."
    )
    summary: str = Field(description="One line: the rank's event, or what it was doing.")
    step: int | None = None
    phase: Phase | None = None
    history_length: int = 0
    local_grads_finite: bool | None = Field(
        None,
        description="Whether this rank's own gradients were finite before the last "
        "all-reduce (DDP); None when not known.",
    )
    primary: bool = Field(False, description="True for the rank where the event was born.")


class LossInput(_Model):
    """What one loss function was given, from the calls the learning watch looked at."""

    function: str = Field(description='The torch.nn.functional loss, e.g. "cross_entropy".')
    calls: int = Field(0, description="Calls seen over the run.")
    classes: int | None = Field(None, description="Size of the class axis (dim 1 or 0).")
    input_shape: list[int] = Field(default_factory=list)
    target_shape: list[int] = Field(default_factory=list)
    producer: str | None = Field(
        None, description='The op that made the input, when telling: "softmax", "sigmoid".'
    )
    probabilities: bool = Field(
        False, description="Every looked-at input lay in [0, 1] with rows summing to 1."
    )
    broadcast: bool = Field(
        False, description="Input and target shapes differed and were broadcast together."
    )
    broadcast_shape: list[int] = Field(
        default_factory=list, description="The shape both were broadcast to."
    )
    misplaced_classes: bool = Field(
        False,
        description="A 3-D or larger input took its classes from dim 1, but a linear layer made "
        "its last dim (the features it outputs) with no permute between.",
    )
    location: Location | None = Field(None, description="The user's line that called the loss.")
    output_activation: str | None = Field(
        None,
        description='A regression loss\'s input made by a bounded activation: "sigmoid" (0, 1) '
        'or "tanh" (-1, 1).',
    )
    target_min: float | None = Field(
        None, description="A regression loss's smallest target over the looked-at calls."
    )
    target_max: float | None = Field(
        None, description="A regression loss's largest target over the looked-at calls."
    )


class OptimizerLoss(_Model):
    """The loss of the backward before each of one optimizer's steps (sampled steps)."""

    name: str = Field(description="What the script calls the optimizer (else its class).")
    steps: int = 0
    first: float | None = None
    last: float | None = None
    lowest: float | None = None
    points: int = Field(0, description="Steps whose loss was read.")


class ModuleNote(_Model):
    """A module the learning evidence is about."""

    name: str
    type: str
    parameters: int = Field(0, description="Trainable elements it holds.")
    container: str | None = Field(
        None, description='Where the model keeps it when not registered: "Net.layers (a list)".'
    )


class ActivationNote(_Model):
    """One activation module on the checked passes (its latest check)."""

    name: str
    kind: str = Field(description='"relu", "tanh" or "sigmoid".')
    share: float = Field(
        description="Of its values: exact zeros out of a ReLU; inputs beyond +-5 into tanh or "
        "sigmoid (their flat tails)."
    )
    checks: int = Field(1, description="Checked passes that saw it.")
    first_share: float | None = Field(
        None, description="The share on the first check (after the first steps): the init's."
    )


class GradNote(_Model):
    """One layer's gradient norm on the last checked step."""

    module: str
    norm: float


class Learning(_Model):
    """Whether training could learn: what the learning watch saw besides inf/nan.

    Counts are over the whole run; the checks that cost a host read ran on the first steps and
    then on sampled ones (``*_checked`` say how many).
    """

    backward_passes: int = 0
    optimizer_steps: int = 0
    optimizers: int = Field(0, description="torch.optim optimizers constructed.")
    clear_checked: int = Field(0, description="Optimizer steps checked for cleared gradients.")
    uncleared: int = Field(
        0, description="Checked steps taken on gradients not cleared since the step before."
    )
    order_checked: int = Field(
        0, description="Optimizer steps checked for the order of backward, zero_grad and step."
    )
    stepped_cleared: int = Field(
        0,
        description="Checked steps taken on gradients zero_grad had cleared after the last "
        "backward (zero_grad between backward and step, or a step before its backward): "
        "they move no weight.",
    )
    order_optimizer: str | None = Field(
        None,
        description="What the script calls the optimizer whose steps found cleared gradients.",
    )
    mode_checked: int = Field(0, description="Backward passes checked for the model's mode.")
    eval_mode: int = Field(
        0,
        description="Checked backward passes whose model (with dropout or batch norm) was in "
        "eval mode.",
    )
    eval_modules: list[str] = Field(default_factory=list)
    grads_checked: int = Field(0, description="Optimizer steps checked for missing gradients.")
    optimized_elements: int = Field(0, description="Trainable elements the optimizers hold.")
    not_in_optimizer: list[ModuleNote] = Field(
        default_factory=list,
        description="Modules whose parameters received gradients but no optimizer holds them.",
    )
    unregistered: list[ModuleNote] = Field(
        default_factory=list,
        description="Modules called in forward whose parameters are not registered on the "
        "model and that no optimizer holds.",
    )
    no_gradient: list[ModuleNote] = Field(
        default_factory=list,
        description="Modules that ran in forward whose parameters, held by an optimizer, "
        "never received a gradient on a checked step.",
    )
    no_grad_modules: list[str] = Field(
        default_factory=list,
        description="Modules with trainable parameters that ran with gradients disabled "
        "inside a training forward.",
    )
    losses: list[LossInput] = Field(default_factory=list)
    input_module: str | None = Field(None, description="The first layer whose input was read.")
    input_mean: float | None = None
    input_std: float | None = None
    input_min: float | None = None
    input_max: float | None = None
    input_constant: bool | None = Field(
        None,
        description="Every input batch the first layer read held one number repeated (a "
        "pipeline that erased the data); null when none was read.",
    )
    weight_change: float | None = Field(
        None,
        description="Relative change of the sampled weights from the first step to the last "
        "checked one (||w - w0|| / ||w0||).",
    )
    loss_series: list[float] = Field(
        default_factory=list,
        description="The loss at backward passes, when the run took no optimizer step.",
    )
    optimizer_losses: list[OptimizerLoss] = Field(
        default_factory=list,
        description="With several optimizers (a GAN), each one's own loss: the loss of the "
        "backward before its steps.",
    )
    activations: list[ActivationNote] = Field(
        default_factory=list, description="Activation modules seen on the sampled passes."
    )
    first_grad: GradNote | None = Field(
        None, description="The first trainable layer (in forward order) and its gradient norm."
    )
    last_grad: GradNote | None = Field(
        None, description="The last trainable layer and its gradient norm, on the same step."
    )
    layer_grads: list[GradNote] = Field(
        default_factory=list,
        description="Each trainable layer's gradient norm on the same step, in forward order "
        "(at most 24, spread through the depth; the first and the last always kept).",
    )


class Report(_Model):
    version: int = REPORT_VERSION
    status: Status = Field(
        description='"untrained": the script ended (returned or exited) before its first '
        "training step, so nothing was checked; never reported as clean."
    )
    script: ScriptInfo
    event: Event | None = None
    frames: list[Frame] = Field(default_factory=list)
    history: list[StepRecord] = Field(default_factory=list)
    config: Config = Field(default_factory=Config)
    symptoms: list[Symptom] = Field(default_factory=list)
    set_aside: list[Symptom] = Field(
        default_factory=list,
        description="Symptoms a detector found but the report's own facts rule out (every rule "
        "reading them is contradicted): no fix is offered for them; the last evidence lines "
        "say why.",
    )
    fixes: list[Fix] = Field(default_factory=list)
    matches: list[MatchRef] = Field(default_factory=list)
    facts: dict[str, Any] = Field(
        default_factory=dict, description="The named facts the rules were evaluated on."
    )
    diagnose_version: str | None = None
    warnings: list[str] = Field(default_factory=list)
    ranks: list[RankSummary] = Field(
        default_factory=list, description="Per-rank evidence of a distributed run, by rank."
    )
    interruption: Interruption | None = Field(
        None, description='Set when status is "interrupted": what stopped the run, and where.'
    )
    history_note: HistoryNote | None = Field(
        None, description="Set when the history summarises part of a long run."
    )
    learning: Learning | None = Field(
        None, description="What the run showed about whether it could learn (beyond inf/nan)."
    )
    unwatched_steps: int | None = Field(
        None,
        description="Optimizer steps the tracer did not check: those taken in threads other "
        "than the one whose training it follows, and those whose check failed inside the "
        "tracer (the warnings say which and why). Unset when every step was checked.",
    )
    exit_code: int | None = Field(
        None,
        description="The status the script asked to exit with (sys.exit, SystemExit, exit()); "
        "null when it returned. A clean run that exited 3 is clean and keeps 3 here; a script "
        'that exited before its first training step (argparse\'s 2) is "untrained".',
    )

    @property
    def steps_recorded(self) -> int:
        """Optimizer steps the history stands for, counting what summary rows cover."""
        if self.history_note is not None:
            return self.history_note.steps
        return sum(row.covers for row in self.history)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON that is also safe to print: C1 and other raw controls escaped."""
        try:
            dumped = self.model_dump_json(indent=indent)
        except PydanticSerializationError:  # a lone surrogate (an undecodable file name)
            dumped = json.dumps(
                _inf_nan_as_strings(self.model_dump(mode="json")), indent=indent, ensure_ascii=False
            )
        return json_text(dumped)

    def write(self, path: str | Path) -> None:
        """Write atomically: a reader sees the previous file or this one, never half."""
        write_atomic(Path(path), self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """Read a saved report. Raises ReportError with one clear line on bad input."""
        from diagnose.userfiles import REPORT_CAP

        path = Path(path)
        text = read_user_text(path, "report file", ReportError, cap=REPORT_CAP)
        try:
            data = jsonsafe.loads(text)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
        except RecursionError:
            raise ReportError(f"{path}: not a report: JSON nested too deep") from None
        except ValueError as exc:  # e.g. an integer past Python's digit limit
            raise ReportError(f"{path}: not JSON that can be read: {exc}") from None
        return cls.from_data(data, source=str(path))

    @classmethod
    def from_data(cls, data: Any, source: str = "<report>") -> Report:
        """A report from parsed JSON of any shape; ReportError (one line) when it is not one."""
        try:
            return cls._from_data(data, source)
        except ReportError:
            raise
        except RecursionError:
            raise ReportError(f"{source}: not a report: nested too deep") from None
        except (ValueError, TypeError, OverflowError, KeyError, AttributeError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ReportError(f"{source}: not a report: {type(exc).__name__}: {reason}") from None

    @classmethod
    def _from_data(cls, data: Any, source: str) -> Report:
        if not isinstance(data, dict):
            raise ReportError(f"{source}: a report is a JSON object, got {type(data).__name__}")
        if _deeper_than(data, MAX_DEPTH):
            raise ReportError(f"{source}: not a report: nested deeper than {MAX_DEPTH} levels")
        version = data.get("version")
        warnings: list[str] = []
        if isinstance(version, int) and version > REPORT_VERSION:
            warnings.append(
                f"report format version {version} is newer than this diagnose knows "
                f"({REPORT_VERSION}); showing what it can read"
            )
        if isinstance(data.get("config"), dict):
            config, dropped = readable_config(data["config"])
            data = {**data, "config": config}
            warnings += dropped
        try:
            report = cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = "$" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{json.dumps(str(p))[1:-1]}"
                for p in err["loc"]
            )
            message = " ".join(str(err["msg"]).split())
            raise ReportError(f"{source}: {where}: {message}") from None
        report.warnings = [*warnings, *report.warnings]
        return report


_DETAIL_INPUT = re.compile(
    r"min \|x\| = (?P<min_abs>[-+0-9.eE]+|-?inf|nan|\?), max \|x\| = (?P<max_abs>[-+0-9.eE]+|-?inf|nan|\?)"
)


def legacy_input_values(inputs: Any, details: Any) -> list[dict[str, Any]] | None:
    """An older report's op input numbers, from its detail line ("log received min |x| = 0,
    max |x| = 1; ..."): one part per op input that had a largest |x|, in order; None when the
    report has no such line or no op inputs."""
    if not isinstance(inputs, list) or not isinstance(details, list):
        return None
    line = next((d for d in details if isinstance(d, str) and " received " in d), None)
    if line is None:
        return None
    parts = iter([m.groupdict() for m in _DETAIL_INPUT.finditer(line)])
    values = []
    for stats in inputs:
        name = _key(stats, "name")
        if not isinstance(name, str):
            return None
        part = next(parts, None) if _key(stats, "abs_max") is not None else None
        dtype = _key(stats, "dtype")
        values.append(
            {
                "name": name,
                "dtype": dtype if isinstance(dtype, str) else None,
                "min": _legacy_number(_key(stats, "min")),
                "max": _legacy_number(_key(stats, "max")),
                "min_abs": _legacy_number(part["min_abs"]) if part else None,
                "max_abs": _legacy_number(part["max_abs"] if part else _key(stats, "abs_max")),
            }
        )
    return values


def _key(stats: Any, key: str) -> Any:
    return stats.get(key) if isinstance(stats, dict) else getattr(stats, key, None)


def _legacy_number(value: Any) -> float | None:
    """A number as an older report or its prose wrote it ("1.1e-5", "inf", "NaN", 0.5)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        return float(value)
    except ValueError:
        return None


MAX_DEPTH = 64  # a real report nests a few levels; the serializer gives up past ~900


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether lists/objects in ``data`` nest more than ``limit`` levels (no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in children)
    return False


class ReportError(ValueError):
    """A report file that cannot be read; the message is one line for the user."""


def report_json_schema() -> dict[str, Any]:
    """The published JSON Schema of the report (kept in step with the model by a test)."""
    return Report.model_json_schema()


def _inf_nan_as_strings(data: Any) -> Any:
    """``model_dump(mode="json")`` data with inf/nan written as model_dump_json writes them."""
    if isinstance(data, float) and not _is_finite(data):
        return "NaN" if data != data else ("Infinity" if data > 0 else "-Infinity")
    if isinstance(data, dict):
        return {k: _inf_nan_as_strings(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_inf_nan_as_strings(v) for v in data]
    return data


def _is_finite(x: float) -> bool:
    return x == x and x not in (float("inf"), float("-inf"))


if __name__ == "__main__":
    print(json.dumps(report_json_schema(), indent=2))
