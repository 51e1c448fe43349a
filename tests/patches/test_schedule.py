"""add-lr-warmup adds a LambdaLR warmup stepped after the optimizer."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_warmup_after_the_optimizer_and_its_step(tmp_path):
    result = patch(
        tmp_path,
        "add-lr-warmup",
        """
        import torch
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        for batch in loader:
            model(batch).backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    )
    assert diff_body(result) == [
        "+warmup = torch.optim.lr_scheduler.LambdaLR("
        "optimizer, lambda step: min(1.0, (step + 1) / 100))",
        "+    warmup.step()",
    ]
    lines = result.new_source.splitlines()
    assert lines.index("    warmup.step()") == lines.index("    optimizer.step()") + 1


def test_an_existing_scheduler_is_left_to_the_example(tmp_path):
    result = patch(
        tmp_path,
        "add-lr-warmup",
        """
        import torch
        from torch.optim.lr_scheduler import CosineAnnealingLR
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = CosineAnnealingLR(opt, 100)
        opt.step()
    """,
    )
    assert result.diff is None
    assert "already uses an lr scheduler (line 2)" in result.note
