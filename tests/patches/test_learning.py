"""The learning fixes' patches: each finds its one certain place, or says why there is none."""

from __future__ import annotations

import textwrap

from diagnose.patches import make_patch
from diagnose.report import Report
from tests.patches.helpers import diff_body, patch

LOOP = """
    import torch
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
"""


def learning_patch(tmp_path, fix_id: str, source: str, learning: dict):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    report = Report.model_validate(
        {"status": "silent", "script": {"path": str(script)}, "learning": learning}
    )
    return make_patch(fix_id, script, report)


def test_zero_grad_goes_before_the_backward_of_the_stepping_loop(tmp_path):
    assert diff_body(patch(tmp_path, "add-zero-grad", LOOP)) == ["+    opt.zero_grad()"]
    lines = patch(tmp_path, "add-zero-grad", LOOP).new_source.splitlines()
    assert lines.index("    opt.zero_grad()") == lines.index("    loss.backward()") - 1


def test_zero_grad_of_an_accumulating_loop_follows_the_step(tmp_path):
    result = patch(
        tmp_path,
        "add-zero-grad",
        """
        import torch
        opt = torch.optim.Adam(model.parameters())
        for i, (x, y) in enumerate(loader):
            model(x).sum().backward()
            if i % 4 == 3:
                opt.step()
        """,
    )
    assert diff_body(result) == ["+        opt.zero_grad()"]
    assert "right after the step" in result.note


def test_a_script_that_clears_somewhere_is_not_patched(tmp_path):
    source = LOOP.replace(
        "        loss.backward()",
        "        opt.zero_grad(set_to_none=True)\n        loss.backward()",
    )
    result = patch(tmp_path, "add-zero-grad", source.replace("opt.zero_grad", "model.zero_grad"))
    assert result.diff is None and "already calls zero_grad()" in result.note


def test_the_missing_step_follows_the_backward(tmp_path):
    source = LOOP.replace("        opt.step()\n", "")
    assert diff_body(patch(tmp_path, "call-optimizer-step", source)) == ["+    opt.step()"]


def test_a_scaled_backward_steps_through_its_scaler(tmp_path):
    source = LOOP.replace(
        "        loss.backward()\n        opt.step()\n", "        scaler.scale(loss).backward()\n"
    )
    assert diff_body(patch(tmp_path, "call-optimizer-step", source)) == [
        "+    scaler.step(opt)",
        "+    scaler.update()",
    ]


def test_two_optimizers_are_not_guessed_between(tmp_path):
    source = (
        LOOP.replace("        opt.step()\n", "") + "    opt2 = torch.optim.SGD(d.parameters())\n"
    )
    result = patch(tmp_path, "call-optimizer-step", source)
    assert result.diff is None and "2 optimizers" in result.note


def test_the_optimizer_gets_the_whole_model(tmp_path):
    source = LOOP.replace("SGD(model.parameters()", "SGD(model.head.parameters()")
    assert diff_body(patch(tmp_path, "pass-all-parameters-to-optimizer", source)) == [
        "-opt = torch.optim.SGD(model.head.parameters(), lr=0.1)",
        "+opt = torch.optim.SGD(model.parameters(), lr=0.1)",
    ]


def test_a_list_of_tensors_is_left_to_the_user(tmp_path):
    source = LOOP.replace("SGD(model.parameters()", "SGD([w1, b1]")
    assert patch(tmp_path, "pass-all-parameters-to-optimizer", source).diff is None


def test_train_mode_goes_first_in_the_outermost_training_loop(tmp_path):
    source = """
        import torch
        opt = torch.optim.Adam(net.parameters())
        for epoch in range(3):
            for x, y in loader:
                net(x).sum().backward()
                opt.step()
            evaluate(net.eval())
    """
    result = patch(tmp_path, "set-train-mode", source)
    assert diff_body(result) == ["+    net.train()"]
    assert result.new_source.splitlines()[3] == "    net.train()"


def test_plain_list_and_dict_of_layers_become_module_containers(tmp_path):
    result = patch(
        tmp_path,
        "register-submodules",
        """
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = [nn.Linear(4, 4) for _ in range(3)]
                self.heads = {"a": nn.Linear(4, 1)}
        """,
    )
    assert diff_body(result) == [
        "-        self.blocks = [nn.Linear(4, 4) for _ in range(3)]",
        '-        self.heads = {"a": nn.Linear(4, 1)}',
        "+        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])",
        '+        self.heads = nn.ModuleDict({"a": nn.Linear(4, 1)})',
    ]


