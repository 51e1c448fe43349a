"""Where a setting's value came from: found from the value, in argv, the files read, the script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from diagnose.capture.files import FileReadWatcher
from diagnose.capture.origins import find_origins
from tests.conftest import ROOT


def _origins(config: dict, argv: list[str], tmp_path: Path, files: dict[str, str] | None = None):
    script = tmp_path / "train.py"
    if not script.exists():
        script.write_text("import torch\n", encoding="utf-8")
    paths = []
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths.append(tmp_path / name)
    return find_origins(config, argv, script.resolve(), paths)


def test_a_dotted_override_token_is_the_origin_of_the_value_it_spells(tmp_path):
    found = _origins({"lr": 500.0}, ["--trainer.learning_rate=500", "--n=3"], tmp_path)
    assert found["lr"]["kind"] == "argv"
    assert found["lr"]["token"] == "--trainer.learning_rate=500"
    assert found["lr"]["index"] == 0 and found["lr"]["key"] == "learning_rate"


def test_the_lr_the_optimizer_was_built_with_is_looked_for_not_the_scheduled_one(tmp_path):
    # a warmup by hand had set the lr to 118.8 at the event; the flag gave 1e3
    config = {"lr": 118.81, "lr_initial": 1000.0}
    found = _origins(config, ["config/train.py", "--learning_rate=1e3"], tmp_path)
    assert found["lr"]["token"] == "--learning_rate=1e3" and found["lr"]["value"] == 1000.0


def test_a_token_says_what_it_replaced_a_config_file_before_the_script(tmp_path):
    (tmp_path / "train.py").write_text("learning_rate = 6e-4\n", encoding="utf-8")
    files = {"cfg.py": "# small model\nlearning_rate = 1e-3\n"}
    argv = ["cfg.py", "--learning_rate=1e3"]
    origin = _origins({"lr": 1000.0}, argv, tmp_path, files)["lr"]
    assert (origin["overrides"], origin["overrides_at"]) == (1e-3, "cfg.py:2")
    alone = _origins({"lr": 1000.0}, argv[1:], tmp_path)["lr"]
    assert (alone["overrides"], alone["overrides_at"]) == (6e-4, "train.py:1")


def test_a_clipping_limit_of_zero_is_the_origin_when_no_clip_ran(tmp_path):
    (tmp_path / "train.py").write_text("grad_clip = 1.0\n", encoding="utf-8")
    found = _origins({"grad_clip": None}, ["--grad_clip=0.0", "--seed=0"], tmp_path)
    assert (found["grad_clip.max"]["token"], found["grad_clip.max"]["value"]) == (
        "--grad_clip=0.0",
        0.0,
    )
    clipped = {"grad_clip": {"kind": "norm", "max": 1.0, "calls": 3}}
    assert _origins(clipped, ["--grad_clip=0.0"], tmp_path)["grad_clip.max"]["value"] == 1.0


def test_a_flag_and_its_separate_value_point_at_the_value_token(tmp_path):
    found = _origins({"lr": 2.0}, ["--steps", "2", "--lr", "2.0"], tmp_path)
    assert found["lr"]["index"] == 3 and found["lr"]["token"] == "2.0"


def test_a_hydra_style_override_without_dashes_is_found(tmp_path):
    found = _origins({"lr": 1000.0}, ["optimizer.lr=1e3", "+trainer.max_epochs=1"], tmp_path)
    assert found["lr"]["token"] == "optimizer.lr=1e3"


def test_a_value_that_only_another_setting_spells_is_not_taken(tmp_path):
    assert _origins({"lr": 3.0}, ["--epochs=3", "--seed", "3"], tmp_path) == {}


def test_a_nested_yaml_key_gives_the_file_and_line(tmp_path):
    text = "trainer:\n  max_epochs: 3\nmodel:\n  lr: 1000\n"
    found = _origins({"lr": 1000.0}, ["--config", "cfg.yaml"], tmp_path, {"cfg.yaml": text})
    origin = found["lr"]
    assert (origin["kind"], Path(origin["file"]).name, origin["line"]) == (
        "config-file",
        "cfg.yaml",
        4,
    )
    assert origin["text"] == "1000" and len(origin["sha256"]) == 64


def test_json_settings_and_a_disabled_clipping_limit_are_found(tmp_path):
    text = json.dumps({"learning_rate": 2000.0, "max_grad_norm": 0.0}, indent=1)
    config = {"lr": 2000.0, "transformers": {"max_grad_norm": 0.0}}
    found = _origins(config, [], tmp_path, {"args.json": text})
    assert found["lr"]["line"] == 2 and found["grad_clip.max"]["line"] == 3
    assert found["grad_clip.max"]["value"] == 0.0


def test_a_literal_call_argument_in_the_script_is_the_origin_when_nothing_else_spells_it(
    tmp_path,
):
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        "if lr == 2000.0:\n"
        "    pass\n"
        'args = TrainingArguments(output_dir="o", learning_rate=2000.0)\n',
        encoding="utf-8",
    )
    found = _origins({"lr": 2000.0}, [], tmp_path)
    assert (found["lr"]["kind"], found["lr"]["line"]) == ("script", 4)


def test_the_command_line_wins_over_a_file_and_a_file_over_the_script(tmp_path):
    (tmp_path / "train.py").write_text("learning_rate = 0.5\n", encoding="utf-8")
    files = {"override.py": "learning_rate = 0.5\n"}
    assert _origins({"lr": 0.5}, ["override.py"], tmp_path, files)["lr"]["kind"] == "config-file"
    argv = ["override.py", "--learning_rate=0.5"]
    assert _origins({"lr": 0.5}, argv, tmp_path, files)["lr"]["kind"] == "argv"


def test_a_switch_turned_on_is_found_as_a_flag_a_file_key_or_a_call_argument(tmp_path):
    config = {"transformers": {"fp16": True}}
    flag = _origins(config, ["--fp16", "--output_dir", "o"], tmp_path)["fp16"]
    assert (flag["kind"], flag["index"], flag["value"]) == ("argv", 0, True)
    assert "fp16" not in _origins(config, ["--fp16", "false"], tmp_path)
    files = {"args.json": '{\n  "output_dir": "o",\n  "fp16": true\n}\n'}
    spelt = _origins(config, ["args.json"], tmp_path, files)["fp16"]
    assert (spelt["kind"], Path(spelt["file"]).name, spelt["line"]) == (
        "config-file",
        "args.json",
        3,
    )
    (tmp_path / "train.py").write_text(
        'args = TrainingArguments(output_dir="o", fp16=True)\n', encoding="utf-8"
    )
    assert _origins(config, [], tmp_path)["fp16"]["kind"] == "script"
    assert "fp16" not in _origins({"transformers": {"fp16": False}}, ["--fp16"], tmp_path)


TRAINER = {
    "init_args": {"max_epochs": 2, "accelerator": "cpu", "logger": False, "precision": None},
    "init_changed": ["max_epochs", "accelerator", "logger"],
}


def test_the_trainer_section_of_a_yaml_config_that_spells_its_arguments_is_where_they_came_from(
    tmp_path,
):
    stale = "trainer:\n  max_epochs: 50\n  accelerator: cpu\n"  # another run's settings
    used = "seed: 0\nfit:\n  trainer:\n    accelerator: cpu\n    max_epochs: 2\n"
    files = {"old.yaml": stale, "cli.yaml": used}
    found = _origins({"lightning": TRAINER}, [], tmp_path, files)
    origin = found["lightning.Trainer"]
    assert (origin["kind"], Path(origin["file"]).name, origin["line"]) == (
        "config-file",
        "cli.yaml",
        3,
    )
    assert origin["key"] == "trainer" and len(origin["sha256"]) == 64


def test_the_trainer_call_in_the_script_or_trainer_tokens_are_the_next_places(tmp_path):
    (tmp_path / "train.py").write_text(
        "import lightning as L\n# L.Trainer(max_epochs=9)\ntrainer = L.Trainer(max_epochs=2)\n",
        encoding="utf-8",
    )
    found = _origins({"lightning": TRAINER}, [], tmp_path)
    assert (found["lightning.Trainer"]["kind"], found["lightning.Trainer"]["line"]) == (
        "script",
        3,
    )
    (tmp_path / "train.py").write_text("from lightning.pytorch.cli import LightningCLI\n")
    argv = ["fit", "--model.lr=3", "--trainer.max_epochs=2"]
    origin = _origins({"lightning": TRAINER}, argv, tmp_path)["lightning.Trainer"]
    assert (origin["kind"], origin["index"], origin["token"]) == ("argv", 2, argv[2])


def test_a_trainer_left_at_its_defaults_has_no_place(tmp_path):
    config = {"lightning": {**TRAINER, "init_changed": []}}
    files = {"cli.yaml": "trainer:\n  max_epochs: 2\n"}
    assert "lightning.Trainer" not in _origins(config, [], tmp_path, files)


def test_the_file_watcher_records_config_files_read_only_while_installed(tmp_path):
    first, second, data = tmp_path / "a.yaml", tmp_path / "b.toml", tmp_path / "w.yaml"
    for path in (first, second):
        path.write_text("lr: 1\n", encoding="utf-8")
    watcher = FileReadWatcher()
    watcher.install()
    first.read_text()
    with open(data, "w") as out:  # written, not read: not a config the run read
        out.write("x: 1\n")
    watcher.uninstall()
    second.read_text()
    assert watcher.paths() == [first]


def test_a_process_that_watches_many_runs_adds_one_audit_hook(tmp_path):
    """An audit hook cannot be removed: one hook per run would slow every later open, import
    and exec of a long-lived process (a notebook, a sweep) run after run."""
    config = tmp_path / "c.yaml"
    config.write_text("lr: 1\n", encoding="utf-8")
    program = f"""
