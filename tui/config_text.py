"""The captured training config as readable sections: labelled rows and a param-group table.

Pure functions from a Report to Rich renderables, so the Config tab can be tested without a
screen. Every value is formatted for people (no Python reprs), every setting the report knows
the origin of says where it came from (``config.origins``), and the capture's bookkeeping
(parse counters, hashes, empty lists) is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from diagnose.report import Report
from diagnose.trainconfig import Config, OptimizerInfo, Origin, ParamGroup
from tui.text import literal, num, one_line, plural

# Param-group hyper-parameters shown as columns, in this order, when any group has them.
GROUP_COLUMNS = ("lr", "betas", "momentum", "eps", "weight_decay")
# Optimizer flags worth a word only when they are on.
GROUP_FLAGS = ("nesterov", "amsgrad", "maximize", "decoupled_weight_decay")
# Keys of Config the sections below show (or deliberately leave out); others are "other".
HANDLED = frozenset(
    {
        "precision", "optimizer", "lr", "grad_clip", "grad_scaler", "args", "args_given",
        "args_defaults", "args_unrecorded", "args_parses", "transformers", "lightning",
        "optimizers", "param_groups", "optimizer_steps", "lr_initial", "lr_scheduler",
        "lr_schedulers", "autocast", "autocast_dtype", "scaler", "scalers", "grad_clips",
        "grad_clip_inactive", "clip_after_unscale", "loss", "losses", "loss_fn", "param_dtypes",
        "sources", "origins", "libraries", "capture_errors", "training_calls",
    }
)  # fmt: skip


@dataclass
class Section:
    """A titled block of the Config tab: label / value / origin rows, or a table."""

    title: str
    rows: list[tuple[Text, Text, Text]] = field(default_factory=list)
    table: Table | None = None

    def add(self, label: str, value: Text | str, origin: Text | str = "") -> None:
        value = value if isinstance(value, Text) else literal(value)
        origin = origin if isinstance(origin, Text) else Text(origin, style="dim")
        # every cell a Text: a Table would read a str as markup, and labels are report keys
        self.rows.append((literal(label), value, origin))

    def renderable(self) -> RenderableType:
        """The table (if any), then the rows as a borderless three-column grid."""
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_column(overflow="fold")
        for label, value, origin in self.rows:
            grid.add_row(label, value, origin)
        if self.table is None:
            return grid
        return Group(self.table, grid) if self.rows else self.table


def value_text(value: Any) -> str:
    """One value as a person writes it: numbers short, lists comma-joined, no reprs."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return num(value, 3) if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(value_text(v) for v in value)
        return f"({inner})" if len(value) > 1 else inner
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {value_text(v)}" for k, v in value.items() if not _empty(v))
    return one_line(value)


def origin_text(origin: Origin | None, source: str | None = None) -> Text:
    """Where a value came from: ``--lr=1e3 on the command line``, ``conf/train.yaml:4``."""
    if origin is None:
        return Text(f"from {source}" if source else "", style="dim")
    if origin.kind == "argv" and origin.token:
        text = Text.assemble(literal(origin.token, "bold"), " on the command line")
        if origin.overrides is not None and origin.overrides_at:
            text.append(" (over ")
            text.append_text(literal(f"{value_text(origin.overrides)} at {origin.overrides_at}"))
            text.append(")")
    elif origin.file and origin.line is not None:
        text = literal(f"{origin.file}:{origin.line}")
        if origin.text and origin.kind == "config-file":
            text.append(" ")
            text.append_text(literal(origin.text, "dim"))
    elif origin.file:
        text = literal(origin.file)
    else:
        text = literal(origin.kind)
    if origin.candidates and origin.candidates > 1:
        text.append(f" (1 of {origin.candidates} places)", style="dim")
    text.stylize("dim")
    return text


def config_sections(report: Report) -> list[Section]:
    """The Config tab top to bottom: what was trained how, the script's arguments, the run."""
    config = report.config
    origins = config.origins or {}
    sections = [
        _training(config, origins),
        *_optimizers(config, origins),
        _arguments(config, origins),
        *_frameworks(config, origins),
        _other(config),
        _run(report),
    ]
    return [s for s in sections if s.rows or s.table is not None]


