"""Writing a run down: the JSON results, the Markdown summary, bench/README.md.

The summary is rendered from the JSON (printed after each run, and by `--report`); for full
runs it also goes between the markers of `bench/README.md`, so the README always shows the
latest full run.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from bench import report_hotpath
from bench.checks import Check

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- bench-summary:begin -->", "<!-- bench-summary:end -->"
TARGET_ORDER = ("direct", "gateway", "litellm")


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
        _nonstream_table(results),
        _stream_table(results),
        _open_streams_table(results),
        _soak_text(results),
        _ceiling_text(results),
        _floor_text(results),
        _workers_text(results),
        _fronts_text(results),
        _observability_text(results),
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
            f"- Pinning: gateway and LiteLLM on core(s) {_cores(pin['gateway'])}; simulator and"
            f" load generator on core(s) {_cores(pin['load'])}. One worker process each.",
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


def section_of(results: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A section's results, or None when it was not run or failed."""
    section = results["sections"].get(name)
    return None if not section or "error" in section else section


def _failures(results: dict[str, Any]) -> str:
    failed = {n: s["error"] for n, s in results["sections"].items() if s and "error" in s}
    return "\n".join(f"- Section {n} failed: `{e}`" for n, e in failed.items())


def _cores(cores: list[int]) -> str:
    return ",".join(str(c) for c in cores)


def _checks_table(checks: list[Check]) -> str:
    rows = ["### Targets", "", "| target | wanted | measured | verdict |", "|---|---|---|---|"]
    for check in checks:
        value = "—" if check.value is None else f"{check.value:g} {check.unit}"
        verdict = {None: "not measured", True: "pass", False: "**FAIL**"}[check.passed]
        rows.append(f"| {check.name} | {check.target} | {value} | {verdict} |")
    return "\n".join(rows)


def _head(*columns: str) -> list[str]:
    """A Markdown table head; the target column is left-aligned, figures right."""
    aligns = ["---" if c == "target" else "---:" for c in columns]
    return ["| " + " | ".join(columns) + " |", "|" + "|".join(aligns) + "|"]


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def _ordered(points: dict[str, Any]) -> list[str]:
    return [name for name in TARGET_ORDER if name in points]


def _nonstream_table(results: dict[str, Any]) -> str:
    section = section_of(results, "nonstream")
    if not section:
        return ""
    rows = [
        f"### 1. Non-streamed chat ({section['duration_s']:g} s per point, `wrk`)",
        "",
        *_head(
            "concurrency",
            "target",
            "req/s",
            "mean ms",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "p99/mean",
            "added p50 ms",
            "added p99 ms",
            "errors",
            "server CPU ms/req",
            "upstream calls/req",
            "server RSS peak MiB",
        ),
    ]
    points, overhead = section["points"], section["overhead"]
    levels = sorted({int(c) for by_c in points.values() for c in by_c})
    for level in levels:
        for name in _ordered(points):
            p = points[name].get(str(level))
            if p is None:
                continue
            added = overhead.get(name, {}).get(str(level), {})
            rows.append(
                _row(
                    level,
                    name,
                    _fmt(p["rps"], 0),
                    _fmt(p["mean_ms"]),
                    _fmt(p["p50_ms"]),
                    _fmt(p["p99_ms"]),
                    _fmt(p["percentiles_ms"].get("99.9")),
                    _fmt(p["percentiles_ms"].get("100")),
                    _fmt(p["p99_ms"] / p["mean_ms"] if p["mean_ms"] else None),
                    _fmt(added.get("p50_ms")),
                    _fmt(added.get("p99_ms")),
                    p["errors"],
                    _fmt(p["server_cpu_ms_per_request"], 3),
                    _fmt(p.get("upstream_calls_per_request")),
                    _fmt(p["server_rss_peak_mib"], 0),
                )
            )
    return "\n".join([*rows, "", _tail_table(points.get("gateway", {}))])


