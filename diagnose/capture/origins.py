"""Where each setting's value came from: the argv token, or the file and line that spell it.

A fix changes a setting (the lr, the clipping limit, an eps); the change belongs where the run
got the value. That place is found from the value itself, never from knowing a script or a
library: the run's value is looked for

1. in the command line, as a token ``--key=value``, ``--key value``, ``key=value`` (Hydra,
   OmegaConf and ``exec``'d configurators) or ``+key=value``, whose last dotted key names the
   setting (``--trainer.learning_rate=500`` names ``learning_rate``);
2. in the files the run read (``capture.files``) and in the script, as ``key: value``,
   ``key = value``, ``"key": value`` or a call's ``key=value``.

A token wins over a file (a command line overrides a config file in every library that reads
both); a config file wins over the script. Several places of the best kind that spell the
value make the origin ambiguous: the first is kept and ``candidates`` says how many there were.

When no clip ran at all, a clipping limit of 0 given somewhere (``--grad_clip=0.0``) is the
clipping limit's origin: it is what switched the script's ``if grad_clip != 0.0:`` clip off.

A switch (transformers' ``fp16=True``) is looked for the same way, as ``--fp16`` (alone, or
with a true value), ``fp16: true`` / ``"fp16": true`` / ``fp16=True``.

A setting the run never set has no value to look for; a fix that turns it on (Lightning's
``gradient_clip_val``) belongs beside the settings given with it. So the place where the run's
Lightning ``Trainer`` got its arguments is found too (``"lightning.Trainer"``), from the
arguments it was given other than their defaults: a ``trainer:`` mapping in a YAML config the
run read (LightningCLI's ``--config``, a Hydra or OmegaConf file) whose keys hold those values
and none other, a ``Trainer(...)`` call in the script, or ``--trainer.KEY`` tokens. The
same for transformers' ``TrainingArguments`` (``"transformers.TrainingArguments"``), from the
fields away from their defaults: the top-level mapping of a JSON or YAML file the run read (as
``HfArgumentParser.parse_json_file`` reads one), a ``TrainingArguments(...)`` call (or the
subclass's) in the script, or ``--FIELD`` tokens (``parse_args_into_dataclasses``).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# setting -> the key names (the last dotted part, lower case, '-' read as '_') that spell it
KEYS = {
    "lr": re.compile(r"^(?:\w*_)?(?:lr|learning_rate)$"),
    "grad_clip.max": re.compile(
        r"^(?:\w*_)?(?:max_grad_norm|grad_clip|clip_grad(?:_norm|_val|_value)?|"
        r"gradient_clip_val|clip_norm|max_norm|clip)$"
    ),
    "eps": re.compile(r"^(?:\w*_)?(?:eps|epsilon)$"),
    "weight_decay": re.compile(r"^(?:\w*_)?(?:weight_decay|wd)$"),
}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ASSIGNMENT = re.compile(
    rf"""(?<![\w.=!<>])["']?([A-Za-z_][\w.-]*)["']?\s*(?<![=!<>])[:=](?!=)\s*({_NUMBER})(?![\w.])"""
)
MAX_LINES = 20_000
MAX_BYTES = 1 << 20  # a config file; a bigger file is data, not settings


def setting_values(config: dict[str, Any]) -> dict[str, float]:
    """The run's value of each setting a fix may change (the ones the capture knows)."""
    # the lr the optimizer was built with: a schedule (a warmup by hand) changes its lr after
    values: dict[str, Any] = {"lr": config.get("lr")}
    initial = _number(config.get("lr_initial"))
    if initial is not None and initial > 0:
        values["lr"] = initial
    if values["lr"] is None:
        values["lr"] = hand_written_lr(config)
    clip = config.get("grad_clip") or config.get("grad_clip_inactive") or {}
    hf = config.get("transformers") or {}
    pl = config.get("lightning") or {}
    for candidate in (clip.get("max"), hf.get("max_grad_norm"), pl.get("gradient_clip_val")):
        if _number(candidate) is not None:
            values["grad_clip.max"] = candidate
            break
    groups = config.get("param_groups") or []
    if groups and isinstance(groups[0], dict):
        values["eps"] = groups[0].get("eps")
        decay = _number(groups[0].get("weight_decay"))
        values["weight_decay"] = decay if decay else None  # a decay of 0 has no origin to find
    return {k: float(v) for k, v in values.items() if _number(v) is not None}


