"""Dumps of DebugUnderflowOverflow and anomaly mode are read: where the nan was born, and why."""

from __future__ import annotations

import json

from diagnose.matching.dumps import DUMP_CONFIDENCE, dump_frames, read_dump
from tests.conftest import run_cli

# The dump transformers documents for google/mt5-small run in fp16 mixed precision
# (https://github.com/huggingface/transformers/blob/main/src/transformers/debug_utils.py),
# followed by the exception DebugUnderflowOverflow raises.
MT5_FP16_DUMP = """\
Detected inf/nan during batch_number=0
Last 21 forward frames:
abs min  abs max  metadata
[...]
                  encoder.block.2.layer.1.DenseReluDense.wi_0 Linear
2.17e-07 4.50e+00 weight
1.79e-06 4.65e+00 input[0]
2.68e-06 3.70e+01 output
                  encoder.block.2.layer.1.DenseReluDense.wi_1 Linear
8.08e-07 2.66e+01 weight
1.79e-06 4.65e+00 input[0]
1.27e-04 2.37e+02 output
                  encoder.block.2.layer.1.DenseReluDense.wo Linear
1.01e-06 6.44e+00 weight
0.00e+00 9.74e+03 input[0]
3.18e-04 6.27e+04 output
                  encoder.block.2.layer.1.DenseReluDense T5DenseGatedGeluDense
1.79e-06 4.65e+00 input[0]
3.18e-04 6.27e+04 output
                  encoder.block.2.layer.1.dropout Dropout
3.18e-04 6.27e+04 input[0]
0.00e+00      inf output



Traceback (most recent call last):
  File "train.py", line 10, in <module>
    outputs = model(**batch)
ValueError: DebugUnderflowOverflow: inf/nan detected, aborting as there is no point running \
further. Please scroll up above this traceback to see the activation values prior to this event.
"""

# Anomaly mode's warning and error as pasted in
# https://github.com/nerfstudio-project/gsplat/issues/455 (paths shortened there by the user).
GSPLAT_ANOMALY = """\
/.../python3.9/site-packages/torch/autograd/graph.py:769: UserWarning: Error detected in \
_RasterizeToPixelsBackward. Traceback of forward call that caused the error:
  File "trainer.py", line 633, in <module>
    cli(main, cfg, verbose=True)
  File "/.../python3.9/site-packages/gsplat/distributed.py", line 360, in cli
    return _distributed_worker(0, 1, fn=fn, args=args)
  File "trainer.py", line 219, in train
    renders, alphas, info = self.rasterize_splats(
  File "rendering.py", line 561, in rasterization
    render_colors_, render_alphas_ = rasterize_to_pixels(
  File "/.../python3.9/site-packages/gsplat/cuda/_wrapper.py", line 551, in rasterize_to_pixels
    render_colors, render_alphas = _RasterizeToPixels.apply(
 (Triggered internally at ../torch/csrc/autograd/python_anomaly_mode.cpp:111.)
Traceback (most recent call last):
  File "trainer.py", line 633, in <module>
    loss.backward()
RuntimeError: Function '_RasterizeToPixelsBackward' returned nan values in its 0th output.
"""

LOG_ANOMALY = """\
UserWarning: Error detected in LogBackward0. Traceback of forward call that caused the error:
  File "/home/me/proj/train.py", line 30, in <module>
    main()
  File "/home/me/proj/train.py", line 22, in main
    loss = -torch.log(probs).mean()
 (Triggered internally at ../torch/csrc/autograd/python_anomaly_mode.cpp:111.)
Traceback (most recent call last):
  File "/home/me/proj/train.py", line 24, in main
    loss.backward()
RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.
"""


def test_the_frames_of_the_dump_are_read_in_order():
    frames = dump_frames(MT5_FP16_DUMP)
    assert [f.module_type for f in frames] == [
        "Linear",
        "Linear",
        "Linear",
        "T5DenseGatedGeluDense",
        "Dropout",
    ]
    assert frames[2].stats[1] == ("input[0]", 0.0, 9740.0)


def test_the_first_inf_is_named_with_its_module_role_and_magnitudes():
    dump = read_dump(MT5_FP16_DUMP)
    assert dump.tool == "DebugUnderflowOverflow"
    assert (dump.module, dump.module_type) == ("encoder.block.2.layer.1.dropout", "Dropout")
    assert dump.what.startswith("output of encoder.block.2.layer.1.dropout (Dropout)")
    assert "6.27e4" in dump.evidence[0]  # the dump's three figures, in the one number format


def test_magnitudes_at_float16s_limit_are_read_as_an_fp16_overflow_and_ranked_so():
    dump = read_dump(MT5_FP16_DUMP)
    assert dump.dtype == "float16" and "96% of float16's limit" in dump.dtype_reason
    assert dump.causes[0].id == "fp16-overflow"
    assert dump.fixes[0].id == "use-bf16"
    assert all(c.confidence <= DUMP_CONFIDENCE for c in dump.causes)


def test_magnitudes_beyond_float16_rule_fp16_out():
    text = MT5_FP16_DUMP.replace("3.18e-04 6.27e+04 input[0]", "3.18e-04 1.27e+30 input[0]")
    dump = read_dump(text)
    assert dump.dtype is None and "not a float16 overflow" in dump.dtype_reason
    assert "fp16-overflow" not in [c.id for c in dump.causes]


def test_a_weight_already_nonfinite_is_blamed_on_an_earlier_update():
    text = MT5_FP16_DUMP.replace("8.08e-07 2.66e+01 weight", "     nan      nan weight")
    dump = read_dump(text)
    assert dump.module == "encoder.block.2.layer.1.DenseReluDense.wi_1"
    assert "earlier update" in dump.what


def test_anomaly_mode_names_the_op_and_the_users_forward_line():
    dump = read_dump(LOG_ANOMALY)
    assert dump.tool == "anomaly mode" and dump.op == "log"
    assert dump.location == "/home/me/proj/train.py:22"
    assert dump.code == "loss = -torch.log(probs).mean()"
    assert dump.fixes[0].id == "stabilize-log"


def test_anomaly_mode_skips_library_frames_and_ignores_the_later_traceback():
    dump = read_dump(GSPLAT_ANOMALY)
    assert dump.location == "rendering.py:561"
    assert dump.code == "render_colors_, render_alphas_ = rasterize_to_pixels("


def test_text_without_a_dump_is_not_read_as_one():
    assert (
        read_dump("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)") is None
    )
    assert read_dump("abs min  abs max  metadata\n0.00e+00 inf output\n") is None


def test_match_shows_the_dump_first_then_the_records(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(MT5_FP16_DUMP, encoding="utf-8")
    out = run_cli("match", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(
        "DebugUnderflowOverflow: output of encoder.block.2.layer.1.dropout"
    )
    assert "debugunderflowoverflow-inf-nan-detected-aborting" in out.stdout
    data = json.loads(run_cli("match", "--format", "json", str(path)).stdout)
    assert data["dump"]["module"] == "encoder.block.2.layer.1.dropout"
    assert data["dump"]["fixes"][0]["id"] == "use-bf16"
