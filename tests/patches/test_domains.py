"""clamp-into-domain, finite-mask-value and ctc-zero-infinity patch the script's own call."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_a_fractional_power_is_clamped_above_zero(tmp_path):
    result = patch(tmp_path, "clamp-into-domain", "import torch\nd = dist ** 0.5\n", line=2)
    assert diff_body(result) == ["-d = dist ** 0.5", "+d = dist.clamp(min=1e-6) ** 0.5"]


def test_a_power_of_two_is_left_alone(tmp_path):
    result = patch(tmp_path, "clamp-into-domain", "import torch\nd = dist ** 2\n", line=2)
    assert result.diff is None


def test_a_minus_inf_mask_fills_the_dtype_min(tmp_path):
    source = 'import torch\ns = s.masked_fill(pad, float("-inf"))\n'
    result = patch(tmp_path, "finite-mask-value", source, line=2)
    assert diff_body(result) == [
        '-s = s.masked_fill(pad, float("-inf"))',
        "+s = s.masked_fill(pad, torch.finfo(s.dtype).min)",
    ]


def test_ctc_loss_gets_zero_infinity_wherever_it_is_built(tmp_path):
    source = (
        "import torch\nfrom torch import nn\nctc = nn.CTCLoss(blank=0)\nloss = ctc(a, b, c, d)\n"
    )
    result = patch(tmp_path, "ctc-zero-infinity", source, line=4)
    assert diff_body(result) == [
        "-ctc = nn.CTCLoss(blank=0)",
        "+ctc = nn.CTCLoss(blank=0, zero_infinity=True)",
    ]