def _tail_table(points: dict[str, Any]) -> str:
    """The gateway's own view of each point (`bench/timeline.py`): where its tail lies."""
    rows = [
        "Where the gateway's tail comes from (its own log: latency inside the app, and its"
        " collections and loop stalls over 1 ms):",
        "",
        *_head(
            "concurrency",
            "gateway p50 / p99 / max ms",
            "own share p50 / p99 / p99.9 / max ms",
            "slow requests (>= p99)",
            "clustered",
            "during a pause",
            "beside a usage batch: slow / all",
            "gc pauses: count / total / max ms",
            "loop stalls: count / total / max ms",
        ),
    ]
    for level, point in sorted(points.items(), key=lambda item: int(item[0])):
        found = point.get("timeline")
        if not found or not found.get("requests"):
            continue
        pauses = found["pauses"]
        rows.append(
            _row(
                level,
                " / ".join(
                    _fmt(found[k]) for k in ("gateway_p50_ms", "gateway_p99_ms", "gateway_max_ms")
                ),
                " / ".join(
                    _fmt(found.get(k))
                    for k in ("own_p50_ms", "own_p99_ms", "own_p999_ms", "own_max_ms")
                ),
                found["slow_requests"],
                f"{found['slow_clustered_share']:.0%}",
                f"{found['slow_during_pause_share']:.0%}",
                f"{found.get('slow_during_batch_share', 0):.0%} / "
                f"{found.get('all_during_batch_share', 0):.0%}",
                _pauses(pauses.get("gc")),
                _pauses(pauses.get("loop_lag")),
            )
        )
    return "\n".join(rows) if len(rows) > 4 else ""


def _pauses(kind: dict[str, float] | None) -> str:
    if not kind:
        return "0"
    return f"{kind['count']:.0f} / {_fmt(kind['total_ms'])} / {_fmt(kind['max_ms'])}"


def _stream_table(results: dict[str, Any]) -> str:
    section = section_of(results, "stream")
    if not section:
        return ""
    level = str(section["concurrency"])
    rows = [
        f"### 2. Streamed chat, 20 chunks, concurrency {level}"
        f" ({section['duration_s']:g} s per target)",
        "",
        *_head(
            "target",
            "streams/s",
            "first chunk p50 ms",
            "p99 ms",
            "last chunk p50 ms",
            "p99 ms",
            "errors",
            "server CPU ms/stream",
            "server RSS peak MiB",
        ),
    ]
    for name in _ordered(section["points"]):
        p = section["points"][name][level]
        rows.append(
            _row(
                name,
                _fmt(p["streams_per_s"], 0),
                _fmt(p["first_chunk_p50_ms"]),
                _fmt(p["first_chunk_p99_ms"]),
                _fmt(p["last_chunk_p50_ms"]),
                _fmt(p["last_chunk_p99_ms"]),
                p["errors"],
                _fmt(p["server_cpu_ms_per_stream"], 3),
                _fmt(p["server_rss_peak_mib"], 0),
            )
        )
    return "\n".join(rows)


def _open_streams_table(results: dict[str, Any]) -> str:
    section = section_of(results, "open-streams")
    if not section:
        return ""
    rows = [
        "### 3. Slow streams held open through the gateway",
        "",
        *_head(
            "streams",
            "opened",
            "failed",
            "ended early",
            "time to open s",
            "RSS before MiB",
            "RSS open MiB",
            "fds open",
            "RSS after MiB",
            "fds after",
            "cleanup s",
        ),
    ]
    for count, p in section["points"].items():
        rows.append(
            _row(
                f"{int(count):,}",
                f"{p['opened']:,}",
                p["failed"],
                p["ended_early"],
                _fmt(p["open_time_s"], 1),
                _fmt(p["rss_before_mib"], 1),
                _fmt(p["rss_open_mib"], 1),
                p["fds_open"],
                _fmt(p["rss_after_mib"], 1),
                p["fds_after"],
                _fmt(p.get("settle_s"), 1),
            )
        )
    return "\n".join(rows)


def _soak_text(results: dict[str, Any]) -> str:
    s = section_of(results, "soak")
    if not s:
        return ""
    return "\n".join(
        [
            f"### 4. Soak: {s['duration_s']:g} s of non-streamed load"
            f" at concurrency {s['concurrency']}",
            "",
            f"- {_fmt(s['load']['rps'], 0)} req/s, p50 {_fmt(s['load']['p50_ms'])} ms,"
            f" p99 {_fmt(s['load']['p99_ms'])} ms, {s['load']['errors']} errors.",
            f"- Gateway RSS {_fmt(s['rss_start_mib'], 1)} MiB"
            f" after the {s['warmup_s']:g} s warm-up (median of the first third),"
            f" {_fmt(s['rss_end_mib'], 1)} MiB at the end (last third,"
            f" {s['rss_growth_pct']:+.1f} %),"
            f" peak {_fmt(s['rss_peak_mib'], 1)} MiB.",
            f"- Open descriptors under load {s['fds_start']} → {s['fds_end']}"
            f" (they vary by {s.get('fds_noise', 0)} as pooled connections come and go);"
            f" idle before {s['fds_idle_before']}, idle after {s['fds_idle_after']}.",
        ]
    )


