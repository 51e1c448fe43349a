"""The training config captured from the run, plus where the report came from."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from diagnose.report import Report
from tui.text import literal, num


class ConfigView(DataTable):
    """Key / value rows; nested values are flattened to dotted keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="config.down"),
        Binding("k", "cursor_up", "Up", show=False, id="config.up"),
    ]

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.report = report

    def on_mount(self) -> None:
        self.add_column("setting", key="key")
        self.add_column("value", key="value")
        config = self.report.config.model_dump(mode="python")
        for key, value in _flatten(config):
            self.add_row(literal(key), _value(value))
        script = self.report.script
        self.add_row(Text("script", style="dim"), literal(script.path))
        self.add_row(Text("script args", style="dim"), literal(" ".join(script.argv) or "-"))
        self.add_row(Text("report version", style="dim"), Text(str(self.report.version)))
        if self.report.diagnose_version:
            self.add_row(Text("diagnose", style="dim"), literal(self.report.diagnose_version))


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(_flatten(value, name + "."))
        else:
            rows.append((name, value))
    return rows


def _value(value: Any) -> Text:
    if value is None:
        return Text("none", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, float):
        return Text(num(value, 3))
    return literal(value)
