"""Loop-level patches land in the loop that ran backward and step, never in a model's own loop."""

from __future__ import annotations

import textwrap

from diagnose.patches import make_patch
from diagnose.patches.checks import check_patch
from diagnose.patches.source import Edit, NoPatch, Script
from tests.patches.helpers import diff_body, patch, report_for

# the shape of pytorch/examples' time_sequence_prediction: LBFGS closure, a forward loop
LBFGS = """
    import torch
    class Sequence(torch.nn.Module):
        def forward(self, input):
            outputs = []
            for input_t in input.split(1, dim=1):
                outputs.append(self.cell(input_t))
            return torch.cat(outputs, dim=1)
    seq = Sequence()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
    for i in range(15):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss
        optimizer.step(closure)
"""


def _ran(script, **lines: list[int]) -> dict:
    kinds = ("backward", "step", "zero_grad")
    return {
        "training_calls": {
            k: [{"file": str(script), "line": n} for n in lines.get(k, [])] for k in kinds
        }
    }


def test_an_lbfgs_closure_loop_over_fixed_tensors_gets_no_guard_and_says_why(tmp_path):
    script = tmp_path / "train.py"
    result = patch(
        tmp_path,
        "sanitize-inputs",
        LBFGS,
        phase="input",
        line=6,  # the model's forward loop, where the nan met the first layer
        config=_ran(script, backward=[15], step=[17], zero_grad=[12]),
    )
    assert result.diff is None
    assert "the training loop on line 10 does not take its batches from a loader" in result.note


def test_without_a_run_record_the_source_places_the_loop_the_same_way(tmp_path):
    result = patch(tmp_path, "sanitize-inputs", LBFGS, phase="input", line=6)
    assert result.diff is None and "training loop on line 10" in result.note


def test_a_closure_inside_a_batch_loop_gets_the_guard_in_the_batch_loop(tmp_path):
    source = LBFGS.replace("for i in range(15):", "for input, target in loader:")
    script = tmp_path / "train.py"
    result = patch(
        tmp_path,
        "sanitize-inputs",
        source,
        phase="input",
        line=6,
        config=_ran(script, backward=[15], step=[17]),
    )
    assert diff_body(result) == [
        "+    if not all(torch.isfinite(t).all() for t in (input, target)):",
        "+        continue  # skip a batch with nan/inf values",
    ]
    assert result.new_source.splitlines()[9:11] == [
        "for input, target in loader:",
        "    if not all(torch.isfinite(t).all() for t in (input, target)):",
    ]


def test_the_recorded_lines_choose_between_two_batch_loops(tmp_path):
    source = """
        import torch
        for x, y in val_loader:
            model(x)
        for x, y in train_loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
        for x, y in test_loader:
            model(x).sum().backward()
    """
    script = tmp_path / "train.py"
    result = patch(tmp_path, "sanitize-inputs", source, config=_ran(script, backward=[6], step=[7]))
    assert result.new_source.splitlines()[3:5] == [
        "for x, y in train_loader:",
        "    if not all(torch.isfinite(t).all() for t in (x, y)):",
    ]
    unrecorded = patch(tmp_path, "sanitize-inputs", source)
    assert unrecorded.diff is None and "2 loops run training steps (lines 4, 8)" in unrecorded.note


def test_a_clip_in_a_closure_goes_right_after_its_backward(tmp_path):
    result = patch(tmp_path, "enable-grad-clipping", LBFGS)
    assert result.new_source.splitlines()[14:16] == [
        "        loss.backward()",
        "        torch.nn.utils.clip_grad_norm_(seq.parameters(), 1.0)",
    ]


def test_a_patch_that_would_not_compile_is_refused(tmp_path):
    script = Script("train.py", "x = 1\n")
    edit = Edit(script)
    edit.insert_after(script.module.body[0], "continue")
    new = edit.result()
    try:
        check_patch("train.py", "x = 1\n", new, [edit])
    except NoPatch as exc:
        assert "would not compile ('continue' not properly in loop at its line 2)" in str(exc)
    else:
        raise AssertionError("a `continue` outside any loop was accepted")


def test_a_patch_changing_lines_its_edits_did_not_declare_is_refused():
    old = textwrap.dedent(
        """
        a = 1
        b = 2
        c = 3
        """
    )
    script = Script("train.py", old)
    edit = Edit(script)
    edit.replace(script.module.body[0].body[0].value, "10")
    check_patch("train.py", old, edit.result(), [edit])  # what it declared: accepted
    tampered = edit.result().replace("c = 3", "c = 30")
    try:
        check_patch("train.py", old, tampered, [edit])
    except NoPatch as exc:
        assert "would change line(s) 4, outside the statements its fix edits" in str(exc)
    else:
        raise AssertionError("a change outside the declared edit was accepted")


def test_a_guard_the_checks_accept_is_shown_as_a_diff(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nfor x in loader:\n    loss.backward()\n")
    result = make_patch("sanitize-inputs", script, report_for(script))
    assert result.diff is not None, result.note
    compile(result.new_source, str(script), "exec")
