"""enable-grad-clipping and unscale-before-clipping use the script's own names."""

from __future__ import annotations

from diagnose.patches import make_patch
from tests.patches.helpers import diff_body, patch, report_for

SCALER_LOOP = """
    import torch
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    for x, y in data:
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def test_clip_after_backward_with_the_optimizers_parameters(tmp_path):
    result = patch(
        tmp_path,
        "enable-grad-clipping",
        """
        import torch
        net = Net()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for batch in loader:
            optimizer.zero_grad()
            loss = net(batch).mean()
            loss.backward()  # gradients
            optimizer.step()
    """,
    )
    assert diff_body(result) == ["+    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)"]
    assert result.new_source.splitlines()[6:8] == [
        "    loss.backward()  # gradients",
        "    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)",
    ]


def test_param_groups_when_the_optimizer_gets_a_list_of_dicts(tmp_path):
    result = patch(
        tmp_path,
        "enable-grad-clipping",
        """
        from torch import nn, optim
        opt = optim.Adam([{"params": a.parameters()}, {"params": b.parameters(), "lr": 1e-4}])
        loss.backward()
    """,
    )
    assert diff_body(result) == [
        '+nn.utils.clip_grad_norm_([p for group in opt.param_groups for p in group["params"]], 1.0)'
    ]


def test_under_a_grad_scaler_unscale_comes_first(tmp_path):
    result = patch(tmp_path, "enable-grad-clipping", SCALER_LOOP)
    assert diff_body(result) == [
        "+    scaler.unscale_(opt)",
        "+    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    ]
    assert "after unscaling" in result.note


def test_existing_clipping_is_not_doubled(tmp_path):
    result = patch(
        tmp_path,
        "enable-grad-clipping",
        """
        import torch
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 100.0)
    """,
    )
    assert result.diff is None
    assert "already clips gradients on line 4" in result.note


def test_unscale_inserted_before_an_existing_clip(tmp_path):
    source = SCALER_LOOP.replace(
        "        scaler.step(opt)",
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)",
    )
    result = patch(tmp_path, "unscale-before-clipping", source)
    assert diff_body(result) == ["+    scaler.unscale_(opt)"]
    lines = result.new_source.splitlines()
    assert lines.index("    scaler.unscale_(opt)") + 1 == lines.index(
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
    )


def test_unscale_needs_a_scaler(tmp_path):
    result = patch(
        tmp_path,
        "unscale-before-clipping",
        """
        import torch
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    """,
    )
    assert result.note == "no automatic patch: no `scaler.scale(loss).backward()` in the script"


class TestRaiseClipLimit:
    """raise-clip-limit: a clip whose limit of 0 erased every gradient lets them through."""

    def test_a_literal_zero_limit_becomes_one(self, tmp_path):
        result = patch(
            tmp_path,
            "raise-clip-limit",
            """
            import torch
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.0)
            """,
        )
        assert diff_body(result) == [
            "-torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.0)",
            "+torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
        ]

    def test_a_limit_from_a_variable_whose_zero_means_off_guards_the_clip(self, tmp_path):
        result = patch(
            tmp_path,
            "raise-clip-limit",
            """
            import torch
            for x in data:
                loss.backward()
                torch.nn.utils.clip_grad_value_(model.parameters(), args.clip)
                opt.step()
            """,
        )
        assert diff_body(result) == [
            "-    torch.nn.utils.clip_grad_value_(model.parameters(), args.clip)",
            "+    if args.clip > 0:",
            "+        torch.nn.utils.clip_grad_value_(model.parameters(), args.clip)",
        ]
        assert "runs only when args.clip > 0" in result.note

    def test_a_zero_given_on_the_command_line_goes_back_to_the_scripts_default(self, tmp_path):
        script = tmp_path / "train.py"
        script.write_text(
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--clip', type=float, default=0.25)\n"
        )
        origin = {"kind": "argv", "token": "0", "index": 1, "key": "clip", "value": 0.0}
        report = report_for(script, config={"origins": {"grad_clip.max": origin}})
        report.script.argv = ["--clip", "0", "--lr", "20"]
        result = make_patch("raise-clip-limit", script, report)
        assert result.argv == ["--clip", "0.25", "--lr", "20"], result.note