def hand_written_lr(config: dict[str, Any]) -> float | None:
    """The lr of a run that updates its weights by hand (no torch.optim optimizer): the value
    of the script's one parsed flag named like an lr (``--lr``, ``--learning_rate``)."""
    if config.get("optimizer"):
        return None
    args = config.get("args") or {}
    found = [
        value
        for dest, value in args.items()
        if isinstance(dest, str) and KEYS["lr"].match(dest.lower().replace("-", "_"))
    ]
    value = _number(found[0]) if len(found) == 1 else None
    return value if value is not None and value > 0 else None


def find_origins(
    config: dict[str, Any],
    argv: list[str],
    script: Path | None,
    files: Iterable[Path],
    modules: Iterable[Path] = (),
) -> dict[str, dict[str, Any]]:
    """setting -> its origin (see the module docstring), for every setting found somewhere.

    ``modules``: the user's own modules the run imported; they are only read for what a
    command-line token replaced (a default set in a project's config module), never taken as
    a setting's origin.
    """
    texts = _texts([*files, *([script] if script else [])])
    module_paths = list(modules)

    @functools.cache
    def defaults() -> dict[Path, str]:  # read only when a token replaced something
        return {p: t for p, t in _texts(module_paths).items() if p not in texts}

    found: dict[str, dict[str, Any]] = {}
    for setting, value in setting_values(config).items():
        origin = origin_of(setting, value, argv, script, texts, defaults)
        if origin is not None:
            found[setting] = origin
    if "grad_clip.max" not in found and not config.get("grad_clip"):
        # no clip ran: a limit of 0 given somewhere is what switched the script's clip off
        origin = origin_of("grad_clip.max", 0.0, argv, script, texts)
        if origin is not None:
            found["grad_clip.max"] = origin
    found.update(_precision_origins(config, argv, script, texts))
    for place in (LIGHTNING_TRAINER, TRAINING_ARGUMENTS):
        described = config.get(place.config_key) or {}
        init_args = described.get("init_args") or {}
        changed = {k: init_args[k] for k in described.get("init_changed") or () if k in init_args}
        if changed:
            call = place.call or str(described.get("class") or "")
            origin = section_origin(place, init_args, changed, argv, script, texts, call)
            if origin is not None:
                found[place.origin] = origin
    return found


def _precision_origins(
    config: dict[str, Any], argv: list[str], script: Path | None, texts: dict[Path, str]
) -> dict[str, dict[str, Any]]:
    """Where the run's float16 was chosen: a dtype named as a string (``"precision"``), and
    the TrainingArguments switches turned on (``"fp16"``)."""
    found: dict[str, dict[str, Any]] = {}
    precision = str(config.get("precision") or "")
    if precision.startswith("fp16") or precision == "mixed":
        origin = dtype_origin(argv, script, texts)
        if origin is not None:
            found["precision"] = origin
    hf = config.get("transformers") or {}
    for switch in SWITCHES:
        if hf.get(switch) is True:
            origin = switch_origin(switch, argv, script, texts)
            if origin is not None:
                found[switch] = origin
    return found


# TrainingArguments switches a fix turns off or swaps (fp16 -> bf16)
SWITCHES = ("fp16",)
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def switch_origin(
    switch: str, argv: list[str], script: Path | None, texts: dict[Path, str]
) -> dict[str, Any] | None:
    """Where a switch that is on was turned on: ``--fp16`` (alone or with a true value),
    else ``fp16: true`` / ``"fp16": true`` / ``fp16=True`` in a file read, else the script."""
    flag = f"--{switch}"
    tokens = []
    for index, token in enumerate(argv):
        key, sep, raw = token.partition("=")
        if key != flag:
            continue
        after = argv[index + 1] if index + 1 < len(argv) else ""
        if (sep and raw.lower() in _TRUE) or (not sep and after.lower() not in _FALSE):
            tokens.append({"kind": "argv", "index": index, "token": token})
    if tokens:
        return {**tokens[-1], "key": switch, "value": True, "candidates": len(tokens)}
    spelt = switch_spelling(switch)
    places = []
    for path, text in texts.items():
        in_script = script is not None and path == script
        for number, line in enumerate(text.splitlines()[:MAX_LINES], start=1):
            match = spelt.search(line.split("#", 1)[0])
            if match is not None:
                places.append((in_script, path, number, switch, match.group("value")))
    return _best_place(places, texts, True)


def switch_spelling(switch: str) -> re.Pattern[str]:
    """``fp16: true`` / ``"fp16": true`` / ``fp16=True`` (groups: ``quote``, the switch's
    quote; ``rest``, what follows its name; ``value``, the true value)."""
    return re.compile(
        rf"""(?<![\w.])(?P<quote>["']?){re.escape(switch)}"""
        rf"""(?P<rest>["']?\s*[:=]\s*(?P<value>true|True|1))(?![\w.])"""
    )