def _training(config: Config, origins: Mapping[str, Origin]) -> Section:
    section = Section("Training")
    sources = config.sources or {}
    precision_origin = origins.get("precision") or next(
        (origins[k] for k in ("fp16", "bf16") if k in origins), None
    )
    section.add("precision", config.precision, origin_text(precision_origin))
    section.add("autocast", _autocast(config))
    section.add("grad scaler", _scaler(config))
    section.add("clipping", _clipping(config), origin_text(origins.get("grad_clip.max")))
    loss = _loss(config)
    if loss:
        section.add("loss", loss)
    scheduler = _scheduler(config.lr_scheduler)
    if scheduler:
        section.add("lr scheduler", scheduler, origin_text(None, sources.get("lr_scheduler")))
    if config.param_dtypes:
        dtypes = ", ".join(f"{d} {value_text(n)}" for d, n in config.param_dtypes.items())
        section.add("parameters", f"{dtypes} elements")
    return section


def _autocast(config: Config) -> str:
    regions = [r for r in config.autocast or [] if r.enabled is not False]
    if regions:
        return "; ".join(
            f"{r.device_type or '?'} {r.dtype or '?'}"
            + (f", {plural(r.entries, 'entry', 'entries')}" if r.entries else "")
            for r in regions
        )
    if config.autocast_dtype:
        return value_text(config.autocast_dtype)
    return "not used"


def _scaler(config: Config) -> str:
    scaler = config.scaler
    if scaler is None:
        return "yes" if config.grad_scaler else "none"
    parts = [scaler.name or "GradScaler"]
    if scaler.enabled is False:
        parts.append("disabled")
    if scaler.init_scale is not None:
        parts.append(f"initial scale {num(scaler.init_scale)}")
    if scaler.scale is not None:
        parts.append(f"last scale {num(scaler.scale)}")
    if scaler.used is False:
        parts.append("never used")
    return ", ".join(parts)


def _clipping(config: Config) -> str:
    clip = config.grad_clip
    if clip is not None:
        kind = "grad norm" if clip.kind == "norm" else "grad value"
        text = f"{kind} ≤ {num(clip.max)}"
        if clip.function:
            text += f" by {clip.function.rsplit('.', 1)[-1]}"
        if clip.calls:
            text += f", {plural(clip.calls, 'call')}"
        if clip.clip_after_unscale is False:
            text += ", before scaler.unscale_ (on scaled gradients)"
        return text
    inactive = config.grad_clip_inactive
    if inactive is not None:
        return f"none counted: {inactive.why}" if inactive.why else "none counted"
    return "none"


def _loss(config: Config) -> str:
    loss = config.loss
    if not loss:
        return ""
    name = str(loss.get("class") or loss.get("function") or "loss")
    skip = {"class", "function", "calls"}
    settings = {k: v for k, v in loss.items() if k not in skip and not _empty(v)}
    text = name + (f" ({value_text(settings)})" if settings else "")
    calls = loss.get("calls")
    if isinstance(calls, int) and calls:
        text += f", {plural(calls, 'call')}"
    return text


def _scheduler(scheduler: Any) -> str:
    if scheduler is None:
        return ""
    if isinstance(scheduler, str):
        return scheduler
    text = scheduler.name or "scheduler"
    if scheduler.warmup and scheduler.warmup.get("steps"):
        text += f", warmup {plural(int(scheduler.warmup['steps']), 'step')}"
    return text


def _optimizers(config: Config, origins: Mapping[str, Origin]) -> list[Section]:
    optimizers = list(config.optimizers or [])
    if not optimizers and (config.optimizer or config.param_groups):
        groups = config.param_groups or ([ParamGroup(lr=config.lr)] if config.lr else [])
        optimizers = [
            OptimizerInfo.model_validate({"class": config.optimizer, "param_groups": groups})
        ]
    sections = []
    for i, optimizer in enumerate(optimizers):
        title = "Optimizer" if len(optimizers) == 1 else f"Optimizer {i + 1}"
        name = literal(optimizer.name or "?", "bold")
        if optimizer.module:
            name.append_text(literal(f"  {optimizer.module}", "dim"))
        steps = optimizer.steps if optimizer.steps is not None else config.optimizer_steps
        if steps is not None:
            name.append(f"  {plural(steps, 'step')}")
        section = Section(title)
        groups = optimizer.param_groups or []
        section.table = _group_table(name, groups)
        if i == 0:  # origins are the run's values, which the first optimizer's groups hold
            for column in _columns(groups):
                if column in origins:
                    section.add(f"{column} set at", origin_text(origins[column]))
        sections.append(section)
    if not optimizers and config.lr is not None:
        section = Section("Optimizer")
        section.add("lr", value_text(config.lr), origin_text(origins.get("lr")))
        sections.append(section)
    return sections


def _columns(groups: list[ParamGroup]) -> list[str]:
    dumped = [g.model_dump(mode="python", by_alias=True) for g in groups]
    return [c for c in GROUP_COLUMNS if any(not _empty(d.get(c)) for d in dumped)]


