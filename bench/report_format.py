"""The summary's shared vocabulary: a section's results, and Markdown cells and tables
(pure: results JSON in, text out)."""

from __future__ import annotations

import math
import statistics
from typing import Any

TARGET_ORDER = ("direct", "gateway", "litellm")


def section_of(results: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A section's results, or None when it was not run or failed."""
    section = results["sections"].get(name)
    return None if not section or "error" in section else section


def cores(cores: list[int]) -> str:
    return ",".join(str(c) for c in cores)


def head(*columns: str) -> list[str]:
    """A Markdown table head; the target column is left-aligned, figures right."""
    aligns = ["---" if c == "target" else "---:" for c in columns]
    return ["| " + " | ".join(columns) + " |", "|" + "|".join(aligns) + "|"]


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def ordered(points: dict[str, Any]) -> list[str]:
    return [name for name in TARGET_ORDER if name in points]


def pct(value: Any) -> str:
    return "—" if value is None else f"{value:+.1f} %"


def ratios(values: list[float]) -> str:
    if not values:
        return "—"
    listed = ", ".join(f"{v:.2f}x" for v in values)
    return f"{listed} (median {statistics.median(values):.2f}x)"


def changes(values: list[float]) -> str:
    if not values:
        return "—"
    listed = ", ".join(f"{v:+.2f}" for v in values)
    return f"{listed} ms (median {statistics.median(values):+.2f} ms)"
