"""backward-through-graph-twice: backward reached a graph an earlier backward had freed.

Read from the training loop's frame and its source: a name the loop carries from one
iteration to the next (an RNN's hidden state, a memory) whose value still has a grad_fn is
the state to detach where the loop passes it on; a tensor with a graph made once before the
loop and used in every iteration, or a second backward over one loss, is named instead.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.crash.flow import backward_calls, carried, enclosing_loop, read_only
from diagnose.crash.live import Scene, parse, source_line
from diagnose.crash.origin import assignment_line
from diagnose.report import Crash, CrashEdit, CrashSite

FAMILY = "backward-through-graph-twice"
_PATTERN = re.compile(r"Trying to backward through the graph a second time")


def matches(message: str) -> bool:
    return bool(_PATTERN.search(message))


def _graph_kind(value: Any) -> str | None:
    """ "tensor" or "tuple" for a value holding a graph (a grad_fn), else None."""
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor" if value.grad_fn is not None else None
    tensors = (
        isinstance(value, tuple | list)
        and value
        and all(isinstance(v, torch.Tensor) for v in value)
    )
    if tensors and any(v.grad_fn is not None for v in value):
        return "tuple"
    return None


def explain(scene: Scene) -> Crash:
    crash = Crash(family=FAMILY, chain=scene.chain())
    frames = scene.user_frames()
    for frame, line in reversed(frames):
        file = frame.f_code.co_filename
        tree = parse(file)
        loop = enclosing_loop(tree, line) if tree is not None else None
        if loop is None:
            continue
        for name, stmt in carried(loop).items():
            kind = _graph_kind(frame.f_locals.get(name))
            if kind is None:
                continue
            crash.sites.append(
                CrashSite(
                    role="carried",
                    file=file,
                    line=stmt.lineno,
                    function=frame.f_code.co_name,
                    code=source_line(file, stmt.lineno),
                    what=f"`{name}` is carried into the next step with its graph",
                )
            )
            crash.evidence.append(
                f"`{name}` is handed from one iteration of the loop on line {loop.lineno} to the "
                f"next and still has a grad_fn: the second step's backward goes back into the "
                "first step's graph, which its backward freed"
            )
            crash.edit = CrashEdit(
                kind="detach", file=file, line=stmt.lineno, target=name, value=kind
            )
            return crash
        for name in sorted(read_only(loop)):
            kind = _graph_kind(frame.f_locals.get(name))
            made = assignment_line(frame, name, loop.lineno) if kind else None
            if made is None:
                continue
            crash.sites.append(
                CrashSite(
                    role="carried",
                    file=file,
                    line=made,
                    code=source_line(file, made),
                    what=f"`{name}` is made once, with its graph, before the loop",
                )
            )
            crash.evidence.append(
                f"`{name}` was computed once before the loop on line {loop.lineno} and every step's "
                "loss goes back through it: compute it inside the loop, or detach it if it is not "
                "to be trained"
            )
            return crash
        calls = backward_calls(loop.body)
        if len(calls) > 1:
            crash.sites.append(
                CrashSite(
                    role="carried",
                    file=file,
                    line=calls[0],
                    code=source_line(file, calls[0]),
                    what="an earlier backward over the same graph",
                )
            )
            crash.evidence.append(
                f"the loop calls backward on lines {', '.join(map(str, calls))}: the first frees the "
                "graph the second needs; add the losses and call backward once"
            )
            return crash
        crash.checked.append(
            f"the loop on line {loop.lineno} carries no tensor with a graph into the next step"
        )
        return crash
    crash.checked.append("backward was not called inside a loop of the user's code")
    return crash
