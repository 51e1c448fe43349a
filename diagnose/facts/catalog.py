"""The documented facts: name -> meaning. Rules may only read facts listed here (or symptom.*).

Kept as data next to the code that computes them; ``docs/rules.md`` prints this table, and a
test checks that every fact ``extract_facts`` can produce is listed.
"""

from __future__ import annotations

FACTS: dict[str, str] = {
    "status": '"clean", "nonfinite", "exception", "interrupted" or "untrained": the report\'s '
    "status",
    # the event
    "event.kind": '"nonfinite" or "exception"',
    "event.phase": '"input", "forward", "loss", "backward", "optimizer" (where the event was born)',
    "event.step": "optimizer steps completed before the event (0: before the first update)",
    "event.module": "qualified name of the module that produced the value",
    "event.module_type": 'class of that module, e.g. "Linear"',
    "event.op": "the torch op that produced the value, as the tracer named it",
    "event.op_base": 'that op normalised: lower case, no "aten::", no overload, no "Backward0"',
    "event.op_family": 'hazard family of the op: "log", "div", "sqrt", "exp", "pow", "reduce", '
    '"cross_entropy" (see rules/_heuristics.yaml)',
    "event.in_backward": "true when the value was born in the backward pass",
    "event.dtype": 'dtype of the value, normalised ("float16", "bfloat16", "float32", ...)',
    "event.value": '"nan", "inf", "-inf" or a mix such as "nan+inf"',
    "event.op_value": 'what the producing op itself returned ("-inf" from log(0)) when the '
    "tracer recorded it; event.value is what reached the loss, a gradient or an output",
    "event.has_nan": "the event value includes nan",
    "event.has_inf": "the event value includes +inf or -inf",
    "event.message": "the event's message (for exceptions: the exception text)",
    "event.exception_type": "class name of the exception the script raised",
    "event.anomaly": "the exception is autograd's detect_anomaly error naming a backward op",
    "event.location": '"file:line" of the user\'s own code where the value was born',
    "event.input_role": 'for phase "input": "targets" when the bad tensor is the targets/labels, '
    'else "inputs"',
    "event.sample_count": "number of dataset samples found holding non-finite values",
    # the producer as a second method saw it (event.cross_check)
    "cross_check.method": 'how the producer was confirmed ("anomaly-mode replay", '
    '"float64 replay of the op")',
    "cross_check.agreed": "the first method named the same producer (null: not confirmed)",
    # what a reducing producer (matmul, linear, conv, attention) accumulated
    "accumulation.op": "the reducing op whose result was recomputed in float64",
    "accumulation.compute_dtype": "the dtype that op computed in",
    "accumulation.terms": "products summed into each of its output values (K)",
    "accumulation.bound": "max|a| * max|b| * K: the most an output value could reach",
    "accumulation.max_abs": "its largest |result| recomputed in float64",
    "accumulation.ratio": "that largest |result| over the compute dtype's largest value "
    "(1 or more: the accumulation overflowed the dtype, whatever the inputs' headroom)",
    "accumulation.attention": "its result went on to a softmax: attention scores",
    "accumulation.scaled_after": "a scale was applied to its result only after the product",
    # the producing op's inputs
    "op_input.count": "number of inputs of the producing op with statistics",
    "op_input.min_abs": "smallest |x| over the op's inputs (0 means a zero was there)",
    "op_input.max_abs": "largest |x| over the op's inputs",
    "op_input.min": "smallest signed value over the op's inputs, when the tracer records signs",
    "op_input.has_zero": "an input of the op holds 0 (null: unknown)",
    "op_input.has_negative": "an input of the op holds a negative number (null: unknown)",
    "op_input.nonfinite": "an input of the op was already non-finite",
    "producer_frame.input_nonfinite": "an input of the module call flagged as the producer "
    "was already non-finite",
    "op_input.divisor_has_zero": "the second input (the divisor of a division) holds 0",
    "op_input.divisor_min_abs": "smallest |x| of the divisor",
    "op_input.number_beyond_dtype": "a plain number given to the op (x * 1e39, a fill value) "
    "that its dtype cannot hold: the one farthest out",
    "op_input.number_dtype": "the dtype the op computed in, that number is beyond",
    "op_input.number_dtype_max": "the largest finite value of that dtype",
    "op_input.eps_lost": "a small positive number (an eps) added to an input of the op that "
    "is 0 in the op's dtype, so that input still held 0",
    "op_input.eps_op": "the op that was given that eps (add, clamp, ...)",
    "op_input.eps_dtype": "the dtype in which the eps is 0",
    "op_input.eps_dtype_smallest": "the smallest positive value of that dtype",
    "op_input.eps_line": "the line of the script that added the eps",
    # the training config
    "precision": 'training precision: "fp32", "fp16", "bf16", "fp16-autocast", "bf16-autocast", '
    '"mixed" or "unknown"',
    "precision.fp16": "the run computes in float16 (pure or autocast), or the event was in fp16",
    "precision.low": "the run computes in float16 or bfloat16",
    "optimizer": 'optimizer class name, e.g. "AdamW"',
    "optimizer.key": 'the optimizer class name in lower case, e.g. "adamw"',
    "optimizer.adam_family": "the optimizer divides by sqrt(second moment) + eps (Adam, RMSprop, ...)",
    "lr": "learning rate the user set (config, else first param group, else first step's)",
    "lr.typical": "usual lr for that optimizer (rules/_heuristics.yaml: defaults and heuristics)",
    "lr.typical_source": "where lr.typical comes from (a torch default, or a labelled heuristic)",
    "lr_vs_typical": "lr / lr.typical",
    "lr.run_max": "the most lr the run used (the history's largest, else lr)",
    "lr.run_max_vs_typical": "lr.run_max / lr.typical",
    "learning.trainable_elements": "elements the optimizers hold that require grad (on the "
    "checked steps)",
    "learning.weight_change": "relative change of the sampled weights over the run",
    "learning.output_out_of_reach": "a regression loss's input came from a sigmoid/tanh whose "
    "range excludes its targets",
    "learning.saturated_only_output": "the only saturated tanh/sigmoid is that output activation",
    "learning.saturated_from_start": "every saturated tanh/sigmoid was saturated at the first "
    "check already (the init put it there)",
    "lr_scheduler": "name of the lr scheduler, when one was seen",
    "lr.varies": "the lr changed over the recorded steps (a scheduler or a hand-written one)",
    "lr.warmup": "the lr rose over the first steps (seen in the history), or the framework "
    "was set to warm up",
    "lr.warmup_steps": "steps the lr kept rising from the start (None: no warmup seen)",
    "lr.usual": "the usual lr for the run: the framework's or the script's default, else the "
    "optimizer's",
    "lr.usual_source": "where lr.usual comes from",
    "lr.user": "the lr the user set (the optimizer's first lr, not a scheduled one)",
    "lr_vs_usual": "the lr the user set / lr.usual",
    "grad_clip.enabled": "gradient clipping was seen in the run",
    "grad_scaler.configured": "a framework was set to scale the loss (TrainingArguments "
    "fp16=True, Lightning precision 16-mixed)",
    "grad_clip.configured": "a framework was set to clip (TrainingArguments.max_grad_norm, "
    "Lightning gradient_clip_val > 0)",
    "grad_clip.kind": '"norm" or "value"',
    "grad_clip.max": "the clipping threshold",
    "grad_scaler": "a torch.amp GradScaler is used",
    "scaler.clip_before_unscale": "under a GradScaler, gradients are clipped before unscale_",
    "config.captured": "the run's optimizer or lr was captured (false: config unknown)",
    "adam.eps": "eps of an Adam-family optimizer (recorded, else the optimizer's default)",
    "adam.eps_known": "adam.eps was recorded from the run (false: the default is assumed)",
    "adam.eps_in_fp16": "adam.eps once rounded to float16 (1e-8 becomes 0)",
    "adam.eps_underflows": "weights are pure fp16 and adam.eps rounds to 0 there",
    # the step history
    "history.steps": "number of optimizer steps recorded",
    "loss.first": "first finite loss of the trend window (the last few steps)",
    "loss.last": "last finite loss before the event",
    "loss.max_abs": "largest finite |loss| of the run",
    "run.loss_start": "smallest loss of the run's first 3 steps (runs of 6 steps or more)",
    "run.loss_end": "median loss of the run's last 3 steps",
    "run.loss_growth": "1 + (run.loss_end - run.loss_start) / |run.loss_start|: growth of the "
    "signed loss over the whole run (run.loss_end / run.loss_start for a positive start; below "
    "1 for a loss that fell, into the negatives too)",
    "loss.fp16_ratio": "loss.max_abs / 65504 when the run computes in fp16",
    "loss_trend": "growth of the signed loss over the trend window (last / first for a "
    "positive first; 1 + (last - first) / |first| in general)",
    "loss.rising_steps": "steps in a row, up to the event, where the loss rose by 10% or more",
    "loss.last_jump": "one step's growth of the signed loss (last / the loss before it for a "
    "positive one)",
    "loss.points": "finite losses in the trend window",
    "grad_norm.first": "first finite gradient norm of the trend window",
    "grad_norm.last": "last finite gradient norm before the event",
    "grad_norm.max": "largest gradient norm of the trend window",
    "grad_norm.run_max": "largest finite gradient norm of the whole run",
    "grad_norm_growth": "growth factor of the gradient norm over the trend window",
    "grad_norm.rising_steps": "steps in a row, up to the event, where the gradient norm rose by "
    "10% or more",
    "grad_norm.last_jump": "last gradient norm / the one before it: one step's growth",
    "grad_norm.points": "finite gradient norms in the trend window",
    "grad_norm.nonfinite": "a recorded gradient norm was inf or nan",
    "weight_norm_growth": "growth factor of the weight norm over the trend window (if recorded)",
    "update_ratio.max": "largest |update| / |weight| over the trend window (if recorded)",
    "loss_scale.first": "first GradScaler scale recorded",
    "loss_scale.last": "last GradScaler scale recorded",
    "loss_scale.min": "smallest GradScaler scale recorded",
    "loss_scale.drop": "largest scale / last scale",
    "skipped_steps": "steps a GradScaler skipped",
    "skipped.consecutive_at_end": "skipped steps in a row at the end of the history",
    # activations and weights
    "dtype.max_abs_ratio": "largest finite |activation| before the event / its dtype's max",
    "activation.max_abs": "that largest finite |activation|",
    "activation.dtype": "its dtype",
    "activation.module": "the module whose output held it",
    "activation.steps_before_event": "how many steps before the event it was seen",
    "activation.near_limit_count": "tensors seen at >= 50% of their dtype's max (or flagged)",
    "weights.max_abs": "largest finite |weight| seen in the frames",
    "weights.nonfinite": "a weight seen in the frames was inf or nan",
    "weights.at_start": "the event came before the first optimizer update was applied",
    # classification losses
    "loss.is_cross_entropy": "the producing op or module is cross-entropy / NLL",
    "targets.ignore_index": "ignore_index of that loss (-100 unless recorded)",
    "targets.all_ignored": "every target equals ignore_index (null: unknown)",
    "targets.count": "number of class targets fed to the loss op (when the tracer counted them)",
    "targets.ignored_count": "how many of those equal ignore_index",
    # an op's own arguments (diagnose/facts/mechanisms.py)
    "op_input.infinite_number": "the op was given an infinity as a plain number (a -inf fill)",
    "ctc.infeasible_count": "samples of the ctc_loss whose input is shorter than their target needs",
    "ctc.sample": "the first such sample's position in the batch",
    "ctc.input_length": "its input frames",
    "ctc.target_length": "its target symbols",
    "ctc.needed": "frames its alignment needs (symbols plus a blank between repeats)",
    # a crash explained from the live run (event.crash)
    "crash.family": 'the symptom the exception belongs to ("shape-mismatch", "dtype-mismatch", ...)',
    "crash.explained": "the run showed the cause (a module, a line, an edit), not the message alone",
    "crash.module_type": 'class of the module that raised, e.g. "Linear"',
    "crash.edit": 'the one change the run found ("layer-size", "out-of-place", "inplace-flag", '
    '"detach", "cast")',
    "crash.sites": 'roles of the lines the run pointed at ("built", "saved", "modified", ...)',
    "mask.rows_all_inf": "rows of a softmax's input that are -inf everywhere",
    "mask.rows_total": "rows of that input along the softmax's dim",
    "mask.first_row": "the first such row's index over the other dims (batch first)",
    "mask.softmax_op": "that softmax op",
    "mask.softmax_line": "its line in the script",
    "batch_cast.input": "the tensor a cast made inf though the loader gave it finite",
    "batch_cast.source_dtype": "the dtype the loader gave that tensor in",
    "batch_cast.dtype": "the narrower dtype it was cast to (where it became inf)",
    "batch_cast.max_abs": "the largest |x| of the overflowing rows as the loader gave them",
}
