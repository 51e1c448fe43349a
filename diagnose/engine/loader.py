"""Loading rule files and the fix catalogue: YAML -> JSON Schema -> semantic checks -> Rule.

A broken file is reported as a LoadProblem (file, line, reason) and skipped; it never takes the
other rules down. Line numbers come from the YAML node marks: a schema error is traced back to
the offending key through the composed node tree.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from diagnose import yamlsafe
from diagnose.engine.conditions import Node, walk_tests
from diagnose.facts.catalog import FACTS
from diagnose.facts.symptoms import REGISTRY
from diagnose.paths import rules_dir
from diagnose.regexbound import UnboundedPattern, compile_bounded
from diagnose.userfiles import RULES_CAP, UserFileError, read_text
from diagnose.yamlsafe import YAMLLimitError

RULE_SUFFIXES = (".yaml", ".yml")
FIXES_FILE = "_fixes.yaml"


@dataclass(frozen=True)
class LoadProblem:
    """A rule (or fix catalogue) file that could not be used, and where and why."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class FixInfo:
    id: str
    title: str
    why: str
    example_patch: str
    no_patch: str | None = None  # why there is no automatic patch, when there is none on purpose


@dataclass(frozen=True)
class Rule:
    id: str
    family: str
    title: str
    symptom: str
    description: str
    why: str
    fixes: tuple[tuple[str, float], ...]
    conditions: Node | None = None
    # (when, why): facts under which the symptom's story is ruled out, and why in words
    contradicted_by: tuple[tuple[Node, str], ...] = ()
    min_confidence: float = 0.0
    references: tuple[str, ...] = ()
    match_cases: tuple[dict[str, Any], ...] = ()
    no_match_cases: tuple[dict[str, Any], ...] = ()
    path: str = ""
    builtin: bool = False
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)


class _Located(Exception):
    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


@functools.lru_cache(maxsize=4)
def _schema(name: str) -> dict[str, Any]:
    return json.loads((rules_dir() / name).read_text(encoding="utf-8"))


def rule_schema() -> dict[str, Any]:
    """The JSON Schema every rule file is validated against (rules/rule.schema.json)."""
    return _schema("rule.schema.json")


# --- YAML with line numbers -------------------------------------------------------------------


def _read(path: Path) -> str:
    """A rule or fix file's text: a regular file under the rules cap (see diagnose.userfiles)."""
    try:
        return read_text(path, RULES_CAP)
    except UserFileError as exc:
        raise _Located(None, f"cannot read: {str(exc).removeprefix(f'{path}: ')}") from None


