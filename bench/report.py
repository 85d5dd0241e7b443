"""Writing a run down: the JSON results, the Markdown summary, bench/README.md.

The summary is rendered from the JSON (printed after each run, and by `--report`); for full
runs it also goes between the markers of `bench/README.md`, so the README always shows the
latest full run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import report_fleet, report_hotpath, report_server
from bench.checks import Check
from bench.report_format import cores

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- bench-summary:begin -->", "<!-- bench-summary:end -->"


def write_json(path: Path, results: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def markdown(
    results: dict[str, Any], checks: list[Check], chart: Path | None, chart_dir: str = ""
) -> str:
    """The summary; chart links are relative to where it is written (`chart_dir`)."""
    parts = [
        _header(results),
        _failures(results),
        _checks_table(checks),
        report_server.nonstream_table(results),
        report_server.stream_table(results),
        report_server.open_streams_table(results),
        report_server.soak_text(results),
        report_server.ceiling_text(results),
        report_server.floor_text(results),
        report_fleet.workers_text(results),
        report_fleet.fronts_text(results),
        report_fleet.observability_text(results),
        report_hotpath.hotpath_text(results, checks),
        report_hotpath.budget_table(results),
        report_hotpath.instructions_text(results),
        _chart(chart, chart_dir),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def update_readme(summary: str) -> None:
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{_demote(summary)}{END}{tail}")


def _demote(summary: str) -> str:
    """Headings one level down, to sit under the README's own."""
    return (
        "\n".join("#" + line if line.startswith("#") else line for line in summary.splitlines())
        + "\n"
    )


def _header(results: dict[str, Any]) -> str:
    m, pin, plan = results["machine"], results["pinning"], results["plan"]
    mode = "quick look (`--quick`)" if plan["quick"] else "full run"
    return "\n".join(
        [
            f"## Benchmark, {results['date']} ({mode})",
            "",
            f"- Command: `{results['command']}`",
            f"- Machine: {m['cores']} cores, {m['cpu_model']}, {m['memory_mib'] // 1024} GiB RAM,"
            f" Linux {m['kernel']}, Python {m['python']}{_speed(m)}",
            f"- Pinning: gateway and LiteLLM on core(s) {cores(pin['gateway'])}; simulator and"
            f" load generator on core(s) {cores(pin['load'])}. One worker process each.",
            f"- Gateway settings from the environment: {_env(results.get('gateway_env', {}))}.",
            f"- Each load point runs {plan['point_s']:g} s; LiteLLM: {results['litellm']['note']}.",
            f"- Wall time of the run: {results['elapsed_s']:.0f} s. {_busy(results)}",
        ]
    )


def _speed(machine: dict[str, Any]) -> str:
    """The machine's plain-Python speed (`bench.machine.python_speed`), when measured."""
    mops = machine.get("python_mops")
    return f"; a plain Python loop runs {mops:.1f} M steps/s" if mops else ""


def _env(env: dict[str, str]) -> str:
    return ", ".join(f"`{k}={v}`" for k, v in env.items()) or "none"


def _busy(results: dict[str, Any]) -> str:
    """How loaded the machine was, from the 1-minute load average before and after."""
    before, after = results["load_average_before"][0], results["load_average_after"][0]
    text = f"Load average (1 min) {before:.2f} before the run, {after:.2f} after."
    if before > 0.5:
        text += " **Other processes were using the CPU: the figures are pessimistic.**"
    return text


def _failures(results: dict[str, Any]) -> str:
    failed = {n: s["error"] for n, s in results["sections"].items() if s and "error" in s}
    return "\n".join(f"- Section {n} failed: `{e}`" for n, e in failed.items())


def _checks_table(checks: list[Check]) -> str:
    rows = ["### Targets", "", "| target | wanted | measured | verdict |", "|---|---|---|---|"]
    for check in checks:
        value = "—" if check.value is None else f"{check.value:g} {check.unit}"
        verdict = {None: "not measured", True: "pass", False: "**FAIL**"}[check.passed]
        rows.append(f"| {check.name} | {check.target} | {value} | {verdict} |")
    return "\n".join(rows)


def _chart(chart: Path | None, chart_dir: str) -> str:
    if chart is None:
        return ""
    return f"### Chart\n\n![{chart.stem}]({chart_dir}{chart.name})"
