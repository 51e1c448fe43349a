"""The tracing options' bounds: the command line and the Python API refuse the same values
with the same words, before the script runs."""

from __future__ import annotations

import pytest

from diagnose import cli
from diagnose.errors import ExitStatus
from diagnose.options import MAX_FRAMES, MAX_NPROC, OptionError
from diagnose.runner import RunOptions, diagnose_script
from diagnose.tracer import Tracer

BAD = [
    ("frames", 0),
    ("sample_every", 0),
    ("detail_every", -3),
    ("max_steps", 0),
    ("max_steps", -1),
]


@pytest.fixture
def script(tmp_path):
    """A script that leaves a mark when it runs, so a refusal can be seen to come first."""
    path = tmp_path / "train.py"
    path.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    return path


@pytest.mark.parametrize(("name", "value"), BAD)
def test_the_cli_and_the_python_api_refuse_the_same_value_with_the_same_words(
    name, value, script, capsys
):
    flag = "--" + name.replace("_", "-")
    assert cli.main(["run", flag, str(value), str(script)]) == ExitStatus.USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert line == f"diagnose: error: {flag} must be at least 1, not {value}"
    with pytest.raises(ValueError) as refused:
        diagnose_script(script, **{name: value})
    assert str(refused.value) == f"{name} must be at least 1, not {value}"
    if name != "max_steps":  # the tracer has no step cap; the runner has
        with pytest.raises(ValueError) as refused_by_tracer:
            Tracer(**{name: value})
        assert str(refused_by_tracer.value) == str(refused.value)
    assert not (script.parent / "ran").exists()


@pytest.mark.parametrize("value", [2.5, "3", True, None])
def test_a_tracer_option_that_is_not_a_whole_number_is_refused_in_one_line(value):
    with pytest.raises(OptionError) as refused:
        Tracer(frames=value)
    assert str(refused.value) == f"frames must be a whole number, not {value!r}"


def test_max_steps_none_means_no_cap_and_the_defaults_are_accepted():
    assert RunOptions(max_steps=None).max_steps is None
    Tracer()  # the defaults pass their own checks


def test_nproc_is_checked_with_the_same_words(script, capsys):
    assert cli.main(["run", "--nproc", "0", str(script)]) == ExitStatus.USAGE
    assert capsys.readouterr().err.strip() == "diagnose: error: --nproc must be at least 1, not 0"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--frames", str(MAX_FRAMES + 1)],
            f"--frames must be at most {MAX_FRAMES:,}, not {MAX_FRAMES + 1}",
        ),
        (["--frames", "9" * 23], f"--frames must be at most {MAX_FRAMES:,}, not {'9' * 23}"),
        (
            ["--frames", "9" * 400],
            f"--frames must be at most {MAX_FRAMES:,}, not '99999999... (400 digits)'",
        ),
        (["--nproc", "99999999999"], f"--nproc must be at most {MAX_NPROC}, not 99999999999"),
    ],
)
def test_a_number_that_would_cost_memory_or_processes_is_refused_before_the_run(
    argv, line, script, capsys
):
    assert cli.main(["run", *argv, str(script)]) == ExitStatus.USAGE
    assert capsys.readouterr().err.splitlines() == [f"diagnose: error: {line}"]
    assert not (script.parent / "ran").exists()
    with pytest.raises(OptionError):
        Tracer(frames=MAX_FRAMES + 1)
    Tracer(frames=MAX_FRAMES)  # the bound itself is allowed
