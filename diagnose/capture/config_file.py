"""``--config FILE``: training facts the run cannot see, merged over the captured ones.

A config file is a YAML or JSON mapping using the report's ``config`` keys, e.g.::

    precision: fp16-autocast      # also accepted: fp16, bf16, 16-mixed, bf16-mixed, float16 ...
    lr: 3e-4
    grad_clip: 1.0                # a number means clip_grad_norm_ with that max
    grad_scaler: true
    warmup_steps: 500             # any other key is kept as given

User values add to or override captured ones; ``config["sources"]`` names every key that came
from the file (dotted for nested keys, e.g. ``"grad_clip.max": "config-file"``).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from diagnose import jsonsafe, yamlsafe
from diagnose.errors import UsageError, read_user_text
from diagnose.report import Config
from diagnose.yamlsafe import YAMLLimitError

PRECISIONS = ("fp32", "fp16", "bf16", "fp64", "fp16-autocast", "bf16-autocast", "mixed", "unknown")
PRECISION_ALIASES = {
    "float32": "fp32",
    "32": "fp32",
    "32-true": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "16-true": "fp16",
    "bfloat16": "bf16",
    "bf16-true": "bf16",
    "float64": "fp64",
    "64": "fp64",
    "64-true": "fp64",
    "16-mixed": "fp16-autocast",
    "16": "fp16-autocast",
    "amp": "fp16-autocast",
    "fp16-amp": "fp16-autocast",
    "bf16-mixed": "bf16-autocast",
    "bf16-amp": "bf16-autocast",
}
# YAML 1.1 (PyYAML) reads 1e-3 as a string; YAML 1.2 and every user mean a number.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON config file; ``UsageError`` with one clear line when it is bad."""
    path = Path(path)
    text = read_user_text(path, "config file")
    if path.suffix.lower() == ".json":
        try:
            data = jsonsafe.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
            ) from None
        except ValueError as exc:  # nested too deep, an endless integer
            raise UsageError(f"{path}: not JSON that can be read: {exc}") from None
    else:
        try:
            data = yamlsafe.load(text)
        except yaml.YAMLError as exc:
            raise UsageError(_yaml_error(path, exc)) from None
        except YAMLLimitError as exc:
            raise UsageError(f"{path}: {exc}") from None
        data = _numbers(data)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}: a config file holds a mapping of facts (e.g. 'lr: 0.001'), got {_kind(data)}"
        )
    if set(data) == {"config"} and isinstance(data["config"], dict):
        data = data["config"]  # the config section of a saved report
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise UsageError(f"{path}: keys must be names, got {bad[0]!r}")
    return data


def merge_config(
    captured: dict[str, Any],
    user: dict[str, Any],
    *,
    source: str = "config-file",
    origin: str | None = None,
) -> dict[str, Any]:
    """``captured`` with ``user``'s facts added or overriding; validates as ``Config``.

    ``origin`` (e.g. the file path) prefixes error messages.
    """
    where = origin or source
    merged = copy.deepcopy(captured)
    sources: dict[str, str] = dict(merged.get("sources") or {})
    _merge(merged, _normalise(user, merged, where), "", source, sources)
    merged["sources"] = sources
    try:
        validated = Config.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        raise UsageError(f"{where}: {key}: {error['msg']}") from None
    for key in ("precision", "optimizer", "lr", "grad_scaler"):
        merged[key] = getattr(validated, key)
    if validated.grad_clip is not None:
        merged["grad_clip"] = validated.grad_clip.model_dump()
    return merged


def _normalise(user: dict[str, Any], captured: dict[str, Any], where: str) -> dict[str, Any]:
    user = {k: v for k, v in user.items() if k != "sources"}
    if "precision" in user:
        value = str(user["precision"]).strip().lower()
        value = PRECISION_ALIASES.get(value, value)
        if value not in PRECISIONS:
            raise UsageError(
                f"{where}: precision: {user['precision']!r} is not one of {', '.join(PRECISIONS)}"
            )
        user["precision"] = value
    clip = user.get("grad_clip")
    if isinstance(clip, (int, float)) and not isinstance(clip, bool):
        user["grad_clip"] = {"kind": "norm", "max": float(clip)}
    elif (
        isinstance(clip, dict)
        and "kind" not in clip
        and not isinstance(captured.get("grad_clip"), dict)
    ):
        user["grad_clip"] = {"kind": "norm", **clip}
    elif clip is not None and not isinstance(clip, dict):
        raise UsageError(
            f"{where}: grad_clip: give a number (max norm), a mapping with kind "
            f"and max, or null; got {clip!r}"
        )
    return user


def _merge(
    into: dict[str, Any], user: dict[str, Any], prefix: str, source: str, sources: dict[str, str]
) -> None:
    for key, value in user.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, f"{path}.", source, sources)
        else:
            into[key] = copy.deepcopy(value)
            sources[path] = source


def _numbers(data: Any) -> Any:
    if isinstance(data, str) and _EXPONENT_FLOAT.match(data):
        return float(data)
    if isinstance(data, list):
        return [_numbers(v) for v in data]
    if isinstance(data, dict):
        return {k: _numbers(v) for k, v in data.items()}
    return data


def _yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}"
    return f"{path}: not valid YAML: {problem}"


def _kind(data: Any) -> str:
    return {
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
    }.get(type(data), type(data).__name__)