def _ceiling_text(results: dict[str, Any]) -> str:
    c = section_of(results, "ceiling")
    if not c:
        return ""
    per_level = ", ".join(
        f"c={k}: {_fmt(v['rps'], 0)} req/s ({_fmt(v['requests_per_cpu_s'], 0)} per CPU-second)"
        for k, v in c["points"].items()
    )
    shared = ", ".join(f"c={k}: {_fmt(v, 0)} req/s" for k, v in c["shared_core_rps"].items())
    ratio = f"{c['ratio_to_gateway']:g}x" if c["ratio_to_gateway"] else "—"
    return "\n".join(
        [
            "### 5. Simulator ceiling",
            "",
            f"- `wrk` on core(s) {_cores(c['load_cores'])}, simulator alone on core(s)"
            f" {_cores(c['simulator_cores'])}: {per_level}.",
            f"- Sharing the simulator's core with `wrk` (section 1, direct): {shared or '—'}.",
            f"- Best {_fmt(c['best_rps'], 0)} req/s, {ratio} the gateway's non-streamed c=32 rate.",
        ]
    )


def _floor_text(results: dict[str, Any]) -> str:
    f = section_of(results, "floor")
    if not f:
        return ""
    rows = [
        f"### 6. The HTTP server's floor: Hypercorn alone ({f['duration_s']:g} s per point, `wrk`)",
        "",
        *_head(
            "concurrency",
            "req/s",
            "p50 ms",
            "p99 ms",
            "added p50 ms",
            "server CPU ms/req",
            "gateway CPU ms/req",
            "gateway's own CPU ms/req",
        ),
    ]
    for level, p in f["points"].items():
        v = f["versus"].get(level, {})
        rows.append(
            _row(
                level,
                _fmt(p["rps"], 0),
                _fmt(p["p50_ms"]),
                _fmt(p["p99_ms"]),
                _fmt(v.get("floor_added_p50_ms")),
                _fmt(p["server_cpu_ms_per_request"], 3),
                _fmt(v.get("gateway_cpu_ms_per_request"), 3),
                _fmt(v.get("gateway_own_cpu_ms_per_request"), 3),
            )
        )
    ours, bare = f["answers"]["gateway"], f["answers"]["floor"]
    shapes = (
        f"- Answers: the floor's {bare['headers']} headers and {bare['body_bytes']:,} body bytes,"
        f" the gateway's {ours['headers']} and {ours['body_bytes']:,}."
    )
    return "\n".join([*rows, "", shapes, f"- {_floor_sentence(f)}"])


def _floor_sentence(f: dict[str, Any]) -> str:
    """The section's point in one sentence: the gateway's budget, the server's part of it."""
    top, one = f["points"].get("32"), f["versus"].get("1", {})
    at_32 = f["versus"].get("32", {})
    text = (
        f"Hypercorn alone serves {_fmt(top['rps'], 0)} req/s at c=32 with"
        f" {_fmt(top['server_cpu_ms_per_request'], 3)} CPU-ms per request"
        if top
        else "Hypercorn alone was not measured at c=32"
    )
    if at_32.get("gateway_own_cpu_ms_per_request") is not None:
        text += (
            f" ({_fmt(at_32['floor_share_of_gateway_cpu_pct'], 0)} % of the gateway's"
            f" {_fmt(at_32['gateway_cpu_ms_per_request'], 3)}): the gateway's own work is"
            f" {_fmt(at_32['gateway_own_cpu_ms_per_request'], 3)} CPU-ms per request"
        )
    if one.get("floor_added_p50_ms") is not None:
        text += (
            f"; at c=1 the server alone adds {_fmt(one['floor_added_p50_ms'])} ms p50 over"
            f" direct-to-simulator, of the gateway's {_fmt(one['gateway_added_p50_ms'])} ms"
        )
    return text + "."