# a setting that names the run's float16 dtype as a string (nanoGPT's --dtype=float16)
DTYPE_KEY = re.compile(r"^(?:\w*_)?(?:dtype|precision|amp_dtype|mixed_precision)$")
HALF_SPELLINGS = {"float16": "bfloat16", "fp16": "bf16"}  # and their bfloat16 spellings
DTYPE_ASSIGNMENT = re.compile(
    r"""(?<![\w.])["']?(?P<key>[A-Za-z_][\w.-]*)["']?\s*[:=]\s*(?P<quote>["']?)"""
    r"""(?P<value>float16|fp16)(?P=quote)(?![\w.])"""
)


def dtype_origin(
    argv: list[str], script: Path | None, texts: dict[Path, str]
) -> dict[str, Any] | None:
    """Where a float16 dtype was chosen by name: a token ``--dtype=float16`` /
    ``--dtype float16`` / ``dtype=fp16``, else ``dtype = 'float16'`` (``dtype: fp16``) in a file
    the run read, else in the script. The key must name a dtype or a precision."""
    tokens = []
    for index, token in enumerate(argv):
        key, sep, raw = token.partition("=")
        at = index
        if not sep:
            if not token.startswith("--") or index + 1 >= len(argv):
                continue
            raw, at = argv[index + 1], index + 1
        name = key_name(key)
        if DTYPE_KEY.match(name) and raw.strip("'\"") in HALF_SPELLINGS:
            tokens.append({"kind": "argv", "index": at, "token": argv[at], "key": name})
    if tokens:
        best = tokens[-1]
        value = argv[best["index"]].partition("=")[2] or argv[best["index"]]
        return {**best, "value": value.strip("'\""), "candidates": len(tokens)}
    places = []
    for path, text in texts.items():
        in_script = script is not None and path == script
        for number, line in enumerate(text.splitlines()[:MAX_LINES], start=1):
            for match in DTYPE_ASSIGNMENT.finditer(line.split("#", 1)[0]):
                name = key_name(match.group("key"))
                if DTYPE_KEY.match(name):
                    places.append((in_script, path, number, name, match.group("value")))
    origin = _best_place(places, texts, None)
    if origin is not None:
        origin["value"] = origin["text"]  # the spelling on the winning line
    return origin


@dataclass(frozen=True)
class ArgumentsPlace:
    """How one framework object's arguments are spelt: ``section`` is the key of their mapping
    in a config file (None: the file's top-level mapping, as ``HfArgumentParser`` reads a JSON
    or YAML file), ``prefix`` starts their command-line tokens, ``call`` is the name of the
    class whose call in the script takes them (None: the class the capture saw)."""

    origin: str  # the key of ``config.origins``
    config_key: str  # where the capture described the object
    section: str | None
    prefix: str
    call: str | None


LIGHTNING_TRAINER = ArgumentsPlace(
    "lightning.Trainer", "lightning", "trainer", "--trainer.", "Trainer"
)
TRAINING_ARGUMENTS = ArgumentsPlace(
    "transformers.TrainingArguments", "transformers", None, "--", None
)


def section_origin(
    place: ArgumentsPlace,
    given: dict[str, Any],
    changed: dict[str, Any],
    argv: list[str],
    script: Path | None,
    texts: dict[Path, str],
    call: str,
) -> dict[str, Any] | None:
    """Where a framework object got its arguments (see the module docstring): ``given`` are
    all its arguments as the run bound them, ``changed`` those away from their defaults; a
    config file that spells them, else a ``call(...)`` in the script, else command-line
    tokens."""
    key = place.section or call
    places = []
    for path, text in texts.items():
        if script is not None and path == script:
            continue
        for line, matched in _yaml_sections(text, place.section, given, changed):
            places.append((matched, path, line))
    if places:
        places.sort(key=lambda p: -p[0])
        _, path, line = places[0]
        return {
            "kind": "config-file",
            "file": str(path),
            "line": line,
            "key": key,
            "sha256": _digest(texts[path]),
            "candidates": len(places),
        }
    if script is not None and script in texts and call.isidentifier():
        called = re.compile(rf"\b{re.escape(call)}\s*\(")
        lines = [
            number
            for number, code in enumerate(texts[script].splitlines()[:MAX_LINES], start=1)
            if called.search(code.split("#", 1)[0]) and not _DEFINITION.match(code)
        ]
        if lines:
            return {
                "kind": "script",
                "file": str(script),
                "line": lines[0],
                "key": key,
                "candidates": len(lines),
            }
    prefix = place.prefix
    tokens = [
        (index, token)
        for index, token in enumerate(argv)
        if token.startswith(prefix) and token[len(prefix) :].partition("=")[0] in given
    ]
    if tokens:
        index, token = tokens[0]
        return {
            "kind": "argv",
            "key": key,
            "token": token,
            "index": index,
            "candidates": len(tokens),
        }
    return None