def _group_table(title: Text, groups: list[ParamGroup]) -> Table:
    """One row per param group, a column per hyper-parameter any group has."""
    table = Table(
        title=title, title_justify="left", box=None, padding=(0, 1), show_edge=False, pad_edge=False
    )
    dumped = [g.model_dump(mode="python", by_alias=True) for g in groups]
    columns = _columns(groups)
    table.add_column("group", justify="right", style="dim")
    for column in columns:
        table.add_column(column, justify="right")
    table.add_column("trains")
    for n, data in enumerate(dumped):
        cells = [Text(value_text(data.get(c)) if c in data else "-") for c in columns]
        table.add_row(str(n), *cells, Text(_trains(data)))
    if not groups:
        table.add_row("-", *["-"] * len(columns), Text("no param groups recorded", style="dim"))
    return table


def _trains(group: Mapping[str, Any]) -> str:
    parts = []
    if isinstance(group.get("num_params"), int):
        parts.append(plural(group["num_params"], "tensor"))
    if isinstance(group.get("numel"), int):
        parts.append(f"{value_text(group['numel'])} elements")
    if group.get("dtypes"):
        parts.append(value_text(list(group["dtypes"])).strip("()"))
    flags = [f for f in GROUP_FLAGS if group.get(f) is True]
    if flags:
        parts.append(", ".join(flags))
    return ", ".join(parts) or "-"


def _arguments(config: Config, origins: Mapping[str, Origin]) -> Section:
    """The script's argparse values: each given on the command line (the very token, where
    the origins name it), or the default."""
    section = Section("Script arguments")
    given = config.args_given or {}
    for dest, value in (config.args or {}).items():
        option = given.get(dest)
        token = origins.get(dest)
        origin: Text
        if option and token is not None and token.kind == "argv" and token.token:
            origin = origin_text(token)
        elif option == "positional":
            origin = Text("positional on the command line", style="dim")
        elif option:
            origin = Text.assemble(literal(option, "bold"), " on the command line", style="dim")
        else:
            origin = Text("default", style="dim")
        section.add(dest, value_text(value), origin)
    if config.args_unrecorded:
        section.add("not recorded", ", ".join(config.args_unrecorded), "no JSON form")
    return section


def _frameworks(config: Config, origins: Mapping[str, Origin]) -> list[Section]:
    sections = []
    for key, title, origin_key in (
        ("transformers", "transformers TrainingArguments", "transformers.TrainingArguments"),
        ("lightning", "Lightning Trainer", "lightning.Trainer"),
    ):
        settings = getattr(config, key)
        if not settings:
            continue
        section = Section(title)
        where = origins.get(origin_key)
        if where is not None:
            section.add("given at", origin_text(where))
        for name, value in _flatten(settings):
            section.add(name, value_text(value))
        sections.append(section)
    return sections


def _other(config: Config) -> Section:
    """Keys another tool or a newer capture wrote (batch size, device, ...)."""
    section = Section("Other settings")
    data = config.model_dump(mode="python", by_alias=True)
    sources = config.sources or {}
    for key, value in data.items():
        if key in HANDLED or _empty(value):
            continue
        for name, item in _flatten({key: value}):
            section.add(name, value_text(item), origin_text(None, sources.get(key)))
    if config.libraries:
        section.add("libraries", ", ".join(config.libraries))
    if config.capture_errors:
        for error in config.capture_errors:
            section.add("not captured", literal(error, "italic"))
    return section


def _run(report: Report) -> Section:
    section = Section("Run")
    script = report.script
    section.add("script", script.path)
    section.add("arguments", " ".join(script.argv) or "none")
    calls = report.config.training_calls
    if calls is not None:
        for label, sites in (
            ("backward", calls.backward),
            ("optimizer step", calls.step),
            ("zero_grad", calls.zero_grad),
        ):
            if sites:
                section.add(label, _sites(sites))
    version = f"report format {report.version}"
    if report.diagnose_version:
        version += f", diagnose {report.diagnose_version}"
    section.add("written by", version)
    if script.sha256:
        section.add("script hash", f"sha256 {script.sha256[:12]}…")
    return section


def _sites(sites: Iterable[Any]) -> str:
    return ", ".join(
        f"{site.file}:{site.line}" + (f" ({plural(site.calls, 'call')})" if site.calls else "")
        for site in sites
    )


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, name + "."))
        elif not _empty(value):
            rows.append((name, value))
    return rows


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, tuple, dict, str)) and not value)