def _fronts_text(results: dict[str, Any]) -> str:
    """Section 8: each door's latency beside chat's, and its share over chat's."""
    f = section_of(results, "fronts")
    if f is None:
        return ""
    load = f.get("load_average")
    lines = [
        "### 8. The Responses and Messages doors against chat completions (same load"
        + (f", load average {load:.2f})" if load is not None else ")"),
        "",
        "| door | load | p50 ms | p99 ms | added p50 over chat's | p50 over chat"
        " | p99 over chat | CPU over chat |",
        "|---|---|---|---|---|---|---|---|",
    ]
    added = f["added_over_chat_pct"]
    added_latency = f.get("added_latency_over_chat_pct", {})
    for door, by_level in f["non_streamed"].items():
        for level, point in by_level.items():
            over = added.get(door, {}).get(level, {})
            lines.append(
                f"| {door} | c={level} | {_fmt(point['p50_ms'])} | {_fmt(point['p99_ms'])}"
                f" | {_pct(added_latency.get(door, {}).get(level))}"
                f" | {_pct(over.get('p50_ms'))} | {_pct(over.get('p99_ms'))}"
                f" | {_pct(over.get('server_cpu_ms_per_request'))} |"
            )
    for door, point in f["streamed"].items():
        over = added.get(door, {}).get("streamed", {})
        lines.append(
            f"| {door} | streamed c={point['concurrency']} | {_fmt(point['last_chunk_p50_ms'])}"
            f" | {_fmt(point['last_chunk_p99_ms'])}"
            f" | {_pct(added_latency.get(door, {}).get('streamed'))}"
            f" | {_pct(over.get('last_chunk_p50_ms'))}"
            f" | {_pct(over.get('last_chunk_p99_ms'))}"
            f" | {_pct(over.get('server_cpu_ms_per_stream'))} |"
        )
    return "\n".join(lines)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{value:+.1f} %"


def _workers_text(results: dict[str, Any]) -> str:
    """Section 7: one worker against two, limits on Redis, and LiteLLM at each count."""
    w = section_of(results, "workers")
    if w is None or "skipped" in w:
        return f"### 7. Several workers\n\nSkipped: {w['skipped']}" if w else ""
    rows = [
        f"### 7. Several workers, limits on Redis, static upstream ({w['rounds']} alternating"
        f" rounds of {w['round_s']:g} s per worker count and concurrency, `wrk`,"
        f" servers on cores {_cores(w['server_cores'])}, load average"
        f" {w['load_average_before'][0]:.2f} before, {w['load_average_after'][0]:.2f} after)",
        "",
        *_head(
            "target",
            "workers",
            "req/s c=32",
            "p50 c=32 ms",
            "p50 c=1 ms",
            "CPU-ms/req c=32",
            "Redis scripts/req c=32",
            "others' CPU-ms/req c=32",
            "idle c=32",
            "steal c=32",
        ),
    ]
    for name, label in WORKERS_ROWS:
        for n, points in w.get(name, {}).items():
            busy, one = points.get("32", {}), points.get("1", {})
            rows.append(
                _row(
                    label,
                    n,
                    _fmt(busy.get("rps"), 0),
                    _fmt(busy.get("p50_ms")),
                    _fmt(one.get("p50_ms")),
                    _fmt(busy.get("server_cpu_ms_per_request"), 3),
                    _fmt(busy.get("redis_scripts_per_request"), 3),
                    _others_cpu(busy.get("cpu", {})),
                    _fmt(busy.get("cpu", {}).get("machine_idle_share"), 3),
                    _fmt(busy.get("cpu", {}).get("machine_steal_share"), 3),
                )
            )
    sc, simulated = w["scaling"], w.get("scaling_with_simulator", {})
    added = sc["added_p50_ms_c1"]
    versus = sc["ratio_to_litellm"]
    rows += [
        "",
        f"- Two workers answer {_fmt(sc['rps_ratio_two_over_one'])}x the requests/s of one"
        f" (bound by work: {_fmt(sc.get('bound_by_work', {}).get('2'))}x), four"
        f" {_fmt(sc.get('rps_ratio_four_over_one'))}x (bound"
        f" {_fmt(sc.get('bound_by_work', {}).get('4'))}x); added p50 at c=1:"
        f" {_fmt(added['1'], 3)} ms with one, {_fmt(added['2'], 3)} ms with two.",
        f"- Round by round at c=32 (two workers over the one just before):"
        f" {_ratios(sc.get('rps_ratio_by_round', []))}; change of the added p50 at c=1,"
        f" round by round: {_changes(sc.get('added_p50_change_by_round_ms', []))}.",
        f"- Against LiteLLM with as many workers: {_fmt(versus.get('1'))}x with one,"
        f" {_fmt(versus.get('2'))}x with two.",
        f"- With the simulator as upstream on the same cores (c=32 only): two workers answer"
        f" {_fmt(simulated.get('rps_ratio_two_over_one'))}x the requests/s of one; round by"
        f" round {_ratios(simulated.get('rps_ratio_by_round', []))}.",
    ]
    return "\n".join(rows)