def test_only_the_container_the_run_named_is_wrapped(tmp_path):
    source = """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.sizes = [4, 8]
                self.layers = [torch.nn.Linear(4, 8)]
    """
    note = {"name": "Net.layers[0]", "type": "Linear", "container": "Net.layers (a list)"}
    result = learning_patch(tmp_path, "register-submodules", source, {"unregistered": [note]})
    assert diff_body(result) == [
        "-        self.layers = [torch.nn.Linear(4, 8)]",
        "+        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 8)])",
    ]


def test_a_functional_softmax_before_the_loss_is_dropped(tmp_path):
    source = LOOP.replace(
        "cross_entropy(model(x), y)", "cross_entropy(torch.softmax(model(x), dim=1), y)"
    )
    assert diff_body(patch(tmp_path, "remove-softmax-before-cross-entropy", source))[1] == (
        "+    loss = torch.nn.functional.cross_entropy(model(x), y)"
    )


def test_a_method_softmax_is_dropped_to_its_tensor(tmp_path):
    source = LOOP.replace("cross_entropy(model(x), y)", "cross_entropy(model(x).softmax(1), y)")
    assert diff_body(patch(tmp_path, "remove-softmax-before-cross-entropy", source))[1] == (
        "+    loss = torch.nn.functional.cross_entropy(model(x), y)"
    )


def test_two_softmaxes_are_not_guessed_between(tmp_path):
    source = LOOP + "    p = torch.softmax(model(x), 1)\n    q = torch.softmax(model(x), 1)\n"
    result = patch(tmp_path, "remove-softmax-before-cross-entropy", source)
    assert result.diff is None and "2 softmaxes" in result.note


def test_the_class_axis_moves_to_dim_1_for_index_targets(tmp_path):
    seen = {"function": "cross_entropy", "input_shape": [8, 5, 3], "target_shape": [8, 5]}
    result = learning_patch(tmp_path, "fix-loss-dimension", LOOP, {"losses": [seen]})
    assert diff_body(result)[1] == (
        "+    loss = torch.nn.functional.cross_entropy(model(x).movedim(-1, 1), y)"
    )


def test_a_criterion_module_call_is_found_through_its_name(tmp_path):
    source = (
        LOOP.replace("torch.nn.functional.cross_entropy(", "crit(")
        + "    crit = torch.nn.CrossEntropyLoss()\n"
    )
    seen = {"function": "cross_entropy", "input_shape": [8, 5, 3], "target_shape": [8, 5, 3]}
    result = learning_patch(tmp_path, "fix-loss-dimension", source, {"losses": [seen]})
    assert diff_body(result)[1] == "+    loss = crit(model(x).movedim(-1, 1), y.movedim(-1, 1))"


def test_the_target_shape_fix_squeezes_the_side_with_the_trailing_1(tmp_path):
    source = LOOP.replace("cross_entropy", "mse_loss")
    seen = {"function": "mse_loss", "input_shape": [16], "target_shape": [16, 1], "broadcast": True}
    result = learning_patch(tmp_path, "fix-target-shape", source, {"losses": [seen]})
    assert diff_body(result)[1] == (
        "+    loss = torch.nn.functional.mse_loss(model(x), y.squeeze(-1))"
    )


def test_the_target_shape_fix_needs_the_recorded_shapes(tmp_path):
    result = patch(tmp_path, "fix-target-shape", LOOP.replace("cross_entropy", "mse_loss"))
    assert result.diff is None and "no broadcast loss" in result.note


def test_without_the_runs_word_only_lists_that_build_layers_are_wrapped(tmp_path):
    result = patch(
        tmp_path,
        "register-submodules",
        """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.sizes = [4, 8]
                self.layers = [torch.nn.Linear(a, b) for a, b in zip(self.sizes, self.sizes[1:])]
        """,
    )
    assert [line[:20] for line in diff_body(result)] == [
        "-        self.layers",
        "+        self.layers",
    ]
