"""ctc-zero-infinity: every ``nn.CTCLoss(...)`` / ``F.ctc_loss(...)`` call gets zero_infinity=True.

The loss object is usually built far from the line where the inf was caught (``loss =
ctc(log_probs, ...)``), so the script's CTC calls are patched wherever they are.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, dotted, with_keyword

_POSITION = {"CTCLoss": 2, "ctc_loss": 6}  # where zero_infinity sits among positional args


def _ctc_kind(call: cst.Call) -> str | None:
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return name if name in _POSITION else None


@patcher("ctc-zero-infinity")
def ctc_zero_infinity(ctx: PatchContext) -> Patched:
    calls = [c for c in ctx.script.nodes(cst.Call) if _ctc_kind(c) is not None]
    if not calls:
        raise NoPatch("no nn.CTCLoss(...) or F.ctc_loss(...) call in the script")
    edit = ctx.edit()
    lines = []
    for call in calls:
        keyword = ctx.script.keyword(call, "zero_infinity")
        positional = [a for a in call.args if a.keyword is None]
        at = _POSITION[_ctc_kind(call)]
        if keyword is not None:
            if code_of(keyword.value) == "True":
                continue
            edit.replace(keyword.value, "True")
        elif len(positional) > at:
            edit.replace(positional[at].value, "True")
        else:
            edit.replace(call, with_keyword(call, "zero_infinity", "True"))
        lines.append(str(ctx.script.line(call)))
    if not lines:
        raise NoPatch("every CTC call already sets zero_infinity=True")
    return Patched(
        edit.result(),
        f"zero_infinity=True on line {', '.join(lines)}: samples without an alignment get a "
        "loss and gradient of 0; dropping them from the data is better still",
    )
