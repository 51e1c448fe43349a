"""Renderers: the verdict comes first, the evidence follows, and run-supplied text stays inert."""

from __future__ import annotations

import json

import pytest

from diagnose.render import render
from diagnose.render.numbers import num, safe
from diagnose.report import Report
from tests.render.sample_reports import nonfinite_report


def test_text_starts_with_the_verdict_then_where_it_was_born():
    text = render(nonfinite_report(), "text")
    first, second, *_ = text.splitlines()
    assert (
        first
        == "diagnose: train.py: inf born at step 4 in forward: net.fc2 (Linear, float16), op linear"
    )
    assert second.split() == ["at:", "train.py:23"]
    assert "first non-finite: step 4, forward, `net.fc2`" in text
    assert "best fix: Train in bfloat16 instead of float16 [use-bf16]" in text


def test_the_first_line_is_read_once_and_the_rest_follows():
    report = nonfinite_report()
    report.script.path = "/a/very/long/" + "nested/" * 6 + "train.py"
    report.event.module = "encoder.layers.11.attention.output.dense"
    lines = render(report, "text").splitlines()
    assert len(lines[0]) <= 120
    assert lines[0] == f"diagnose: {report.script.path}: inf born at step 4 in forward:"
    assert "encoder.layers.11.attention.output.dense (Linear, float16), op linear" in lines[1]


def test_each_sentence_is_said_once():
    report = nonfinite_report()
    report.event.details = [report.event.message.split(": ", 1)[1], "a line of its own"]
    report.fixes[0].evidence = [*report.symptoms[0].evidence, "the fix's own evidence"]
    text = render(report, "text")
    sentences = [line.strip() for line in text.splitlines() if len(line.strip()) > 30]
    repeated = {line for line in sentences if sentences.count(line) > 1}
    assert not repeated
    assert "- a line of its own" in text and "evidence: the fix's own evidence" in text


def test_text_marks_the_producer_frame_and_shows_the_patch():
    text = render(nonfinite_report(), "text")
    producer = [line for line in text.splitlines() if line.lstrip().startswith(">>")]
    assert len(producer) == 1 and "net.fc2" in producer[0] and "inf" in producer[0]
    assert "+model.bfloat16()" in text
    assert "no backward() call found" in text


def test_clean_report_says_so():
    report = Report(status="clean", script={"path": "ok.py"}, history=[{"step": 0}, {"step": 1}])
    assert "clean run" in render(report, "text").splitlines()[0]
    assert "Clean run" in render(report, "markdown")


@pytest.mark.parametrize(
    ("losses", "diverging"),
    [
        ([24.0, 814.0, 1.5e4, 1.5e4, 1.6e4, 1.7e4, 1.6e4], True),  # lr 1e3 on a regression: finite
        ([2.3, 2.1, 1.9, 1.2, 0.9, 0.7, 0.6], False),
        ([2.3, 2.5, 2.2, 2.4, 2.6, 2.5, 2.7], False),  # noisy, flat
    ],
)
def test_a_clean_run_whose_loss_grew_far_is_called_diverging(losses, diverging):
    from diagnose.engine import analyze

    report = analyze(
        Report(
            status="clean",
            script={"path": "ok.py"},
            history=[{"step": i, "loss": v} for i, v in enumerate(losses)],
        )
    )
    for fmt in ("text", "markdown"):
        out = render(report, fmt)
        assert ("it is diverging" in out) == diverging, out
    if diverging:  # the lr fix it gets says what to do
        assert render(report, "text").splitlines()[1] == (
            "  but the loss grew 667x over the run (24 -> 1.6e4): it is diverging"
        )
        assert report.symptoms[0].id == "lr-too-high"
        assert report.fixes[0].id == "lower-learning-rate"


def test_a_clean_run_shows_its_last_frames_not_frames_before_an_event():
    report = nonfinite_report()
    clean = Report(status="clean", script={"path": "ok.py"}, frames=report.frames)
    for fmt, heading in (("text", "Last frames of the run"), ("markdown", "## Last frames")):
        out = render(clean, fmt)
        assert heading in out and "before the event" not in out


def test_terminal_escapes_in_run_text_are_removed_whole_not_interpreted():
    report = nonfinite_report(module="net.\x1b[2Jevil")
    for fmt in ("text", "markdown"):
        out = render(report, fmt)
        assert "\x1b" not in out and "[2J" not in out
        assert "net.evil" in out


def test_color_is_off_with_no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in render(nonfinite_report(), "text", color=True)
    monkeypatch.delenv("NO_COLOR")
    assert "\x1b[" in render(nonfinite_report(), "text", color=True)


def test_json_is_the_report():
    report = nonfinite_report()
    assert json.loads(render(report, "json"))["event"]["module"] == "net.fc2"


def test_markdown_has_sections_and_a_diff_block():
    md = render(nonfinite_report(), "markdown")
    for heading in (
        "## Symptoms",
        "## Fixes, best first",
        "## Frames before the event",
        "## History",
        "## Config",
    ):
        assert heading in md
    assert "```diff" in md


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown format"):
        render(nonfinite_report(), "html")


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "-"),
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (-float("inf"), "-inf"),
        (0.0, "0"),
        (65504.0, "6.6e4"),
        (3.9e4, "3.9e4"),
        (1.5, "1.5"),
        (1e-8, "1.0e-8"),
        (1340.0, "1340"),
        (0.00123, "0.00123"),
    ],
)
def test_numbers_are_compact(value, text):
    assert num(value) == text


def test_safe_keeps_newlines_and_tabs_readable():
    assert safe("a\tb\nc\x07") == "a\tb\nc\\x07"


