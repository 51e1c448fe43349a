"""enable-grad-clipping and unscale-before-clipping: clip after ``backward()``, unscaled.

Under Lightning the Trainer runs backward and clips by its own ``gradient_clip_val``: that
argument is set instead (``trainer_settings``).

The clip goes right after each ``....backward()`` statement, on the parameters the optimizer was
built with (spelled as the script spells them); under a GradScaler, ``scaler.unscale_(opt)``
comes first so that the threshold applies to the true gradients.
"""

from __future__ import annotations

import re

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.settings import change_setting, origin_of
from diagnose.patches.source import NoPatch, code_of, dotted, number
from diagnose.patches.trainer_settings import add_trainer_argument
from diagnose.trainconfig import Origin

MAX_NORM = "1.0"
MANUAL_OPTIMIZATION = re.compile(r"\bautomatic_optimization\s*=\s*False\b")
CLIP_NAMES = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")


@patcher("enable-grad-clipping")
def enable_grad_clipping(ctx: PatchContext) -> Patched:
    """Turn on the clipping the run switched off where it did (a flag, a config file, a
    framework argument: a limit of 0), or lower a limit that never acted to one that does;
    under Lightning, give the Trainer ``gradient_clip_val`` where it got its other arguments;
    else insert a clip after each backward()."""
    origin = origin_of(ctx, "grad_clip.max")
    if origin is not None and isinstance(origin.value, (int, float)) and origin.value <= 0:
        return change_setting(ctx, origin, _restored_limit(ctx, origin), "the clipping limit")
    if origin is not None and ctx.report.facts.get("symptom.clip-never-acts"):
        return change_setting(ctx, origin, _acting_limit(ctx, origin), "the clipping limit")
    script = ctx.script
    existing = script.calls(*CLIP_NAMES)
    if existing:
        raise NoPatch(
            f"the script already clips gradients on line {script.line(existing[0])}: "
            "lower its threshold instead"
        )
    if ctx.report.config.lightning is not None:
        if MANUAL_OPTIMIZATION.search(script.source):
            raise NoPatch(
                "the LightningModule optimizes by hand (automatic_optimization = False): "
                f"call self.clip_gradients(optimizer, gradient_clip_val={MAX_NORM}) "
                "before its optimizer step"
            )
        return add_trainer_argument(ctx, "gradient_clip_val", float(MAX_NORM))
    backwards = _backward_statements(ctx)
    optimizer, params = _optimizer_and_params(ctx)
    clip = f"{_utils(ctx)}.clip_grad_norm_({params}, {MAX_NORM})"
    edit = ctx.edit()
    for stmt, scaler in backwards:
        lines = [clip] if scaler is None else [f"{scaler}.unscale_({optimizer})", clip]
        edit.insert_after(stmt, *lines)
    note = f"clips the gradient norm at {MAX_NORM} after backward()"
    if any(scaler for _, scaler in backwards):
        note += ", after unscaling them from the GradScaler"
    return Patched(edit.result(), note)


@patcher("raise-clip-limit")
def raise_clip_limit(ctx: PatchContext) -> Patched:
    """A clip whose limit of 0 zeroes every gradient: where the run's 0 came from a flag or a
    config file, a limit there that lets the gradients through; a clip call whose limit is a
    literal 0 gets 1.0; one whose limit is a variable (a flag whose 0 means "off") runs only
    when that limit is above 0."""
    origin = origin_of(ctx, "grad_clip.max")
    if origin is not None and isinstance(origin.value, (int, float)) and origin.value <= 0:
        return change_setting(ctx, origin, _restored_limit(ctx, origin), "the clipping limit")
    script = ctx.script
    edit = ctx.edit()
    notes = []
    for call in script.calls(*CLIP_NAMES):
        limit = script.argument(call, 1, "max_norm", "clip_value")
        if limit is None:
            continue
        line = script.line(call)
        if number(limit) == 0:
            edit.replace(limit, MAX_NORM)
            notes.append(f"the clip on line {line} gets the limit {MAX_NORM} in place of 0")
            continue
        statement = script.statement_of(call)
        if number(limit) is None and statement is not None and _alone(statement, call):
            guard = cst.parse_statement(f"if {code_of(limit)} > 0:\n    pass\n")
            body = guard.body.with_changes(body=[statement])  # type: ignore[union-attr]
            edit.replace(statement, guard.with_changes(body=body))
            notes.append(f"the clip on line {line} runs only when {code_of(limit)} > 0")
    if not notes:
        raise NoPatch(
            "no clip call in the script takes its limit of 0 as a literal or a variable: give "
            f"it a limit above 0 (such as {MAX_NORM}) where it is set"
        )
    return Patched(edit.result(), "; ".join(notes))


def _alone(statement: cst.SimpleStatementLine, call: cst.Call) -> bool:
    """The clip call is the whole of its statement line (so the line can go under an if)."""
    only = statement.body[0] if len(statement.body) == 1 else None
    return isinstance(only, cst.Expr) and only.value is call


