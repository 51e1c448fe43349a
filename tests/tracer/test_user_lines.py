"""Every event has the user's line: a loss module's call, an optimizer's step() and where the
optimizer was built, the user's call that led into library code (kept package-relative)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from diagnose.runner import diagnose_script
from diagnose.tracer.ops import library_path
from tests.traced_scripts import line_of

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def test_a_value_born_inside_a_loss_module_is_at_the_users_call_of_it():
    script = EXAMPLES / "loss_module_fp16_overflow.py"
    event = diagnose_script(script).event
    assert (event.phase, event.module_type, event.op) == ("loss", "MSELoss", "mse_loss")
    assert event.location.file == str(script)
    assert event.location.line == line_of(script, "loss = criterion(pred, target")
    assert event.location.via.startswith("torch/nn/")


def test_a_loss_module_given_a_log_of_zero_names_the_op_not_the_batch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model, crit = torch.nn.Linear(4, 3), torch.nn.NLLLoss()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))\n"
        "for step in range(6):\n"
        "    opt.zero_grad()\n"
        "    probs = torch.softmax(model(x), -1) * (step != 4)\n"
        "    loss = crit(torch.log(probs), y)\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    )
    event = diagnose_script(script).event
    assert (event.phase, event.step, event.op) == ("loss", 4, "log")
    assert event.location.line == 9 and event.sample_indices is None


def test_an_optimizer_phase_event_is_at_its_step_call_and_names_where_it_was_built():
    script = EXAMPLES / "adam_eps_fp16.py"
    event = diagnose_script(script).event
    assert event.phase == "optimizer"
    assert event.location.file == str(script)
    assert event.location.line == line_of(script, "optimizer.step()")
    assert event.optimizer_location.line == line_of(script, "torch.optim.Adam(")


def test_library_files_are_named_as_their_package_spells_them():
    installed = os.path.join(os.sep, "venv", "lib", "python3.11", "site-packages")
    gpt2 = os.path.join(installed, "transformers", "models", "gpt2", "modeling_gpt2.py")
    assert library_path(gpt2) == "transformers/models/gpt2/modeling_gpt2.py"
    functional = torch.nn.functional.__file__
    assert library_path(functional) == os.path.join("torch", "nn", "functional.py")
    assert library_path("/home/me/train.py") == "/home/me/train.py"


def test_optimizers_taking_turns_count_their_own_steps_and_name_the_op_in_the_generator():
    script = Path(__file__).resolve().parent.parent / "scripts" / "gan_generator_nan.py"
    report = diagnose_script(script)
    event = report.event
    # The generator's 7th step (its step 6), after the discriminator's 7th: its own count.
    # Its forward ran before the discriminator's step, its backward after: the replay of its
    # call still names the op whose backward made the nan, in the generator's forward.
    assert (event.phase, event.step, event.module, event.op) == (
        "backward",
        6,
        "Generator",
        "sqrt",
    )
    assert "fc.weight" in event.message and "gradient of the Generator" not in event.message
    assert event.location.line == line_of(script, "h = centred / centred.pow(2)")
    assert report.fixes[0].id == "guard-sqrt"
