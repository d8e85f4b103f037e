"""Results table and Markdown report of ``dpinfer demo``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ResultRow:
    """One line of the demo's results table."""

    section: str
    method: str
    quantity: str
    value: Any
    epsilon: Any = "-"
    note: str = ""


@dataclass
class DemoReport:
    """Collects rows, text and figures of a demo run and writes ``report.md``."""

    out_dir: Path
    rows: list[ResultRow] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)

    def add_row(self, *args: Any, **kwargs: Any) -> None:
        self.rows.append(ResultRow(*args, **kwargs))

    def add_text(self, title: str, text: str) -> None:
        self.sections.append((title, text))

    def add_figure(self, title: str, path: Path | str) -> None:
        self.figures.append((title, Path(path).name))

    @staticmethod
    def _fmt(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    def table(self) -> str:
        """The results table as aligned plain text."""
        header = ("section", "method", "quantity", "value", "epsilon", "note")
        cells = [header] + [
            (r.section, r.method, r.quantity, self._fmt(r.value), self._fmt(r.epsilon), r.note)
            for r in self.rows
        ]
        widths = [max(len(str(c[i])) for c in cells) for i in range(len(header))]
        lines = ["  ".join(str(c[i]).ljust(widths[i]) for i in range(len(header))) for c in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def write(self) -> Path:
        """Write ``report.md`` into the output directory and return its path."""
        md = ["# dpinfer demo report", "", "## Results", ""]
        md.append("| section | method | quantity | value | epsilon | note |")
        md.append("|---|---|---|---|---|---|")
        for r in self.rows:
            md.append(
                f"| {r.section} | {r.method} | {r.quantity} | {self._fmt(r.value)} | "
                f"{self._fmt(r.epsilon)} | {r.note} |"
            )
        for title, text in self.sections:
            md += ["", f"## {title}", "", text]
        for title, name in self.figures:
            md += ["", f"### {title}", "", f"![{title}]({name})"]
        path = self.out_dir / "report.md"
        path.write_text("\n".join(md) + "\n")
        return path
