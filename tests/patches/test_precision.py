"""use-bf16, upcast-to-fp32 and raise-adam-eps."""

from __future__ import annotations

from diagnose.patches import make_patch
from tests.patches.helpers import diff_body, patch, report_for


def test_bf16_replaces_every_float16_spelling(tmp_path):
    result = patch(
        tmp_path,
        "use-bf16",
        """
        import torch
        model = Net().half()
        x = x.to(torch.float16)
        with torch.autocast("cuda", dtype=torch.half):
            y = model(x)
        z = torch.zeros(3, dtype="float16")
    """,
    )
    assert diff_body(result) == [
        "-model = Net().half()",
        "-x = x.to(torch.float16)",
        '-with torch.autocast("cuda", dtype=torch.half):',
        "+model = Net().bfloat16()",
        "+x = x.to(torch.bfloat16)",
        '+with torch.autocast("cuda", dtype=torch.bfloat16):',
        '-z = torch.zeros(3, dtype="float16")',
        '+z = torch.zeros(3, dtype="bfloat16")',
    ]
    assert result.note.startswith("4 float16 use(s) switched to bfloat16")


def test_bf16_without_float16(tmp_path):
    result = patch(tmp_path, "use-bf16", "import torch\nx = torch.ones(2)\n")
    assert result.diff is None and "no float16 in the script" in result.note


def test_upcast_the_loss_line_when_the_loss_overflowed(tmp_path):
    result = patch(
        tmp_path,
        "upcast-to-fp32",
        """
        import torch
        import torch.nn.functional as F
        pred = model(x)
        loss = ((pred - target) ** 2).sum() + F.l1_loss(pred, target) + model.reg(pred)
    """,
        line=4,
        phase="loss",
    )
    assert diff_body(result) == [
        "-loss = ((pred - target) ** 2).sum() + F.l1_loss(pred, target) + model.reg(pred)",
        "+loss = ((pred.float() - target.float()) ** 2).sum() + "
        "F.l1_loss(pred.float(), target.float()) + model.reg(pred)",
    ]


def test_upcast_elsewhere_takes_the_script_back_to_float32(tmp_path):
    result = patch(
        tmp_path,
        "upcast-to-fp32",
        """
        import torch
        model = Net().half()
        x = torch.randn(4, 8, dtype=torch.float16)
    """,
        line=3,
        phase="forward",
    )
    assert diff_body(result) == [
        "-model = Net().half()",
        "-x = torch.randn(4, 8, dtype=torch.float16)",
        "+model = Net().float()",
        "+x = torch.randn(4, 8, dtype=torch.float32)",
    ]


def test_adam_eps_raised_or_added(tmp_path):
    result = patch(
        tmp_path,
        "raise-adam-eps",
        """
        import torch
        a = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-8)
        b = torch.optim.AdamW(n.parameters())
        c = torch.optim.SGD(o.parameters(), lr=0.1)
    """,
    )
    assert diff_body(result) == [
        "-a = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-8)",
        "-b = torch.optim.AdamW(n.parameters())",
        "+a = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-4)",
        "+b = torch.optim.AdamW(n.parameters(), eps=1e-4)",
    ]


def test_adam_eps_needs_adam(tmp_path):
    result = patch(tmp_path, "raise-adam-eps", "import torch\nopt = torch.optim.SGD(p, lr=1)\n")
    assert (
        result.note == "no automatic patch: no Adam-family optimizer is constructed in the script"
    )


def test_loss_scaling_around_backward_and_step_under_autocast(tmp_path):
    result = patch(
        tmp_path,
        "enable-loss-scaling",
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    )
    assert diff_body(result) == [
        '+scaler = torch.amp.GradScaler("cpu")',
        "-    loss.backward()",
        "-    opt.step()",
        "+    scaler.scale(loss).backward()",
        "+    scaler.step(opt)",
        "+    scaler.update()",
    ]


def test_loss_scaling_refuses_a_half_model(tmp_path):
    result = patch(
        tmp_path,
        "enable-loss-scaling",
        """
        import torch
        model = Net().half()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss.backward()
        opt.step()
    """,
    )
    assert result.diff is None and "cannot unscale float16 gradients" in result.note


def test_adam_eps_given_on_the_command_line_is_raised_there(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse, torch\np = argparse.ArgumentParser()\n"
        "p.add_argument('--adam_eps', type=float, default=1e-6)\nargs = p.parse_args()\n"
        "opt = torch.optim.Adam(m.parameters(), eps=args.adam_eps)\n"
    )
    origin = {"kind": "argv", "token": "1e-8", "index": 1, "key": "adam_eps", "value": 1e-8}
    report = report_for(script, config={"origins": {"eps": origin}})
    report.script.argv = ["--adam_eps", "1e-8"]
    result = make_patch("raise-adam-eps", script, report)
    assert result.argv == ["--adam_eps", "0.0001"] and result.diff is None, result.note
    assert "'--adam_eps 1e-8': run with '--adam_eps 0.0001'" in result.note


def test_adam_eps_of_transformers_trainer_is_its_adam_epsilon_argument(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import Trainer, TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', learning_rate=1e-4)\n"
        "Trainer(model=m, args=args).train()\n"
    )
    where = {"kind": "script", "file": str(script), "line": 2, "key": "TrainingArguments"}
    config = {
        "transformers": {"learning_rate": 1e-4},
        "origins": {"transformers.TrainingArguments": where},
    }
    result = make_patch("raise-adam-eps", script, report_for(script, config=config))
    assert diff_body(result) == [
        "-args = TrainingArguments(output_dir='o', learning_rate=1e-4)",
        "+args = TrainingArguments(output_dir='o', learning_rate=1e-4, adam_epsilon=0.0001)",
    ]