import sys
added = []
real = sys.addaudithook
sys.addaudithook = lambda hook: (added.append(hook), real(hook))[1]
from diagnose.capture.files import FileReadWatcher
for _ in range(50):
    watcher = FileReadWatcher()
    watcher.install()
    open({str(config)!r}).close()
    watcher.uninstall()
print(len(added), len(watcher.paths()))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["1", "1"], done.stderr


def test_a_float16_dtype_chosen_by_name_is_found_as_a_token_a_file_key_or_a_script_line(tmp_path):
    config = {"precision": "fp16-autocast"}
    argv = ["config/train.py", "--dtype=float16"]
    assert _origins(config, argv, tmp_path)["precision"]["token"] == "--dtype=float16"
    origin = _origins(config, ["--dtype", "float16"], tmp_path)["precision"]
    assert (origin["index"], origin["value"]) == (1, "float16")
    files = {"override.py": "batch_size = 8\ndtype = 'float16'\n"}
    origin = _origins(config, [], tmp_path, files)["precision"]
    assert (Path(origin["file"]).name, origin["line"], origin["value"]) == (
        "override.py",
        2,
        "float16",
    )
    mixed = {"train.yaml": "trainer:\n  mixed_precision: fp16\n"}
    assert _origins(config, [], tmp_path, mixed)["precision"]["value"] == "fp16"