_DEFINITION = re.compile(r"\s*(?:class|def)\s")


def _yaml_sections(
    text: str, section: str | None, given: dict[str, Any], changed: dict[str, Any]
) -> list[tuple[int, int]]:
    """(line, how many changed arguments it spells) for each ``section:`` mapping of a YAML
    (or JSON) text that spells at least one changed argument and contradicts none; with no
    ``section``, the text's top-level mapping."""
    import yaml

    from diagnose.yamlsafe import YAMLLimitError, compose

    try:
        _, root = compose(text)
    except (yaml.YAMLError, YAMLLimitError, ValueError):
        return []
    constructor = yaml.SafeLoader("")
    if section is None:
        matched = _spelt(root, constructor, given, changed) if _is_mapping(root) else 0
        return [(root.start_mark.line + 1, matched)] if matched else []
    found = []
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if not isinstance(node, yaml.MappingNode):
            if isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)
            continue
        for key, value in node.value:
            stack.append(value)
            if not (isinstance(key, yaml.ScalarNode) and key.value == section):
                continue
            if not isinstance(value, yaml.MappingNode):
                continue
            matched = _spelt(value, constructor, given, changed)
            if matched:
                found.append((key.start_mark.line + 1, matched))
    return found


def _is_mapping(node: Any) -> bool:
    import yaml

    return isinstance(node, yaml.MappingNode)


def _spelt(mapping: Any, constructor: Any, given: dict[str, Any], changed: dict[str, Any]) -> int:
    """How many changed arguments a mapping node spells; 0 when it contradicts one."""
    import yaml

    matched = 0
    for child, setting in mapping.value:
        name = child.value if isinstance(child, yaml.ScalarNode) else None
        if name not in given or not isinstance(setting, yaml.ScalarNode):
            continue
        try:
            spelt = constructor.construct_object(setting)
        except yaml.YAMLError:
            continue
        if not _same_setting(spelt, given[name]):
            return 0
        matched += name in changed
    return matched


def _same_setting(spelt: Any, value: Any) -> bool:
    if isinstance(spelt, bool) or isinstance(value, bool):
        return spelt is value
    if isinstance(spelt, (int, float)) and isinstance(value, (int, float)):
        return _same(float(spelt), float(value))
    return spelt == value


def origin_of(
    setting: str,
    value: float,
    argv: list[str],
    script: Path | None,
    texts: dict[Path, str],
    defaults: Callable[[], dict[Path, str]] | None = None,
) -> dict[str, Any] | None:
    keys = KEYS[setting]
    tokens = [t for t in argv_places(argv) if keys.match(t["key"]) and _same(t["number"], value)]
    if tokens:
        best = dict(tokens[-1])  # the last one given wins
        del best["number"]
        found = {**best, "value": value, "candidates": len(tokens)}
        found.update(_overridden(best["key"], value, script, texts, defaults or dict))
        return found
    places = []
    for path, text in texts.items():
        in_script = script is not None and path == script
        for place in file_places(text):
            if keys.match(place["key"]) and _same(place["number"], value):
                places.append((in_script, path, place["line"], place["key"], place["text"]))
    return _best_place(places, texts, value)


def _best_place(
    places: list[tuple[bool, Path, int, str, str]], texts: dict[Path, str], value: Any
) -> dict[str, Any] | None:
    """The origin among ``(in_script, path, line, key, text)`` places that spell a value: a
    config file wins over the script; ``candidates`` counts the places of the winning kind."""
    if not places:
        return None
    places = sorted(places, key=lambda p: p[0])  # config files first
    in_script, path, line, key, text = places[0]
    return {
        "kind": "script" if in_script else "config-file",
        "file": str(path),
        "line": line,
        "key": key,
        "text": text,
        "sha256": _digest(texts[path]),
        "value": value,
        "candidates": sum(1 for p in places if p[0] == in_script),
    }


def _overridden(
    key: str,
    value: float,
    script: Path | None,
    texts: dict[Path, str],
    defaults: Callable[[], dict[Path, str]],
) -> dict:
    """What a command-line token replaced: the other number a file the run read (else the
    script, else one of the user's own modules) gives the same key -- the value the run would
    have had without the token."""
    # a config file overrides the script; the user's modules are read only when neither
    # gives the key another value
    places = _other_values(key, value, script, texts) or _other_values(key, value, None, defaults())
    if not places:
        return {}
    # a 0 beside another number is a switch or a group's exemption (``"weight_decay": 0.0``
    # for the no-decay parameter group), not the value the setting had
    places.sort(key=lambda p: (p[0], p[2]["number"] == 0))
    _, path, place = places[0]
    return {"overrides": place["number"], "overrides_at": f"{_shown(path, script)}:{place['line']}"}


