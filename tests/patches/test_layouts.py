"""Patches work whatever the layout of the training step: `;`-joined statements, one-line
bodies, ``with`` and ``if`` blocks, a scaled or computed loss. Each patched script compiles
and puts its new statement right beside the one it belongs to."""

from __future__ import annotations

from tests.patches.helpers import patch

CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def _clip(tmp_path, loop: str) -> list[str]:
    source = (
        "import torch\n"
        "model = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + loop
    )
    result = patch(tmp_path, "enable-grad-clipping", source)
    assert result.new_source is not None, result.note
    return result.new_source.splitlines()[3:]


def test_semicolon_joined_step_gets_the_clip_between_backward_and_step(tmp_path):
    lines = _clip(
        tmp_path,
        "for x, y in data:\n"
        "    loss = (model(x) - y).pow(2).mean()\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n",
    )
    assert lines[2] == f"    opt.zero_grad(); loss.backward(); {CLIP}; opt.step()"


def test_one_line_loop_body(tmp_path):
    lines = _clip(
        tmp_path, "for x in data: opt.zero_grad(); model(x).sum().backward(); opt.step()\n"
    )
    assert lines == [
        f"for x in data: opt.zero_grad(); model(x).sum().backward(); {CLIP}; opt.step()"
    ]


def test_backward_inside_with_and_if_blocks(tmp_path):
    lines = _clip(
        tmp_path,
        "for i, (x, y) in enumerate(data):\n"
        "    with torch.enable_grad():\n"
        "        loss = model(x).sum()\n"
        "        if i % 2 == 0:\n"
        "            (loss / 2).backward()\n"
        "    opt.step()\n",
    )
    assert lines[4:6] == ["            (loss / 2).backward()", f"            {CLIP}"]


def test_one_line_if_body_with_accumulated_loss(tmp_path):
    lines = _clip(
        tmp_path,
        "for i, x in enumerate(data):\n"
        "    loss = model(x).sum()\n"
        "    if True: (loss / 4).backward(); opt.step()\n",
    )
    assert lines[2] == f"    if True: (loss / 4).backward(); {CLIP}; opt.step()"


def test_scaled_backward_on_a_joined_line_unscales_then_clips(tmp_path):
    result = patch(
        tmp_path,
        "enable-grad-clipping",
        """
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        for x in data:
            loss = model(x).sum()
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    """,
    )
    assert result.new_source.splitlines()[6] == (
        f"    scaler.scale(loss).backward(); scaler.unscale_(opt); {CLIP}; "
        "scaler.step(opt); scaler.update()"
    )


def test_guard_goes_first_in_a_one_line_loop_body(tmp_path):
    result = patch(
        tmp_path,
        "sanitize-inputs",
        """
        import torch
        for x, y in data: opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """,
    )
    assert result.new_source.splitlines()[1:] == [
        "for x, y in data:",
        "    if not all(torch.isfinite(t).all() for t in (x, y)):",
        "        continue  # skip a batch with nan/inf values",
        "    opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()",
    ]


def test_warmup_and_loss_scaling_follow_a_joined_step(tmp_path):
    source = """
        import torch
        model = torch.nn.Linear(2, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).sum()
            opt.zero_grad(); loss.backward(); opt.step()
    """
    warm = patch(tmp_path, "add-lr-warmup", source).new_source.splitlines()
    assert warm[1].startswith("model = torch.nn.Linear(2, 1); opt = torch.optim.SGD(")
    assert "; warmup = torch.optim.lr_scheduler.LambdaLR(opt, " in warm[1]
    assert warm[-1] == "    opt.zero_grad(); loss.backward(); opt.step(); warmup.step()"
    scaled = patch(tmp_path, "enable-loss-scaling", source).new_source.splitlines()
    assert scaled[-1] == (
        "    opt.zero_grad(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update()"
    )
