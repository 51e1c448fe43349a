"""sanitize-inputs and guard-ignored-targets guard the training loop's batches."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch

LOOP = """
    import torch
    def collate(rows):
        for i, (a, b) in enumerate(rows):
            pass
    for epoch in range(3):
        for step, (images, targets) in enumerate(loader):
            loss = model(images, targets)
            loss.backward()
            opt.step()
"""


def test_non_finite_batches_are_skipped_in_the_training_loop(tmp_path):
    result = patch(tmp_path, "sanitize-inputs", LOOP, phase="input")
    assert diff_body(result) == [
        "+        if not all(torch.isfinite(t).all() for t in (images, targets)):",
        "+            continue  # skip a batch with nan/inf values",
    ]


def test_single_name_batches(tmp_path):
    result = patch(
        tmp_path,
        "sanitize-inputs",
        """
        import torch as th
        for batch in loader:
            opt.step()
    """,
    )
    assert diff_body(result) == [
        "+    if not all(th.isfinite(t).all() for t in (batch,)):",
        "+        continue  # skip a batch with nan/inf values",
    ]


def test_no_batch_loop(tmp_path):
    result = patch(
        tmp_path,
        "sanitize-inputs",
        """
        import torch
        for step in range(10):
            loss.backward()
    """,
    )
    assert result.diff is None and "does not take its batches from a loader" in result.note


def test_all_ignored_targets_are_skipped(tmp_path):
    result = patch(tmp_path, "guard-ignored-targets", LOOP, phase="loss")
    assert diff_body(result) == [
        "+        if not (targets != -100).any():",
        "+            continue  # every target is ignored: the mean loss would be 0/0",
    ]