def _shown(path: Path, script: Path | None) -> str:
    """A file as the user knows it: relative to the script's folder, else as imported (relative
    to the ``sys.path`` entry it was found under), else its name."""
    if script is not None and path.is_relative_to(script.parent):
        return str(path.relative_to(script.parent))
    roots = [Path(p) for p in sys.path if p and path.is_relative_to(p)]
    if roots:
        return str(path.relative_to(max(roots, key=lambda r: len(r.parts))))
    return path.name


def _other_values(
    key: str, value: float, script: Path | None, texts: dict[Path, str]
) -> list[tuple[bool, Path, dict[str, Any]]]:
    """(in_script, path, place) for each place in ``texts`` that gives ``key`` a number other
    than ``value``."""
    found = []
    for path, text in texts.items():
        in_script = script is not None and path == script
        for place in file_places(text):
            if place["key"] == key and not _same(place["number"], value):
                found.append((in_script, path, place))
    return found


def key_name(key: str) -> str:
    """The setting a key names: its last dotted part, lower case, ``-`` read as ``_``
    (``--trainer.learning-rate`` and ``trainer.learning_rate:`` both name ``learning_rate``)."""
    return key.lstrip("-+").split(".")[-1].replace("-", "_").lower()


def argv_places(argv: list[str]) -> list[dict[str, Any]]:
    """Every token that sets a number under a key: its index, the token, its key and number."""
    out = []
    for index, token in enumerate(argv):
        key, sep, raw = token.partition("=")
        if sep and key.lstrip("-+"):
            number, at = _number(raw), index
        elif token.startswith("--") and index + 1 < len(argv):
            raw, number, at = argv[index + 1], _number(argv[index + 1]), index + 1
        else:
            continue
        if number is None:
            continue
        name = key_name(key)
        out.append({"kind": "argv", "index": at, "token": argv[at], "key": name, "number": number})
    return out


def file_places(text: str) -> list[dict[str, Any]]:
    """Every ``key: number`` / ``key = number`` / ``key=number`` in a text, with its line."""
    out = []
    for line_no, line in enumerate(text.splitlines()[:MAX_LINES], start=1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith('"') else line
        for match in _ASSIGNMENT.finditer(code):
            number = _number(match.group(2))
            if number is None:
                continue
            name = key_name(match.group(1))
            out.append(
                {
                    "line": line_no,
                    "key": name,
                    "number": number,
                    "text": match.group(2),
                    "col": match.start(2),
                }
            )
    return out


class SourceText(str):
    """A file's text as the places are looked for in it, with the sha256 of the file itself
    (a Python file's docstrings are blanked out: prose that spells ``lr=1e-3`` sets nothing)."""

    sha256: str


def _digest(text: str) -> str:
    known = getattr(text, "sha256", None)
    return known if isinstance(known, str) else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _texts(paths: Iterable[Path]) -> dict[Path, str]:
    texts: dict[Path, str] = {}
    for path in paths:
        try:
            real = path.resolve()
            if real in texts or real.stat().st_size > MAX_BYTES:
                continue
            original = real.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        view = SourceText(_without_docstrings(original) if real.suffix == ".py" else original)
        view.sha256 = hashlib.sha256(original.encode("utf-8")).hexdigest()
        texts[real] = view
    return texts


def _without_docstrings(source: str) -> str:
    """``source`` with the lines of each string that stands as a statement of its own (a
    docstring, a block of prose) blanked, line numbers kept; unchanged if it does not
    tokenize."""
    import io
    import tokenize

    lines = source.splitlines(keepends=True)
    statement_start = True
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = token.type
            if kind == tokenize.STRING and statement_start:
                (first, _), (last, _) = token.start, token.end
                for row in range(first - 1, min(last, len(lines))):
                    ending = lines[row][len(lines[row].rstrip("\r\n")) :]
                    lines[row] = ending
            if kind in (tokenize.COMMENT, tokenize.NL):
                continue
            statement_start = kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    return "".join(lines)


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw) if math.isfinite(raw) else None
    if not isinstance(raw, str) or not re.fullmatch(_NUMBER, raw.strip()):
        return None
    number = float(raw)
    return number if math.isfinite(number) else None


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0) or (a == b == 0.0)
