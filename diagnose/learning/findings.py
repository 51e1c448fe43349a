"""From a finite run's ``Learning`` evidence and step history to symptoms, each with its why.

Two kinds of finding. Structural ones are certain after a few steps (a step never taken,
gradients never cleared, parameters no optimizer holds, a graph cut, probabilities fed to a
loss that takes logits): they hold at any run length. Curve ones read the loss and lr history
(loss at the chance level, a loss that does not move, an lr schedule that falls to nothing):
they need a run long enough to show a trend, and their confidence grows with its length.
A structural finding explains a flat loss, so the curve findings that would only restate it
are not made beside one.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from diagnose.formatting import num
from diagnose.report import Learning, LossInput, ModuleNote, Report, ScriptInfo, Symptom
from diagnose.trainconfig import ParamGroup

BROKEN = 0.8  # a finding at least this confident calls the run broken
MIN_CURVE = 30  # loss points before a curve finding is made
FULL_CURVE = 150  # loss points at which a curve finding gets its full confidence
# a run whose loss ends below this share of its start learned: raw inputs did not stop it
LEARNED_RATIO = 0.5
# a loss above this many times the chance level is not "at chance": a uniform guess would do
# better, so the model learned something, wrongly (a diverging lr), rather than nothing
ABOVE_CHANCE = 2.0
FAR_BELOW = 300  # an lr this many times below the optimizer's usual one is far too low

TITLES = {
    "gradients-never-cleared": "Gradients are never cleared between optimizer steps",
    "backward-without-step": "Backward runs but the optimizer never steps",
    "parameters-not-in-optimizer": "Parameters get gradients but no optimizer holds them",
    "unregistered-submodules": "Layers kept in a plain list or dict are not trained",
    "gradient-flow-cut": "The gradient never reaches some trained parameters",
    "probabilities-into-logit-loss": "The loss is given probabilities where it expects logits",
    "target-shape-broadcast": "The loss broadcasts a target of another shape",
    "model-in-eval-mode": "The model trains in eval mode",
    "lr-schedule-collapse": "The lr schedule falls to almost nothing early in the run",
    "lr-too-low": "The learning rate is too low to move the weights",
    "loss-at-chance": "The loss stays at the chance level",
    "class-axis-misplaced": "The loss takes its classes from the wrong axis",
    "unnormalized-inputs": "The model's inputs are far from normalised",
    "dying-relus": "Most ReLU units output only zeros",
    "saturated-activations": "The tanh/sigmoid inputs sit in their flat tails",
    "vanishing-gradients": "The gradient vanishes before it reaches the first layers",
    "weight-decay-too-strong": "Weight decay erases the weights faster than they learn",
    "constant-inputs": "Every input the model is given is the same number",
    "gradients-clipped-to-zero": "Gradient clipping with a limit of 0 erases every gradient",
    "training-calls-out-of-order": "The optimizer steps on gradients zero_grad has just cleared",
    "output-range-excludes-targets": "The output activation cannot reach the targets",
}
# the open range each bounded output activation's values lie in
OUTPUT_RANGE = {"sigmoid": (0.0, 1.0), "tanh": (-1.0, 1.0)}
# a clipping limit at or below this scales every gradient to (almost) nothing: clip_grad_norm_
# multiplies each gradient by max_norm / norm, clip_grad_value_ clamps it into [-limit, limit]
ZERO_CLIP = 1e-8
DEAD = 0.7  # share of exact zeros out of a ReLU that calls it dying (DeepDiagnosis's bound)
ALL_DEAD = 0.999  # a ReLU layer this much at zero is dead through and through
SATURATED_SHARE = 0.5  # share of tanh/sigmoid inputs beyond +-5
VANISHED = 1e-3  # first layer's gradient norm over the last layer's
# The share of its size decoupled (or SGD's) weight decay takes off each weight per step, lr x
# weight_decay, that calls it too strong: at 1% a weight the gradients leave alone halves in
# about 70 steps (torch's AdamW defaults, lr 1e-3 and weight_decay 1e-2, take 1e-5).
STRONG_DECAY = 1e-2
# Optimizers whose coupled weight decay is added to the gradient before it is normalised:
# there a penalty coefficient of 1 or more outweighs any usual loss gradient.
ADAPTIVE = frozenset({"Adam", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad", "Adadelta"})
STRONG_COUPLED = 1.0

Detector = Callable[[Learning, Report], Symptom | None]


def detect_learning_symptoms(report: Report) -> list[Symptom]:
    """The symptoms a finite run shows about not learning; empty for a run that learns."""
    learning = report.learning
    if learning is None or report.status not in ("clean", "silent"):
        return []
    found = [s for detect in STRUCTURAL if (s := detect(learning, report)) is not None]
    found += [s for detect in CURVE_INDEPENDENT if (s := detect(learning, report)) is not None]
    if not found:  # a cause found above explains a flat loss: no restating it
        found = _first_causes(learning, report)
    for symptom in found:
        symptom.title = TITLES[symptom.id]
    return sorted(found, key=lambda s: -s.confidence)


def early_signs(learning: Learning) -> list[Symptom]:
    """The structural findings already sure while the run goes on (said early, judged at the
    end again with the whole run's evidence)."""
    bare = Report(status="clean", script=ScriptInfo(path=""), learning=learning)
    found = [s for detect in STRUCTURAL if (s := detect(learning, bare)) is not None]
    for symptom in found:
        symptom.title = TITLES[symptom.id]
    return [s for s in found if s.confidence >= BROKEN]


def _first_causes(learning: Learning, report: Report) -> list[Symptom]:
    """Inputs that are one number explain every flat curve, and raw inputs a loss stuck at
    chance; a cause found first makes the later ones a restatement of it, so each is judged
    only without the ones before."""
    found = [s for s in [constant_inputs(learning, report)] if s]
    if not found:  # inputs that carry nothing explain every curve below
        found = [s for s in (unnormalized(learning, report), lr_too_low(learning, report)) if s]
    if not found:  # decay that erases the weights explains every flat curve below
        found = [s for s in [decay_too_strong(learning, report)] if s]
    if not found:  # raw inputs saturate activations: that is the inputs' story
        found = [s for detect in ACTIVITY if (s := detect(learning, report)) is not None]
    if not found:  # dead or saturated units explain a vanished gradient
        found = [s for s in [vanishing(learning, report)] if s]
    if not found:
        found = [s for s in [at_chance(learning, report)] if s]
    return found


def is_broken(symptoms: list[Symptom]) -> bool:
    return any(s.id in TITLES and s.confidence >= BROKEN for s in symptoms)


# -- structural ----------------------------------------------------------------------------


def never_cleared(learning: Learning, report: Report) -> Symptom | None:
    if learning.clear_checked < 2 or learning.uncleared < learning.clear_checked:
        return None
    evidence = [
        f"no zero_grad() (and no other clearing) between any of the {learning.clear_checked} "
        "optimizer steps checked: each step adds every earlier batch's gradient again"
    ]
    growth = _grad_growth(report)
    if growth is not None:
        evidence.append(growth)
    return Symptom(id="gradients-never-cleared", confidence=0.9, evidence=evidence)


def without_step(learning: Learning, report: Report) -> Symptom | None:
    if learning.optimizers == 0 or learning.optimizer_steps > 0 or learning.backward_passes < 3:
        return None
    return Symptom(
        id="backward-without-step",
        confidence=0.95,
        evidence=[
            f"{learning.backward_passes} backward passes, 0 optimizer steps: the "
            f"{_plural(learning.optimizers, 'optimizer')} built never changed a weight"
        ],
    )


def calls_out_of_order(learning: Learning, report: Report) -> Symptom | None:
    """Steps taken after zero_grad cleared the last backward's gradients (``backward();
    zero_grad(); step()``, or a step before its backward): each step finds no gradient, so no
    weight moves, and every parameter looks cut off from the loss."""
    checked, cleared = learning.order_checked, learning.stepped_cleared
    if checked < 2 or cleared < max(2, 0.8 * checked):
        return None
    order = _call_order(report)
    moved = ""
    if learning.weight_change is not None and learning.optimizers == 1:
        moved = f"; the weights moved {num(learning.weight_change)} of their size"
    name = learning.order_optimizer
    whose = f"{name}'s" if learning.optimizers > 1 and name else "the"
    steps = "steps" if whose != "the" else "optimizer steps"
    return Symptom(
        id="training-calls-out-of-order",
        confidence=0.95 if cleared == checked else 0.85,
        evidence=[
            f"{cleared} of {whose} {checked} {steps} checked ran after zero_grad() had "
            f"cleared the gradients of the last backward{order}: each step finds no gradient "
            f"to apply{moved}"
        ],
    )


def _call_order(report: Report) -> str:
    """The user's lines of backward, zero_grad and step in the order they stand in their
    function, when all three stand in one (``" (line 27 backward, line 28 zero_grad, ...)"``)."""
    calls = report.config.training_calls
    if calls is None:
        return ""
    sites = [(kind, getattr(calls, kind, None) or []) for kind in ("backward", "zero_grad", "step")]
    if any(len(found) != 1 for _, found in sites):
        return ""
    places = [(found[0].line, kind, found[0].function) for kind, found in sites]
    if len({function for *_, function in places}) != 1:
        return ""
    if len({line for line, *_ in places}) == 1:
        return f" (in {places[0][2]}: all three on line {places[0][0]})"
    listed = ", ".join(f"line {line} {kind}()" for line, kind, _ in sorted(places))
    return f" (in {places[0][2]}: {listed})"


def clipped_to_zero(learning: Learning, report: Report) -> Symptom | None:
    """A clip with a limit of 0 on most steps: every gradient it clips becomes 0, so no
    update moves a weight (a ``--clip 0`` meant as "off" in a script that clips always)."""
    clip = report.config.grad_clip
    steps = learning.optimizer_steps or learning.backward_passes
    if clip is None or clip.max is None or clip.max > ZERO_CLIP or steps < 2:
        return None
    calls = clip.calls or 0
    if calls < steps / 2:
        return None
    function = (clip.function or "the clip").rsplit(".", 1)[-1]
    limit = "max_norm" if clip.kind == "norm" else "clip_value"
    what = (
        "scales every gradient by max_norm / norm = 0"
        if clip.kind == "norm"
        else "clamps every gradient into [0, 0]"
    )
    moved = ""
    if learning.weight_change is not None:
        moved = f"; the weights moved {num(learning.weight_change)} of their size"
    return Symptom(
        id="gradients-clipped-to-zero",
        confidence=0.95,
        evidence=[
            f"{function} ran {calls} times over {steps} steps with {limit}={num(clip.max)}: it "
            f"{what}, so no update changes a weight{moved}"
        ],
    )


def not_in_optimizer(learning: Learning, report: Report) -> Symptom | None:
    if not learning.not_in_optimizer or learning.optimizer_steps == 0:
        return None
    return Symptom(
        id="parameters-not-in-optimizer",
        confidence=0.85,
        evidence=[
            f"{_modules(learning.not_in_optimizer)} received gradients on every checked step "
            "but no optimizer holds their parameters, so they never change (parameters frozen "
            "on purpose have requires_grad=False and get no gradient)"
        ],
    )


def unregistered(learning: Learning, report: Report) -> Symptom | None:
    if not learning.unregistered:
        return None
    notes = learning.unregistered
    kept = sorted({n.container for n in notes if n.container})
    where = f", kept in {', '.join(kept)}" if kept else ""
    return Symptom(
        id="unregistered-submodules",
        confidence=0.9,
        evidence=[
            f"{_modules(notes)} ran in forward{where}, but are not registered on the model: "
            "their parameters are not in model.parameters(), so no optimizer holds them and "
            "they never learn (nor move with .to() or save in state_dict)"
        ],
    )


def graph_cut(learning: Learning, report: Report) -> Symptom | None:
    if calls_out_of_order(learning, report) is not None:
        return None  # zero_grad emptied every gradient before the step: not a cut graph
    if learning.no_grad_modules:
        return Symptom(
            id="gradient-flow-cut",
            confidence=0.85,
            evidence=[
                f"{', '.join(learning.no_grad_modules[:5])} ran with gradients disabled "
                "(torch.no_grad()) inside the training forward, though an optimizer holds "
                "their parameters: they never receive a gradient"
            ],
        )
    if not learning.no_gradient or not learning.optimized_elements:
        return None
    cut = sum(n.parameters for n in learning.no_gradient)
    share = cut / learning.optimized_elements
    if share < 0.1:
        return None
    return Symptom(
        id="gradient-flow-cut",
        confidence=0.85 if share >= 0.5 else 0.6,
        evidence=[
            f"{_modules(learning.no_gradient)} ran in every checked forward but their "
            f"parameters ({share:.0%} of what the optimizers hold) never received a gradient: "
            "their output reaches the loss only through .detach(), .data, a no_grad block or "
            "a conversion that leaves the graph"
        ],
    )


def probabilities_into_logits(learning: Learning, report: Report) -> Symptom | None:
    for loss in learning.losses:
        made_by = loss.producer in ("softmax", "sigmoid")
        if not made_by:
            continue
        source = f"the output of {loss.producer}"
        expects = "log-probabilities" if loss.function == "nll_loss" else "raw logits"
        return Symptom(
            id="probabilities-into-logit-loss",
            confidence=0.9,
            evidence=[
                f"{loss.function} was given {source}{_at(loss.location)}, but it expects "
                f"{expects} and applies the (log-)softmax itself: the gradients are squashed "
                "and the loss can barely fall"
            ],
        )
    return None


def target_broadcast(learning: Learning, report: Report) -> Symptom | None:
    for loss in learning.losses:
        if loss.broadcast:
            return Symptom(
                id="target-shape-broadcast",
                confidence=0.9,
                evidence=[
                    f"{loss.function}'s input of shape {tuple(loss.input_shape)} was broadcast "
                    f"to {tuple(loss.broadcast_shape)} against a target of another shape"
                    f"{_at(loss.location)}: every prediction is compared with every target, "
                    "so the loss cannot fit them"
                ],
            )
    return None


def out_of_reach(learning: Learning) -> tuple[LossInput, float, float] | None:
    """The regression loss whose input a bounded activation made (sigmoid, tanh) while its
    targets lie outside that activation's range (beyond 5% of its width), with the range."""
    for loss in learning.losses:
        bounds = OUTPUT_RANGE.get(loss.output_activation or "")
        if bounds is None or loss.target_min is None or loss.target_max is None:
            continue
        low, high = bounds
        slack = 0.05 * (high - low)
        if loss.target_max > high + slack or loss.target_min < low - slack:
            return loss, low, high
    return None


def saturated_only_output(learning: Learning) -> bool:
    """The only saturated tanh/sigmoid is the model's output: the one module of the kind that
    made a regression loss's input."""
    found = out_of_reach(learning)
    if found is None:
        return False
    kind = found[0].output_activation
    flat = [a for a in learning.activations if a.kind != "relu" and a.share >= SATURATED_SHARE]
    alike = [a for a in learning.activations if a.kind == kind]
    return len(flat) == 1 and flat[0].kind == kind and len(alike) == 1


def output_out_of_reach(learning: Learning, report: Report) -> Symptom | None:
    """A sigmoid or tanh output fitted to targets outside its range: the loss can fall only to
    where the output sits at the range's edge, and the activation saturates there."""
    found = out_of_reach(learning)
    if found is None:
        return None
    loss, low, high = found
    outside = loss.target_min >= high or loss.target_max <= low  # type: ignore[operator]
    return Symptom(
        id="output-range-excludes-targets",
        confidence=0.9 if outside else 0.75,
        evidence=[
            f"{loss.function} was given the output of {loss.output_activation}, which lies in "
            f"({num(low)}, {num(high)}), but its targets range over [{num(loss.target_min)}, "
            f"{num(loss.target_max)}]{_at(loss.location)}: no weight brings the output to "
            f"them, so the {loss.output_activation} is driven into its flat tail"
        ],
    )


def misplaced_classes(learning: Learning, report: Report) -> Symptom | None:
    for loss in learning.losses:
        if loss.misplaced_classes:
            shape = tuple(loss.input_shape)
            return Symptom(
                id="class-axis-misplaced",
                confidence=0.85,
                evidence=[
                    f"{loss.function} got an input of shape {shape}: it reads the classes from "
                    f"dim 1 (size {shape[1]}), but a linear layer made the last dim (size "
                    f"{shape[-1]}), the scores per class; the other axis is used as the classes"
                ],
            )
    return None


def eval_mode(learning: Learning, report: Report) -> Symptom | None:
    if learning.mode_checked < 3 or learning.eval_mode < learning.mode_checked:
        return None
    names = ", ".join(learning.eval_modules[:3])
    return Symptom(
        id="model-in-eval-mode",
        confidence=0.85,
        evidence=[
            f"{names} was in eval mode on all {learning.mode_checked} training passes checked: "
            "dropout is off and batch norm uses (and never updates) its running statistics"
        ],
    )


# -- curves --------------------------------------------------------------------------------


def schedule_collapse(learning: Learning, report: Report) -> Symptom | None:
    lrs = [row.lr for row in report.history if row.lr is not None]
    if len(lrs) < 10:
        return None
    top = max(range(len(lrs)), key=lambda i: lrs[i])
    peak = lrs[top]
    if peak <= 0:
        return None
    low = next((i for i in range(top, len(lrs)) if lrs[i] <= peak * 1e-4), None)
    if low is None or low > len(lrs) // 2 or max(lrs[low:]) > peak * 1e-3:
        return None
    return Symptom(
        id="lr-schedule-collapse",
        confidence=_by_length(0.85, len(lrs)),
        evidence=[
            f"the lr fell from {num(peak)} to {num(lrs[low])} by step {low} of {len(lrs)} and "
            f"stayed there (last {num(lrs[-1])}): most of the run trained with no step size "
            "(a scheduler stepped per batch where it meant per epoch, or a too-short period)"
        ],
    )


def unnormalized(learning: Learning, report: Report) -> Symptom | None:
    if learning.input_mean is None or learning.input_std is None:
        return None
    spread = max(abs(learning.input_mean), learning.input_std)
    if spread < 20:
        return None
    ratio = _loss_ratio(learning, report)
    if ratio is None:
        return None
    # a loss that ends at the chance level learned nothing, however far it fell from the
    # spike raw inputs give the first steps
    at_chance = _ends_at_chance(learning, report)
    if ratio <= LEARNED_RATIO and at_chance is None:
        return None  # the run learns from these inputs (polynomial features, say): let it be
    base = 0.85 if ratio > 0.9 or at_chance else 0.6
    outcome = at_chance or f"the loss went only to {ratio:.0%} of where it started"
    return Symptom(
        id="unnormalized-inputs",
        confidence=_by_length(base, len(loss_curve(learning, report))),
        evidence=[
            f"the input of {learning.input_module} has mean {num(learning.input_mean)}, std "
            f"{num(learning.input_std)} and range [{num(learning.input_min)}, "
            f"{num(learning.input_max)}] (raw values, e.g. 0-255 pixels); {outcome}"
        ],
    )


def _ends_at_chance(learning: Learning, report: Report) -> str | None:
    """In words, a classification loss whose last quarter averages at or above 0.9 x ln(C)."""
    level = chance_level(learning)
    curve = loss_curve(learning, report)
    if level is None or len(curve) < MIN_CURVE:
        return None
    tail = curve[-max(5, len(curve) // 4) :]
    end = sum(tail) / len(tail)
    if end < 0.9 * level[1]:
        return None
    return (
        f"the loss ended at {num(end)}, not below the chance level ln({level[0]}) = {num(level[1])}"
    )


def constant_inputs(learning: Learning, report: Report) -> Symptom | None:
    """Every batch the first layer read was one number repeated: the data was erased before
    the model (features cast to an integer type that truncated them to 0, a mask multiplied
    in, a wrong column read), so no weight can relate input to target."""
    if not learning.input_constant:
        return None
    stalled = _stalled(learning, report)
    if stalled is None:
        return None
    return Symptom(
        id="constant-inputs",
        confidence=_by_length(0.9, len(loss_curve(learning, report))),
        evidence=[
            f"every input batch {learning.input_module} read holds the one value "
            f"{num(learning.input_mean)} in every element: the data carries nothing the model "
            f"could learn from; {stalled}"
        ],
    )


def chance_level(learning: Learning) -> tuple[int, float] | None:
    """The classes of the run's classification loss and the loss of a uniform guess, ln(C)."""
    classes = next((x.classes for x in learning.losses if x.classes and x.classes >= 2), None)
    return None if classes is None else (classes, math.log(classes))


def loss_curve(learning: Learning, report: Report) -> list[float]:
    """The finite losses of the run, a value per optimizer step (per backward pass when it
    took none); the rows that summarise a long run's middle are left out."""
    losses = [row.loss for row in report.history if row.loss is not None and row.summary is None]
    if not losses:
        losses = learning.loss_series
    return [x for x in losses if math.isfinite(x)]


def at_chance(learning: Learning, report: Report) -> Symptom | None:
    level = chance_level(learning)
    curve = loss_curve(learning, report)
    if level is None or len(curve) < MIN_CURVE:
        return None
    classes, chance = level
    tail = curve[-max(5, len(curve) // 4) :]
    if min(_smoothed(curve)) < 0.85 * chance or sum(tail) / len(tail) < 0.9 * chance:
        return None
    if sum(tail) / len(tail) > ABOVE_CHANCE * chance:
        return None  # worse than a uniform guess: the model is confidently wrong, not lost
    if learning.weight_change is not None and learning.weight_change < 1e-4:
        return None  # the weights did not move: that is lr-too-low's story
    return Symptom(
        id="loss-at-chance",
        confidence=_by_length(0.85, len(curve)),
        evidence=[
            f"the loss stayed at {num(sum(tail) / len(tail))} over the last {len(tail)} of "
            f"{len(curve)} steps, the chance level ln({classes}) = {num(chance)}, while the "
            f"weights moved {_moved(learning)}: the model cannot find any relation between "
            "inputs and labels"
        ],
    )


def lr_too_low(learning: Learning, report: Report) -> Symptom | None:
    """Updates too small to learn: the weights barely moved (under 1e-4 of their size), or
    the most lr the run used lies hundreds of times below the optimizer's usual one while the
    weights moved only a little (under 1e-2) and the loss did not fall."""
    change = learning.weight_change
    curve = loss_curve(learning, report)
    if change is None or len(curve) < MIN_CURVE:
        return None
    ratio = _loss_ratio(learning, report)
    # weights that moved less than a millionth of their size did not train: a loss that
    # still moved (batch to batch noise) says nothing against that
    still = change < 1e-6
    if ratio is None or (ratio < 0.97 and not still):
        return None
    lrs = [row.lr for row in report.history if row.lr is not None]
    # the most the schedule gave (a warmup starts far below what the user set)
    lr = f" at lr {num(max(lrs))} at most" if lrs else ""
    below = _far_below_usual(report, max(lrs) if lrs else None)
    if change >= 1e-4 and (below is None or change >= 1e-2):
        return None
    # a short curve weakens what the loss says, not what the weights say
    loss = (
        f"the loss stayed at {ratio:.0%} of its start"
        if ratio >= 0.97
        else f"the loss moved only as its batches differ ({ratio:.0%} of its start)"
    )
    evidence = [
        f"over {len(curve)} steps{lr} the weights moved {num(change)} of their size and "
        f"{loss}: the updates are too small to learn"
    ]
    if below is not None:
        evidence.append(below)
    base = 0.95 if change < 1e-6 else (0.85 if change < 1e-4 else 0.8)
    return Symptom(id="lr-too-low", confidence=_by_length(base, len(curve)), evidence=evidence)


def _far_below_usual(report: Report, most: float | None) -> str | None:
    """The run's most lr set against its optimizer's usual lr, in words, when it is at least
    ``FAR_BELOW`` times smaller; None otherwise or when either is unknown."""
    from diagnose.facts.heuristics import typical_lr  # the facts package imports this module

    name = (report.config.optimizer or "").rsplit(".", 1)[-1]
    usual, source = typical_lr(name.lower() or None)
    lr = most if most is not None else report.config.lr
    if usual is None or not isinstance(lr, int | float) or lr <= 0 or lr * FAR_BELOW > usual:
        return None
    return (
        f"lr {num(lr)} is {num(usual / lr)}x below {name}'s usual {num(usual)} ({source}): "
        "each update moves a weight by a tiny share of what it needs"
    )


def decay_too_strong(learning: Learning, report: Report) -> Symptom | None:
    """Weight decay so strong that it pulls the weights to 0 faster than the gradients move
    them: lr x weight_decay of a decoupled decay (AdamW) or SGD's at 1% per step or more, a
    coupled decay of an adaptive optimizer (Adam's ``weight_decay``) of 1 or more."""
    stalled = _stalled(learning, report)
    if stalled is None:
        return None
    worst: tuple[float, str] | None = None
    for optimizer in report.config.optimizers or []:
        name = optimizer.name or "the optimizer"
        for group in optimizer.param_groups or []:
            wd, lr = _positive(group.weight_decay), decay_lr(group, report)
            if wd is None or lr is None:
                continue
            decoupled = name == "AdamW" or (group.model_extra or {}).get("decoupled_weight_decay")
            if decoupled or name not in ADAPTIVE:
                rate = lr * wd
                if rate >= STRONG_DECAY and (worst is None or rate > worst[0]):
                    kind = "decoupled decay" if decoupled else "an L2 term in the update"
                    worst = (
                        rate,
                        f"{name}'s weight_decay {num(wd)} at lr {num(lr)} takes {rate:.0%} of "
                        f"every weight's size off each step ({kind}: w -= lr * weight_decay * "
                        "w), faster than the gradients can build it up",
                    )
            elif wd >= STRONG_COUPLED and (worst is None or worst[0] < STRONG_DECAY):
                worst = (
                    STRONG_DECAY,
                    f"{name}'s coupled weight_decay {num(wd)} adds {num(wd)} x w to every "
                    "gradient before it is normalised, which outweighs the loss's own gradient "
                    "and pulls each weight to 0",
                )
    if worst is None:
        return None
    rate, why = worst
    return Symptom(
        id="weight-decay-too-strong",
        confidence=_by_length(_decay_strength(rate), len(loss_curve(learning, report))),
        evidence=[f"{why}; {stalled}"],
    )


def _decay_strength(rate: float) -> float:
    """How sure a decay that takes ``rate`` of each weight per step explains a flat loss: at
    half a weight per step or more the weights are gone within a few steps."""
    if rate >= 0.5:
        return 0.95
    return 0.85 if rate >= 5 * STRONG_DECAY else 0.7


def decay_lr(group: ParamGroup, report: Report) -> float | None:
    """The lr a group's weight decay was applied at, at its most: the group's lr at the
    snapshot, the lr it was built with (``initial_lr``: a schedule may have run it down to 0 by
    the end) or the most the run's history shows."""
    candidates = (group.lr, group.initial_lr, *(row.lr for row in report.history))
    found = [lr for lr in map(_positive, candidates) if lr is not None]
    return max(found) if found else None


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def dying_relus(learning: Learning, report: Report) -> Symptom | None:
    """ReLU layers mostly at exact zero while the loss does not fall; or a layer wholly dead
    while the first layer's gradient is exactly 0, which needs no curve: a loss that fell back
    after an early spike looks learned, but nothing before the dead layer can learn again."""
    dead = [a for a in learning.activations if a.kind == "relu" and a.share >= DEAD]
    if not dead:
        return None
    worst = max(dead, key=lambda a: a.share)
    names = ", ".join(f"{a.name} {a.share:.0%}" for a in dead[:4])
    seen = (
        f"share of exact zeros out of the ReLUs on the last check: {names} (a healthy ReLU "
        "gives about half): a unit at 0 passes no gradient, so it never recovers"
    )
    ratio = _stalled(learning, report)
    first = learning.first_grad
    if ratio is None and worst.share >= ALL_DEAD and first is not None and first.norm == 0:
        return Symptom(
            id="dying-relus",
            confidence=0.85,
            evidence=[
                f"{seen}; the first layer, {first.module}, got a gradient norm of exactly 0: "
                f"every unit of {worst.name} is dead, so no layer before it learns, whatever "
                "the loss did"
            ],
        )
    if ratio is None:
        return None
    return Symptom(
        id="dying-relus",
        confidence=_by_length(
            0.85 if worst.share >= 0.95 else 0.6, len(loss_curve(learning, report))
        ),
        evidence=[f"{seen}; {ratio}"],
    )


def saturated(learning: Learning, report: Report) -> Symptom | None:
    flat = [a for a in learning.activations if a.kind != "relu" and a.share >= SATURATED_SHARE]
    ratio = _stalled(learning, report)
    if not flat or ratio is None:
        return None
    names = ", ".join(f"{a.name} ({a.kind}) {a.share:.0%}" for a in flat[:4])
    base = 0.85 if max(a.share for a in flat) >= 0.75 else 0.65
    evidence = [
        f"share of inputs beyond +-5 on the last check: {names}: there tanh and sigmoid are "
        f"flat (derivative below 0.01), so almost no gradient passes them; {ratio}"
    ]
    if saturated_from_start(learning):
        first = ", ".join(f"{a.name} {a.first_share:.0%}" for a in flat[:4] if a.first_share)
        evidence.append(
            f"they were saturated from the first check ({first}): the initial weights put "
            "them there, before any update could"
        )
    return Symptom(
        id="saturated-activations",
        confidence=_by_length(base, len(loss_curve(learning, report))),
        evidence=evidence,
    )


def saturated_from_start(learning: Learning) -> bool:
    """Every saturated tanh/sigmoid was already saturated at the first check: the init's doing."""
    flat = [a for a in learning.activations if a.kind != "relu" and a.share >= SATURATED_SHARE]
    return bool(flat) and all(
        a.first_share is not None and a.first_share >= SATURATED_SHARE for a in flat
    )


def vanishing(learning: Learning, report: Report) -> Symptom | None:
    first, last = learning.first_grad, learning.last_grad
    ratio = _stalled(learning, report)
    if first is None or last is None or last.norm <= 0 or ratio is None:
        return None
    fraction = first.norm / last.norm
    if fraction >= VANISHED:
        return None
    orders = math.log10(1 / fraction) if fraction > 0 else math.inf
    return Symptom(
        id="vanishing-gradients",
        confidence=_by_length(0.85 if orders >= 5 else 0.65, len(loss_curve(learning, report))),
        evidence=[
            f"on the last checked step the first layer, {first.module}, got a gradient norm of "
            f"{num(first.norm)}, the last, {last.module}, {num(last.norm)}: "
            f"{'none' if fraction == 0 else num(orders) + ' orders of magnitude less'} reaches "
            f"the input side, whose layers barely learn; {ratio}"
        ],
    )


def _stalled(learning: Learning, report: Report) -> str | None:
    """How the loss shows the run did not learn: it stayed within 10% of its start, or ended
    at or above the chance level; None for a run that learns."""
    ratio = _loss_ratio(learning, report)
    if ratio is None or ratio >= 0.9:
        return None if ratio is None else f"the loss stayed at {ratio:.0%} of its start"
    level = chance_level(learning)
    curve = loss_curve(learning, report)
    tail = curve[-max(5, len(curve) // 4) :]
    end = sum(tail) / len(tail)
    if level is not None and end >= 0.9 * level[1]:
        return f"the loss ended at {num(end)}, not below the chance level ln({level[0]}) = {num(level[1])}"
    return None


ACTIVITY: list[Detector] = [dying_relus, saturated]


STRUCTURAL: list[Detector] = [
    without_step,
    calls_out_of_order,
    clipped_to_zero,
    never_cleared,
    unregistered,
    not_in_optimizer,
    graph_cut,
    probabilities_into_logits,
    target_broadcast,
    output_out_of_reach,
    misplaced_classes,
    eval_mode,
]
CURVE_INDEPENDENT: list[Detector] = [schedule_collapse]


# -- helpers -------------------------------------------------------------------------------


def _loss_ratio(learning: Learning, report: Report) -> float | None:
    curve = loss_curve(learning, report)
    if len(curve) < MIN_CURVE:
        return None
    span = max(3, len(curve) // 10)
    head, tail = sum(curve[:span]) / span, sum(curve[-span:]) / span
    if head <= 0:
        return None
    return tail / head


def _smoothed(curve: list[float]) -> list[float]:
    """Means over windows of a tenth of the run: a batch's noise is not a trend."""
    width = max(3, len(curve) // 10)
    return [sum(curve[i : i + width]) / width for i in range(0, len(curve) - width + 1, width)]


def _by_length(confidence: float, points: int) -> float:
    """A short run shows a trend less surely than a long one."""
    if points >= FULL_CURVE:
        return confidence
    return round(confidence * (0.7 + 0.3 * points / FULL_CURVE), 2)


def _grad_growth(report: Report) -> str | None:
    norms = [r.grad_norm for r in report.history if r.grad_norm is not None and r.grad_norm > 0]
    if len(norms) < 4 or norms[-1] < 2 * norms[0]:
        return None
    return f"the gradient norm grew from {num(norms[0])} to {num(norms[-1])} over the run"


def _modules(notes: list[ModuleNote]) -> str:
    names = ", ".join(n.name for n in notes[:4])
    more = f" and {len(notes) - 4} more" if len(notes) > 4 else ""
    total = sum(n.parameters for n in notes)
    return f"{names}{more} ({total:,} parameters)"


def _moved(learning: Learning) -> str:
    change = learning.weight_change
    return "normally" if change is None else f"{num(change)} of their size"


def _at(location: object) -> str:
    file = getattr(location, "file", None)
    return f" at {file}:{location.line}" if file else ""  # type: ignore[attr-defined]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
