"""A tensor of the wrong dtype, and a target or index beyond the layer's size: the run reads
the tensors the frames held and names where they were made and passed."""

from __future__ import annotations

from diagnose.patches import make_patch


def test_float_embedding_indices_are_cast_to_long_where_they_are_passed(crash_run):
    script, report = crash_run(
        """
        import torch
        from torch import nn
        emb = nn.Embedding(10, 4)
        ids = torch.tensor([[1, 2], [3, 4]]).float()
        out = emb(ids)
        """
    )
    crash = report.event.crash
    assert crash.family == "dtype-mismatch" and crash.module_type == "Embedding"
    assert [(s.role, s.line) for s in crash.sites] == [("producer", 4), ("crash", 5)]
    assert "+out = emb(ids.long())" in make_patch("cast-dtype", script, report).diff


def test_a_half_input_to_a_float_layer_is_cast_to_the_weights_dtype(crash_run):
    script, report = crash_run(
        """
        import torch
        from torch import nn
        layer = nn.Linear(4, 2)
        x = torch.randn(3, 4).half()
        y = layer(x)
        """
    )
    crash = report.event.crash
    assert any("float16, where the op needs float32" in line for line in crash.evidence)
    assert crash.edit.value == "float"
    assert "+y = layer(x.float())" in make_patch("cast-dtype", script, report).diff


def test_a_target_beyond_the_classes_names_the_value_its_rows_and_the_class_count(crash_run):
    _, report = crash_run(
        """
        import torch
        import torch.nn.functional as F
        logits = torch.randn(4, 3, requires_grad=True)
        y = torch.tensor([0, 2, 3, 1])
        loss = F.cross_entropy(logits, y)
        """
    )
    crash = report.event.crash
    assert crash.family == "index-out-of-range"
    assert (crash.expected, crash.got) == (3, 3)
    assert any("3 classes" in line and "batch row 2 holds 3" in line for line in crash.evidence)
    assert ("producer", 4) in [(s.role, s.line) for s in crash.sites]
    assert report.fixes[0].id == "fix-label-range" and report.fixes[0].patch is None


def test_an_ignored_padding_target_is_not_counted_as_out_of_range(crash_run):
    _, report = crash_run(
        """
        import torch
        import torch.nn.functional as F
        logits = torch.randn(4, 3)
        y = torch.tensor([-100, 2, 5, -100])
        loss = F.cross_entropy(logits, y)
        """
    )
    assert any("batch row 2 holds 5" in line for line in report.event.crash.evidence)


def test_an_index_past_the_embedding_is_named_with_the_embedding(crash_run):
    _, report = crash_run(
        """
        import torch
        from torch import nn
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(50, 8)
            def forward(self, ids):
                return self.tok(ids)
        ids = torch.tensor([[3, 49, 50]])
        LM()(ids)
        """
    )
    crash = report.event.crash
    assert (crash.module, crash.module_type) == ("tok", "Embedding")
    assert (crash.expected, crash.got) == (50, 50)
    assert ("producer", 9) in [(s.role, s.line) for s in crash.sites]