def _parse(text: str) -> tuple[Any, yaml.Node | None]:
    try:
        data, node = yamlsafe.compose(text)
    except YAMLLimitError as exc:
        raise _Located(None, str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise _Located(mark.line + 1 if mark else None, f"not valid YAML: {problem}") from None
    return data, node


def _node_at(
    node: yaml.Node | None, path: Iterable[Any], key_of_last: bool = False
) -> yaml.Node | None:
    """The YAML node at a JSON path (the key node of the last step when key_of_last)."""
    steps = list(path)
    for i, step in enumerate(steps):
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == step:
                    node = key if (key_of_last and i == len(steps) - 1) else value
                    break
            else:
                return node
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if step >= len(node.value):
                return node
            node = node.value[step]
        else:
            return node
    return node


def _line(root: yaml.Node | None, path: Iterable[Any], key_of_last: bool = False) -> int | None:
    node = _node_at(root, path, key_of_last)
    return node.start_mark.line + 1 if node is not None else None


def _narrow(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a oneOf/anyOf failure, the error inside the branch the author evidently meant: the
    branch with the fewest complaints about the object itself (e.g. a condition with "fact"
    meant the comparison branch, not the all/any/not ones)."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict[int, list[jsonschema.ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.schema_path[0], []).append(sub)
        depth = len(error.absolute_path)

        chosen = min(
            branches,
            key=lambda i: (sum(len(e.absolute_path) == depth for e in branches[i]), i),
        )
        best = jsonschema.exceptions.best_match(branches[chosen])
        if best is None:
            break
        error = best
    return error


def _schema_problem(error: jsonschema.ValidationError, root: yaml.Node | None) -> _Located:
    error = _narrow(error)
    path = list(error.absolute_path)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) or "."
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        if extra:
            known = ", ".join(sorted(allowed))
            key_path = [*path, extra[0]]
            return _Located(
                _line(root, key_path, key_of_last=True),
                f"{where.rstrip('.') or ''}.{extra[0]}: unknown key (allowed: {known})".lstrip("."),
            )
    return _Located(_line(root, path), f"{where}: {error.message}")


def _validate(data: Any, schema: dict[str, Any], root: yaml.Node | None) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise _schema_problem(error, root)


# --- the fix catalogue ------------------------------------------------------------------------


def _load_fix_file(path: Path) -> tuple[dict[str, FixInfo], list[LoadProblem]]:
    try:
        data, root = _parse(_read(path))
        _validate(data or {}, _schema("fixes.schema.json"), root)
    except _Located as exc:
        return {}, [LoadProblem(str(path), exc.line, exc.reason)]
    return {k: FixInfo(id=k, **v) for k, v in (data or {}).items()}, []


@functools.lru_cache(maxsize=1)
def _builtin_fixes() -> tuple[dict[str, FixInfo], tuple[LoadProblem, ...]]:
    fixes, problems = _load_fix_file(rules_dir() / FIXES_FILE)
    return fixes, tuple(problems)


def load_fixes(*paths: str | Path) -> tuple[dict[str, FixInfo], list[LoadProblem]]:
    """The built-in fix catalogue plus any ``_fixes.yaml`` in the given rule folders."""
    base, base_problems = _builtin_fixes()
    fixes, problems = dict(base), list(base_problems)
    for path in paths:
        candidate = Path(path) / FIXES_FILE if Path(path).is_dir() else None
        if candidate is not None and candidate.is_file():
            extra, extra_problems = _load_fix_file(candidate)
            fixes.update(extra)
            problems.extend(extra_problems)
    return fixes, problems


# --- rules ------------------------------------------------------------------------------------


def rule_files(path: Path) -> list[Path]:
    """Rule files under a folder (recursively), or the file itself. Names starting with "_" or
    "." are data or hidden, not rules. Anything but a folder is a file to read (the reader
    refuses a FIFO or a device with one line), in a folder too."""
    if not path.is_dir():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if not p.is_dir()
        and p.suffix in RULE_SUFFIXES
        and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts)
    )


def _known_fact(name: str) -> bool:
    return name in FACTS or name.startswith("symptom.")


def load_rule_file(
    path: Path, base: Path | None, fixes: dict[str, FixInfo], builtin: bool = False
) -> Rule:
    """One rule file -> Rule; raises _Located with the line and reason when it is broken."""
    data, root = _parse(_read(path))
    if not isinstance(data, dict):
        raise _Located(1, f"a rule is a YAML mapping, got {type(data).__name__}")
    _validate(data, rule_schema(), root)
    if data["id"] != path.stem:
        raise _Located(
            _line(root, ["id"]), f"id {data['id']!r} must equal the file name {path.stem!r}"
        )
    if data["symptom"] not in REGISTRY:
        raise _Located(
            _line(root, ["symptom"]),
            f"unknown symptom {data['symptom']!r} (known: {', '.join(sorted(REGISTRY.titles()))})",
        )
    for i, entry in enumerate(data["fixes"]):
        if entry["id"] not in fixes:
            raise _Located(
                _line(root, ["fixes", i, "id"]),
                f"unknown fix id {entry['id']!r} (add it to {FIXES_FILE}; known: "
                f"{', '.join(sorted(fixes))})",
            )
    _check_conditions(data.get("conditions"), root)
    for i, entry in enumerate(data.get("contradicted_by", [])):
        _check_conditions(entry["when"], root, ["contradicted_by", i, "when"])
    for kind in ("match", "no_match"):
        for i, case in enumerate(data["tests"][kind]):
            for name in case:
                if not _known_fact(name):
                    raise _Located(
                        _line(root, ["tests", kind, i, name], key_of_last=True),
                        f"tests.{kind}[{i}]: unknown fact {name!r}",
                    )
    # The family is the first folder under the loaded root (a lone file: its folder's name).
    family = path.parent.name
    if base is not None and path.parent != base:
        family = path.relative_to(base).parts[0]
    return Rule(
        id=data["id"],
        family=family,
        title=data["title"],
        symptom=data["symptom"],
        description=data["description"].strip(),
        why=data["why"].strip(),
        fixes=tuple((f["id"], float(f["weight"])) for f in data["fixes"]),
        conditions=data.get("conditions"),
        contradicted_by=tuple(
            (entry["when"], entry["why"].strip()) for entry in data.get("contradicted_by", [])
        ),
        min_confidence=float(data.get("min_confidence", 0.0)),
        references=tuple(data.get("references", [])),
        match_cases=tuple(data["tests"]["match"]),
        no_match_cases=tuple(data["tests"]["no_match"]),
        path=str(path),
        builtin=builtin,
        lines={
            f"{kind}[{i}]": _line(root, ["tests", kind, i]) or 0
            for kind in ("match", "no_match")
            for i in range(len(data["tests"][kind]))
        },
    )