def _observability_text(results: dict[str, Any]) -> str:
    """Section 9: the request log and tracing both on against both off."""
    o = section_of(results, "observability")
    if o is None:
        return ""
    rows = [
        f"### 9. The request log and tracing, on against off ({o['rounds']} alternating"
        f" rounds of {o['round_s']:g} s per setup and concurrency, static upstream, load"
        f" average {o['load_average_before'][0]:.2f} before,"
        f" {o['load_average_after'][0]:.2f} after)",
        "",
        *_head(
            "concurrency",
            "req/s off",
            "req/s on",
            "on / off",
            "round by round",
            "CPU-ms/req off",
            "CPU-ms/req on",
        ),
    ]
    for concurrency, figures in o["cost"].items():
        rows.append(
            _row(
                concurrency,
                _fmt(figures["rps_off"], 0),
                _fmt(figures["rps_on"], 0),
                f"{figures['rps_ratio']:.3f}",
                _ratios(figures["rps_ratio_by_round"]),
                _fmt(figures["cpu_ms_per_request_off"], 3),
                _fmt(figures["cpu_ms_per_request_on"], 3),
            )
        )
    did = o.get("on_did", {})
    spans = did.get("spans", {})
    rows += [
        "",
        f"- With both on, the usage writer wrote {_fmt(did.get('request_log_written'), 0)}"
        f" records (each a request-log entry) and the exporter sent"
        f" {_fmt(spans.get('exported'), 0)} spans ({_fmt(spans.get('dropped'), 0)} dropped,"
        f" {_fmt(spans.get('failed'), 0)} refused).",
        *_observability_split(o.get("cpu_by_process", {})),
    ]
    return "\n".join(rows)


def _observability_split(split: dict[str, Any]) -> list[str]:
    """Section 9's CPU-ms per request of each process of the gateway, off -> on."""
    lines = []
    for concurrency, setups in split.items():
        off, on = setups.get("off", {}), setups.get("on", {})
        parts = [
            f"{role} {_fmt(off.get(role), 3)} → {_fmt(on.get(role), 3)}"
            for role in ("gateway", "usage writer", "span exporter")
        ]
        lines.append(f"- CPU-ms per request at c={concurrency}, off → on: " + ", ".join(parts))
    return lines


WORKERS_ROWS = (
    ("gateway", "our gateway"),
    ("gateway_with_simulator", "our gateway, simulator upstream"),
    ("litellm", "LiteLLM"),
)


def _ratios(values: list[float]) -> str:
    if not values:
        return "—"
    listed = ", ".join(f"{v:.2f}x" for v in values)
    return f"{listed} (median {statistics.median(values):.2f}x)"


def _changes(values: list[float]) -> str:
    if not values:
        return "—"
    listed = ", ".join(f"{v:+.2f}" for v in values)
    return f"{listed} ms (median {statistics.median(values):+.2f} ms)"


def _others_cpu(cpu: dict[str, Any]) -> str:
    """The upstream's, Redis's and `wrk`'s CPU per request (section 7's `cpu`)."""
    spent = cpu.get("cpu_ms_per_request", {})
    names = ("upstream", "simulator", "redis", "wrk")
    parts = [f"{name} {spent[name]:.2f}" for name in names if name in spent]
    return ", ".join(parts) or "—"


def _chart(chart: Path | None, chart_dir: str) -> str:
    if chart is None:
        return ""
    return f"### Chart\n\n![{chart.stem}]({chart_dir}{chart.name})"
