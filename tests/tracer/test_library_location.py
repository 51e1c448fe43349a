"""The event's line is the user's own: when an installed library ran the op, name the user's
call into it, and keep the library's line alongside as ``via``."""

from __future__ import annotations

import textwrap

from diagnose.runner import diagnose_script


def test_an_op_inside_an_installed_library_is_located_at_the_users_call(tmp_path):
    lib = tmp_path / "site-packages" / "lossylib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        textwrap.dedent("""
        import torch

        def neg_log_likelihood(p, t):
            return -(t * torch.log(p)).mean()
    """)
    )
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "site-packages")!r})
        import torch
        from lossylib import neg_log_likelihood

        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            p = torch.sigmoid(model(torch.ones(4))) * (step < 2)
            loss = neg_log_likelihood(p, torch.ones(4))
            loss.backward()
            opt.step()
            opt.zero_grad()
    """)
    )
    report = diagnose_script(script)
    event = report.event
    assert report.status == "nonfinite" and event.op == "log"
    assert event.location.file == str(script) and event.location.line == 12
    assert event.location.via.endswith("lossylib/__init__.py:5")


def test_a_functional_script_without_modules_still_names_the_op_and_line(tmp_path):
    script = tmp_path / "functional.py"
    script.write_text(
        textwrap.dedent("""
        import torch

        w = torch.zeros(4, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for step in range(4):
            p = torch.sigmoid(w) * (step < 2)
            loss = -torch.log(p).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    """)
    )
    report = diagnose_script(script)
    event = report.event
    assert report.status == "nonfinite" and event.phase == "loss" and event.step == 2
    assert event.op == "log" and event.location.line == 8


def test_a_functional_script_failing_at_its_first_step_names_the_op_and_line(tmp_path):
    script = tmp_path / "functional0.py"
    script.write_text(
        textwrap.dedent("""
        import torch

        w = torch.zeros(4, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for step in range(4):
            p = torch.sigmoid(w) * 0.0
            loss = -torch.log(p).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    """)
    )
    event = diagnose_script(script).event
    assert (event.phase, event.step, event.op) == ("loss", 0, "log")
    assert event.location.line == 8