def _check_conditions(
    node: Node | None, root: yaml.Node | None, at: list[Any] | None = None
) -> None:
    def visit(node: Node, path: list[Any]) -> None:
        for key in ("all", "any"):
            if key in node:
                for i, child in enumerate(node[key]):
                    visit(child, [*path, key, i])
                return
        if "not" in node:
            visit(node["not"], [*path, "not"])
            return
        if not _known_fact(node["fact"]):
            raise _Located(
                _line(root, [*path, "fact"]),
                f"unknown fact {node['fact']!r} (see the facts in docs/rules.md)",
            )
        if node["operator"] == "matches":
            try:
                compile_bounded(node["value"])
            except UnboundedPattern as exc:
                raise _Located(
                    _line(root, [*path, "value"]), f"bad regular expression: {exc}"
                ) from None

    if node is not None:
        visit(node, at or ["conditions"])
    assert all("fact" in leaf for leaf in walk_tests(node))


def _load_tree(
    path: Path, fixes: dict[str, FixInfo], builtin: bool
) -> tuple[list[Rule], list[LoadProblem]]:
    if not path.exists():
        return [], [LoadProblem(str(path), None, "no such rule file or folder")]
    base = path if path.is_dir() else None
    rules: list[Rule] = []
    problems: list[LoadProblem] = []
    seen: dict[str, str] = {}
    for file in rule_files(path):
        try:
            rule = load_rule_file(file, base, fixes, builtin=builtin)
        except _Located as exc:
            problems.append(LoadProblem(str(file), exc.line, exc.reason))
            continue
        if rule.id in seen:
            problems.append(
                LoadProblem(str(file), 1, f"duplicate rule id {rule.id!r} (also {seen[rule.id]})")
            )
            continue
        seen[rule.id] = str(file)
        rules.append(rule)
    return rules, problems


@functools.lru_cache(maxsize=1)
def _builtin_rules() -> tuple[tuple[Rule, ...], tuple[LoadProblem, ...]]:
    fixes, _ = _builtin_fixes()
    rules, problems = _load_tree(rules_dir(), fixes, builtin=True)
    return tuple(rules), tuple(problems)


def load_rules(*paths: str | Path, builtin: bool = True) -> tuple[list[Rule], list[LoadProblem]]:
    """The built-in rules plus the rules under each path; a user rule overrides a built-in one
    with the same id. Broken files become problems and are skipped."""
    fixes, problems = load_fixes(*paths)
    by_id: dict[str, Rule] = {}
    if builtin:
        base_rules, base_problems = _builtin_rules()
        by_id.update((r.id, r) for r in base_rules)
        problems.extend(base_problems)
    for path in paths:
        rules, path_problems = _load_tree(Path(path), fixes, builtin=False)
        by_id.update((r.id, r) for r in rules)
        problems.extend(path_problems)
    return sorted(by_id.values(), key=lambda r: (r.family, r.id)), problems
