"""Backward through a freed graph, and a loss with no graph: the run names the carried state
or the line that cut the graph."""

from __future__ import annotations

from diagnose.patches import make_patch


def test_a_hidden_state_carried_without_detach_is_detached_where_it_is_passed_on(crash_run):
    script, report = crash_run(
        """
        import torch
        from torch import nn
        lstm, head = nn.LSTM(3, 8), nn.Linear(8, 1)
        opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.01)
        state = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
        for step in range(3):
            out, state = lstm(torch.randn(5, 2, 3), state)
            loss = head(out).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """
    )
    crash = report.event.crash
    assert crash.family == "backward-through-graph-twice"
    assert [(s.role, s.line) for s in crash.sites] == [("carried", 7)]
    assert (crash.edit.target, crash.edit.value) == ("state", "tuple")
    assert report.fixes[0].id == "detach-carried-state"
    diff = make_patch("detach-carried-state", script, report).diff
    assert "+    out, state = lstm(torch.randn(5, 2, 3), tuple(s.detach() for s in state))" in diff


def test_a_tensor_made_once_before_the_loop_is_named_and_not_patched(crash_run):
    script, report = crash_run(
        """
        import torch
        from torch import nn
        embed, head = nn.Linear(4, 4), nn.Linear(4, 1)
        opt = torch.optim.SGD([*embed.parameters(), *head.parameters()], lr=0.01)
        features = embed(torch.randn(6, 4))
        for step in range(3):
            loss = head(features).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """
    )
    crash = report.event.crash
    assert [(s.role, s.line) for s in crash.sites] == [("carried", 5)]
    assert crash.edit is None and "before the loop" in crash.sites[0].what
    assert make_patch("detach-carried-state", script, report).diff is None


def test_a_loss_computed_under_no_grad_names_the_block(crash_run):
    _, report = crash_run(
        """
        import torch
        from torch import nn
        model = nn.Linear(3, 1)
        x = torch.randn(4, 3)
        with torch.no_grad():
            pred = model(x)
        loss = pred.pow(2).mean()
        loss.backward()
        """
    )
    crash = report.event.crash
    assert crash.family == "graph-cut-before-backward"
    assert [(s.role, s.line) for s in crash.sites] == [("cut", 6)]
    assert "no_grad block of line 5" in crash.sites[0].what
    assert report.fixes[0].id == "restore-gradient-flow"


def test_a_frozen_model_is_named_as_the_cut(crash_run):
    _, report = crash_run(
        """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1)).requires_grad_(False)
        loss = model(torch.randn(4, 3)).mean()
        loss.backward()
        """
    )
    crash = report.event.crash
    assert crash.module == "model" and "requires_grad=False" in crash.sites[0].what


def test_a_cut_the_run_cannot_follow_says_what_was_checked(crash_run):
    _, report = crash_run(
        """
        import torch
        def make_loss():
            return torch.ones(())
        make_loss().backward()
        """
    )
    crash = report.event.crash
    assert crash.family == "graph-cut-before-backward" and crash.sites == []
    assert crash.checked and not [f for f in report.fixes if f.id == "restore-gradient-flow"]
    assert report.matches  # the matched records still answer it
