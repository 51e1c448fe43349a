"""An op's own arguments name two nan mechanisms: CTC samples without an alignment, and softmax
rows masked everywhere."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from diagnose.tracer.alignments import ctc_samples, masked_rows, needed_frames


def test_a_repeat_needs_a_blank_between_its_symbols():
    assert needed_frames([1, 1, 2]) == 4 and needed_frames([1, 2, 3]) == 3


def test_ctc_samples_names_exactly_the_samples_whose_loss_is_inf():
    torch.manual_seed(0)
    log_probs = torch.randn(5, 3, 4).log_softmax(-1)
    targets = torch.tensor([[1, 2, 3, 1, 2, 3], [1, 1, 2, 0, 0, 0], [1, 2, 0, 0, 0, 0]])
    inputs, lengths = torch.tensor([5, 3, 5]), torch.tensor([6, 3, 2])
    losses = F.ctc_loss(log_probs, targets, inputs, lengths, reduction="none")
    bad, count = ctc_samples((log_probs, targets, inputs, lengths), {})
    assert [s.sample for s in bad] == torch.isinf(losses).nonzero().flatten().tolist() == [0, 1]
    assert count == 2 and (bad[1].input_length, bad[1].target_length, bad[1].needed) == (3, 3, 4)
    assert ctc_samples((log_probs, targets, inputs, lengths), {"zero_infinity": True}) is None


def test_masked_rows_finds_the_rows_whose_softmax_is_nan():
    scores = torch.randn(2, 3, 4)
    scores[1, 2] = float("-inf")
    rows, count, total = masked_rows(scores, -1)
    assert rows == [[1, 2]] and (count, total) == (1, 6)
    assert torch.isnan(scores.softmax(-1)[1, 2]).all()
    assert masked_rows(torch.randn(2, 4), -1) is None
