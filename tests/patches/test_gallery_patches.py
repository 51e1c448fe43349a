"""The expected fix's patch, applied to a copy of each gallery script, makes it train cleanly.

The event (its line and phase) is written by hand here, so that this holds independently of the
tracer; the patched copy then runs with plain Python and must print only finite losses.
"""

from __future__ import annotations

import math
import re

import pytest
import yaml

from diagnose.patches import PATCHERS, make_patch
from tests.conftest import EXAMPLES
from tests.forked import run_python
from tests.patches.helpers import report_for
from tests.patches.test_learning_gallery import LEARNING
from tests.test_gallery import CONFIG_PATCHED, PATCHED_AS_REPORTED

# script -> (code on the event's line, or None when the patch does not need it; phase)
EVENTS = {
    "fp16_overflow.py": (None, "forward"),
    "fp16_loss_overflow.py": ("loss = ((pred - images) ** 2).sum()", "loss"),
    "adam_eps_fp16.py": (None, "optimizer"),
    "sgd_high_lr.py": (None, "backward"),
    "functional_high_lr.py": (None, "forward"),
    "rnn_exploding_grads.py": (None, "backward"),
    "bad_init.py": (None, "forward"),
    "log_zero_loss.py": ("return -(t * torch.log(p)", "loss"),
    "zero_std_norm.py": ("z = (x - mu) / sigma", "forward"),
    "sqrt_zero_backward.py": (".sqrt()", "backward"),
    "exp_overflow_softmax.py": ("e = torch.exp(z)", "forward"),
    "nan_in_data.py": (None, "input"),
    "oneline_step_exploding_grads.py": (None, "forward"),
    "gpt2_all_labels_ignored.py": (None, "loss"),
    "fp16_mask_constant.py": ("* -1e9", "forward"),
    "fp16_eps_norm.py": ("+ 1e-8)", "forward"),
}
# the patch needs the dtype the op ran in
DTYPES = {"fp16_mask_constant.py": "float16", "fp16_eps_norm.py": "float16"}
# what the tracer records of the producing op when the patch needs more than its line: the
# division's divisor held 0 and was made by an add given 1e-8
EVENT_FIELDS = {
    "fp16_eps_norm.py": {
        "op_inputs": [
            {"name": "input[0]", "dtype": "float16", "zeros": 0},
            {"name": "input[1]", "dtype": "float16", "zeros": 18},
        ],
        "op_input_sources": [{"input": 1, "op": "add", "numbers": [1e-8]}],
    },
}
# script -> (event line's code, phase, why its fix's patcher declines: no diff, this reason)
DECLINED = {
    "lbfgs_sine_nan_input.py": (
        "h, c = self.lstm(input_t, (h, c))",
        "input",
        "the training loop on line 44 does not take its batches from a loader",
    ),
}
# scripts whose fix lives in a config file: tests/test_gallery.py applies the reported diff
OUTSIDE_THE_SCRIPT = set(CONFIG_PATCHED)
EXPECTED = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
LOSS = re.compile(r"loss (\S+)")


def test_every_buggy_gallery_script_with_a_patched_fix_is_covered():
    patched = {
        name
        for name, entry in EXPECTED.items()
        if not entry.get("healthy") and entry["expected_fix"] in PATCHERS
    }
    silent = set(LEARNING)  # tests/patches/test_learning_gallery.py
    from_the_run = set(PATCHED_AS_REPORTED)  # tests/test_gallery.py
    assert patched == set(EVENTS) | set(DECLINED) | silent | OUTSIDE_THE_SCRIPT | from_the_run


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_a_declined_patch_gives_no_diff_and_says_why(tmp_path, name):
    source = (EXAMPLES / name).read_text()
    script = tmp_path / name
    script.write_text(source)
    code, phase, reason = DECLINED[name]
    line = next(i for i, text in enumerate(source.splitlines(), 1) if code in text)
    result = make_patch(
        EXPECTED[name]["expected_fix"], script, report_for(script, line=line, phase=phase)
    )
    assert result.diff is None and result.new_source is None
    assert reason in result.note


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EVENTS))
def test_expected_fix_makes_the_script_train(tmp_path, name):
    source = (EXAMPLES / name).read_text()
    script = tmp_path / name
    script.write_text(source)
    code, phase = EVENTS[name]
    line = None
    if code is not None:
        line = next(i for i, text in enumerate(source.splitlines(), 1) if code in text)
    fix_id = EXPECTED[name]["expected_fix"]
    report = report_for(
        script, line=line, phase=phase, dtype=DTYPES.get(name), event_fields=EVENT_FIELDS.get(name)
    )
    result = make_patch(fix_id, script, report)
    assert result.new_source is not None, result.note
    script.write_text(result.new_source)
    done = run_python([str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    losses = [float(v) for v in LOSS.findall(done.stdout)]
    assert losses, done.stdout[-500:]
    assert all(math.isfinite(v) for v in losses), f"{fix_id} left {done.stdout[-300:]}"