def test_the_scripts_docstrings_spell_no_setting(tmp_path):
    (tmp_path / "train.py").write_text(
        '"""Set ``dtype = \'float16\'`` or lr=0.5 to see it fail."""\n'
        "lr = 0.5\n"
        'dtype = "float16"\n',
        encoding="utf-8",
    )
    found = _origins({"precision": "fp16-autocast", "lr": 0.5}, [], tmp_path)
    assert (found["precision"]["line"], found["lr"]["line"]) == (3, 2)
    assert found["precision"]["candidates"] == found["lr"]["candidates"] == 1


def test_a_float32_run_has_no_dtype_origin(tmp_path):
    assert "precision" not in _origins({"precision": "fp32"}, ["--dtype=float16"], tmp_path)


def test_what_a_token_replaced_may_be_a_default_in_the_users_own_module(tmp_path):
    (tmp_path / "proj").mkdir()
    module = tmp_path / "proj" / "trainer.py"
    module.write_text("def defaults(C):\n    C.learning_rate = 3e-4\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("from proj.trainer import defaults\n", encoding="utf-8")
    argv = ["--trainer.learning_rate=500"]
    found = find_origins({"lr": 500.0}, argv, script.resolve(), [], [module])
    origin = found["lr"]
    assert (origin["kind"], origin["overrides"], origin["overrides_at"]) == (
        "argv",
        3e-4,
        "proj/trainer.py:2",
    )
    # a module is only read for what a token replaced: it is never the value's origin
    assert "lr" not in find_origins({"lr": 3e-4}, [], script.resolve(), [], [module])


def test_a_no_decay_groups_zero_is_not_what_a_decay_token_replaced(tmp_path, monkeypatch):
    # a package beside the project (on PYTHONPATH), whose model file builds param groups
    package = tmp_path / "lib" / "pkg"
    package.mkdir(parents=True)
    model = package / "model.py"
    model.write_text('groups = [{"params": p, "weight_decay": 0.0}]\n', encoding="utf-8")
    trainer = package / "trainer.py"
    trainer.write_text("def defaults(C):\n    C.weight_decay = 0.1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    script = tmp_path / "project" / "train.py"
    script.parent.mkdir()
    script.write_text("import pkg.trainer\n", encoding="utf-8")
    config = {"param_groups": [{"lr": 5e-4, "weight_decay": 500.0}]}
    argv = ["--trainer.weight_decay=500.0"]
    origin = find_origins(config, argv, script.resolve(), [], [model, trainer])["weight_decay"]
    assert (origin["overrides"], origin["overrides_at"]) == (0.1, "pkg/trainer.py:2")


def test_the_users_own_folders_are_the_scripts_the_project_root_and_pythonpath(
    tmp_path, monkeypatch
):
    from diagnose.capture.core import _own_folders

    script = tmp_path / "projects" / "demo" / "train.py"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    assert _own_folders(script) == [script.parent, tmp_path, (tmp_path / "lib").resolve()]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a working directory the script is not below
    monkeypatch.delenv("PYTHONPATH")
    assert _own_folders(script) == [script.parent]


def test_installed_standard_library_and_diagnoses_own_modules_are_never_the_users_own(
    monkeypatch,
):
    import json as stdlib_module

    import torch

    import diagnose.capture.origins as own_module
    from diagnose.capture.core import _own_modules

    modules = {"json": stdlib_module, "torch": torch, "diagnose.capture.origins": own_module}
    monkeypatch.setattr("sys.modules", modules)
    roots = [Path(m.__file__).parents[2] for m in modules.values()]
    assert _own_modules(roots) == []


def test_an_imported_modules_source_is_not_a_file_the_run_read(tmp_path, monkeypatch):
    (tmp_path / "settings_module_under_test.py").write_text("learning_rate = 3e-4\n")
    config = tmp_path / "train.yaml"
    config.write_text("lr: 0.5\n")
    exec_d = tmp_path / "override.py"
    exec_d.write_text("learning_rate = 0.5\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    watcher = FileReadWatcher()
    watcher.install()
    try:
        import settings_module_under_test  # noqa: F401

        config.read_text()
        exec(exec_d.read_text(), {})  # a configurator: read, not imported
        read = {p.name for p in watcher.paths()}
    finally:
        watcher.uninstall()
        sys.modules.pop("settings_module_under_test", None)
    assert read == {"train.yaml", "override.py"}
