"""stabilize-log, guard-division, guard-sqrt and stabilize-exp patch the op on the event's line."""

from __future__ import annotations

from diagnose.patches import make_patch
from diagnose.report import Location
from tests.patches.helpers import diff_body, patch, report_for


def test_log_clamped_on_the_event_line(tmp_path):
    result = patch(
        tmp_path,
        "stabilize-log",
        """
        import torch
        a = torch.log(x)
        nll = -(y * torch.log(p) + (1 - y) * (1 - p).log()).mean()
    """,
        line=3,
    )
    assert diff_body(result) == [
        "-nll = -(y * torch.log(p) + (1 - y) * (1 - p).log()).mean()",
        "+nll = -(y * torch.log(p.clamp_min(1e-7)) + (1 - y) * (1 - p).clamp_min(1e-7).log())"
        ".mean()",
    ]


def test_log_of_softmax_becomes_log_softmax(tmp_path):
    result = patch(
        tmp_path,
        "stabilize-log",
        """
        import torch
        logp = torch.log(torch.softmax(logits, dim=-1))
    """,
        line=2,
    )
    assert diff_body(result) == [
        "-logp = torch.log(torch.softmax(logits, dim=-1))",
        "+logp = torch.log_softmax(logits, dim=-1)",
    ]


def test_ambiguous_log_without_an_event_line_says_where(tmp_path):
    result = patch(
        tmp_path,
        "stabilize-log",
        """
        import torch
        a = torch.log(x)
        b = torch.log(y)
    """,
    )
    assert result.diff is None
    assert result.note == (
        "no automatic patch: 2 places with log() (lines 2, 3) and the event "
        "has no line in it: apply the example to the one that met the bad value"
    )


def test_event_in_another_file_is_not_guessed(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\na = torch.log(x)\nb = torch.log(y)\n")
    report = report_for(script)
    report.event.location = Location(file=str(tmp_path / "losses.py"), line=2)
    result = make_patch("stabilize-log", script, report)
    assert result.diff is None
    assert f"the event is in {tmp_path / 'losses.py'}:2, not in the script" in result.note


def test_division_gets_an_eps_in_the_denominator(tmp_path):
    result = patch(
        tmp_path,
        "guard-division",
        """
        def norm(x):
            return (x - x.mean(0)) / x.std(0) / 2
    """,
        line=2,
    )
    assert diff_body(result) == [
        "-    return (x - x.mean(0)) / x.std(0) / 2",
        "+    return (x - x.mean(0)) / (x.std(0) + 1e-6) / 2",
    ]


def test_division_eps_follows_the_dtype(tmp_path):
    result = patch(
        tmp_path, "guard-division", "import torch\nr = torch.div(a, b)\n", line=2, dtype="float16"
    )
    assert diff_body(result) == ["-r = torch.div(a, b)", "+r = torch.div(a, (b + 1e-4))"]


def test_a_denominator_that_already_adds_an_eps_gets_no_second_one(tmp_path):
    result = patch(
        tmp_path, "guard-division", "y = x / (x.std() + 1e-8)\n", line=1, dtype="float16"
    )
    assert result.diff is None
    assert result.note == (
        "no automatic patch: the denominator (x.std() + 1e-8) already adds an "
        "eps: if it was still 0, that eps is 0 in the op's dtype"
    )


def test_sqrt_method_function_and_power(tmp_path):
    method = patch(tmp_path, "guard-sqrt", "n = (v ** 2).sum(-1).sqrt()\n", line=1)
    assert diff_body(method) == [
        "-n = (v ** 2).sum(-1).sqrt()",
        "+n = ((v ** 2).sum(-1) + 1e-6).sqrt()",
    ]
    function = patch(tmp_path, "guard-sqrt", "import torch\nn = torch.sqrt(var)\n", line=2)
    assert diff_body(function) == ["-n = torch.sqrt(var)", "+n = torch.sqrt(var + 1e-6)"]
    power = patch(tmp_path, "guard-sqrt", "n = s.sum() ** 0.5\n", line=1)
    assert diff_body(power) == ["-n = s.sum() ** 0.5", "+n = (s.sum() + 1e-6) ** 0.5"]


def test_exp_in_a_softmax_subtracts_the_max(tmp_path):
    result = patch(
        tmp_path,
        "stabilize-exp",
        """
        import torch
        def my_softmax(z):
            e = torch.exp(z)
            return e / e.sum(-1, keepdim=True)
    """,
        line=3,
    )
    assert diff_body(result) == [
        "-    e = torch.exp(z)",
        "+    e = torch.exp(z - z.amax(dim=-1, keepdim=True))",
    ]


def test_exp_elsewhere_is_clamped(tmp_path):
    result = patch(tmp_path, "stabilize-exp", "std = (0.5 * logvar).exp()\n", line=1)
    assert diff_body(result) == [
        "-std = (0.5 * logvar).exp()",
        "+std = ((0.5 * logvar).clamp_max(80.0)).exp()",
    ]