def _restored_limit(ctx: PatchContext, origin: Origin) -> float:
    """The limit to give back to a clip a token (or a file) set to 0: the script's own default
    of that flag, else the value the token replaced, else 1.0."""
    default = _flag_default(ctx, origin)
    if default is not None and default > 0:
        return default
    replaced = origin.overrides  # the limit the script had before a token switched it off
    if isinstance(replaced, (int, float)) and not isinstance(replaced, bool) and replaced > 0:
        return float(replaced)
    return float(MAX_NORM)


def _acting_limit(ctx: PatchContext, origin: Origin) -> float:
    """A clipping limit that acts: the script's own default of the flag a token raised (its
    author's choice), else 1.0."""
    value = float(origin.value) if isinstance(origin.value, (int, float)) else None
    default = _flag_default(ctx, origin) if value is not None else None
    if default is not None and 0 < default < value:
        return default
    return float(MAX_NORM)


def _flag_default(ctx: PatchContext, origin: Origin) -> float | None:
    """The script's own argparse default of the flag a command-line origin names."""
    from diagnose.patches.lr_size import script_flag_default

    if origin.kind != "argv" or not origin.key:
        return None
    return script_flag_default(ctx.report.script.path, origin.key.lstrip("-").replace("-", "_"))


@patcher("unscale-before-clipping")
def unscale_before_clipping(ctx: PatchContext) -> Patched:
    script = ctx.script
    clips = script.calls(*CLIP_NAMES)
    if not clips:
        raise NoPatch("no clip_grad_norm_/clip_grad_value_ call in the script")
    scalers = [s for _, s in _backward_statements(ctx) if s]
    if not scalers:
        raise NoPatch("no `scaler.scale(loss).backward()` in the script")
    optimizer, _ = _optimizer_and_params(ctx)
    if script.calls("unscale_"):
        raise NoPatch(
            f"the script already calls unscale_ (line "
            f"{script.line(script.calls('unscale_')[0])}): move it above the clip"
        )
    edit = ctx.edit()
    for clip in clips:
        stmt = script.small_statement_of(clip)
        if stmt is None:
            raise NoPatch(f"the clip on line {script.line(clip)} is not a statement of its own")
        edit.insert_before(stmt, f"{scalers[0]}.unscale_({optimizer})")
    return Patched(
        edit.result(),
        f"unscales the gradients before clipping them ({scalers[0]}.unscale_({optimizer}))",
    )


def _backward_statements(ctx: PatchContext) -> list[tuple[cst.BaseSmallStatement, str | None]]:
    """Each ``X.backward()`` statement (those that ran, when the run recorded them) and, for
    ``S.scale(loss).backward()``, the scaler S."""
    found = []
    ran = ctx.ran_at("backward")
    for call in ctx.script.calls("backward"):
        if not ctx.script.is_own_statement(call):
            continue
        if ran and not set(ctx.script.lines(call)) & set(ran):
            continue
        stmt = ctx.script.small_statement_of(call)
        receiver = call.func.value
        scaler = None
        if (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Attribute)
            and (receiver.func.attr.value == "scale")
        ):
            scaler = dotted(receiver.func.value)
        found.append((stmt, scaler))
    if not found:
        raise NoPatch("no `loss.backward()` statement in the script")
    return found


def _optimizer_and_params(ctx: PatchContext) -> tuple[str, str]:
    """The optimizer's variable and the script's expression for the parameters it trains."""
    script = ctx.script
    calls = script.optimizer_calls()
    if len(calls) != 1:
        raise NoPatch(
            "no single optimizer construction in the script to take the parameters from"
            if not calls
            else f"{len(calls)} optimizers are constructed: clip the "
            "parameters of the one that blew up"
        )
    call = calls[0]
    optimizer = script.assigned_name(call)
    if optimizer is None:
        raise NoPatch(f"the optimizer on line {script.line(call)} is not assigned to a name")
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    simple = first is not None and (
        isinstance(first, cst.Name | cst.Attribute)
        or (
            isinstance(first, cst.Call)
            and isinstance(first.func, cst.Attribute)
            and first.func.attr.value == "parameters"
            and not first.args
        )
    )
    params = (
        code_of(first)
        if simple
        else (f'[p for group in {optimizer}.param_groups for p in group["params"]]')
    )
    return optimizer, params


def _utils(ctx: PatchContext) -> str:
    """``torch.nn.utils`` as the script can spell it."""
    torch = ctx.script.imports_torch_as()
    if torch is not None:
        return f"{torch}.nn.utils"
    for node in ctx.script.nodes(cst.ImportFrom):
        if dotted(node.module) == "torch" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if alias.name.value == "nn":
                    return f"{alias.asname.name.value if alias.asname else 'nn'}.utils"
    raise NoPatch("the script imports neither torch nor torch.nn")