def test_exception_on_a_rank_says_which_rank():
    report = Report.model_validate(
        {
            "status": "exception",
            "script": {"path": "ddp.py"},
            "event": {
                "kind": "exception",
                "exception_type": "ValueError",
                "message": "bad batch",
                "rank": 1,
                "details": ["raised while loading shard 3"],
            },
        }
    )
    text = render(report, "text")
    assert "on rank 1" in text and "raised while loading shard 3" in text
    assert "on rank 1" in render(report, "markdown")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_an_lr_a_schedule_changed_is_shown_beside_the_lr_the_optimizer_was_built_with(fmt):
    report = nonfinite_report()
    report.config = report.config.model_validate(
        {**report.config.model_dump(), "lr": 39.6, "lr_initial": 1000.0}
    )
    assert "lr 39.6 at the last step (built with 1000)" in render(report, fmt).replace(":", "")
    report.config = report.config.model_validate({**report.config.model_dump(), "lr": 1000.0})
    assert "built with" not in render(report, fmt)


def test_framework_config_and_its_notes_are_shown():
    report = nonfinite_report()
    report.config = report.config.model_validate(
        {
            **report.config.model_dump(),
            "transformers": {
                "learning_rate": 5e-5,
                "max_grad_norm": 1.0,
                "notes": ["logging_nan_inf_filter=True hides nan/inf losses from the logs"],
            },
        }
    )
    text = render(report, "text")
    # floats are written as every other number is (diagnose.formatting.num)
    assert "transformers: learning_rate 5.0e-5, max_grad_norm 1" in text
    assert "note: logging_nan_inf_filter=True hides" in text


def test_a_warmup_given_as_a_ratio_is_shown_and_a_zero_ratio_is_not():
    def config_line(**settings) -> str:
        report = nonfinite_report()
        report.config = report.config.model_validate(
            {**report.config.model_dump(), "transformers": settings}
        )
        return next(x for x in render(report, "text").splitlines() if "transformers:" in x)

    assert config_line(warmup_steps=0, warmup_ratio=0.03).endswith(
        "warmup_steps 0, warmup_ratio 0.03"
    )
    assert "warmup_ratio" not in config_line(warmup_steps=100, warmup_ratio=0.0)


def _interrupted_report(
    message: str = "interrupted at step 1200 by SIGINT: the report holds what the run saw so far",
) -> Report:
    return Report(
        status="interrupted",
        script={"path": "train.py"},
        interruption={"cause": "SIGINT", "stopped_at_step": 1200, "message": message},
        history=[
            {"step": 0, "loss": 2.0},
            {"step": 1, "loss": 1.0, "summary": {"last_step": 1198, "steps": 1198}},
            {"step": 1199, "loss": 0.5},
        ],
        history_note={
            "steps": 1200,
            "first_kept": 1,
            "last_kept": 1,
            "summarized": 1198,
            "message": "history of 1200 steps: the steps between are summarised",
        },
    )


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_an_interrupted_run_says_where_it_stopped_and_what_it_saw(fmt):
    out = render(_interrupted_report(), fmt)
    verdict = out.split("\n\n")[0] if fmt == "text" else out.splitlines()[2]
    assert "interrupted at step 1200 by SIGINT" in verdict
    assert "1200 optimizer steps" in verdict and "clean run" not in verdict.lower()
    assert "the steps between are summarised" in out


def test_an_interruption_message_from_a_report_stays_inert():
    out = render(_interrupted_report("stopped \x1b[31mred\x1b[0m\nsecond line"), "text")
    assert "\x1b" not in out and "second line" not in out
    assert out.splitlines()[0].endswith("stopped red")  # the escape sequences removed whole


def test_a_patch_of_a_config_file_is_headed_with_that_file_in_text_and_markdown():
    report = nonfinite_report()
    fix = report.fixes[0]
    fix.patch_file = "conf/train\x1b[2J.yaml"
    text, markdown = render(report, "text"), render(report, "markdown")
    assert "patch against conf/train.yaml:" in text and "patch against your script" not in text
    assert "Patch against `conf/train.yaml`:" in markdown
    assert "\x1b" not in text + markdown


def _argv_fixes(*argvs: list[str]) -> Report:
    fixes = [
        {
            "id": f"fix-{n}",
            "title": f"Fix {n}",
            "score": 0.9 - n / 10,
            "why": "",
            "example_patch": "",
            "patch_argv": a,
        }
        for n, a in enumerate(argvs)
    ]
    return Report(
        status="nonfinite",
        script={"path": "train.py", "argv": ["--lr", "5", "--grad_clip=0.0"]},
        fixes=fixes,
    )


def test_command_line_fixes_that_touch_different_tokens_are_given_together():
    report = _argv_fixes(["--lr", "0.001", "--grad_clip=0.0"], ["--lr", "5", "--grad_clip=1.0"])
    line = "  [fix-0] and [fix-1] together: python train.py --lr 0.001 --grad_clip=1.0"
    assert line in render(report, "text").splitlines()
    assert "python train.py --lr 0.001 --grad_clip=1.0" in render(report, "markdown")


def test_command_line_fixes_that_change_the_same_token_are_not_given_together():
    report = _argv_fixes(["--lr", "0.001", "--grad_clip=0.0"], ["--lr", "0.5", "--grad_clip=0.0"])
    assert "together" not in render(report, "text")
    appended = _argv_fixes(
        ["--lr", "0.001", "--grad_clip=0.0"], ["--lr", "5", "--grad_clip=0.0", "--warmup=100"]
    )
    assert "python train.py --lr 0.001 --grad_clip=0.0 --warmup=100" in render(appended, "text")
