"""The summary's sections 7-9: several workers, the Responses and Messages doors, and the
request log with tracing (pure: results JSON in, Markdown out)."""

from __future__ import annotations

from typing import Any

from bench.report_format import changes, cores, fmt, head, pct, ratios, row, section_of


def fronts_text(results: dict[str, Any]) -> str:
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
                f"| {door} | c={level} | {fmt(point['p50_ms'])} | {fmt(point['p99_ms'])}"
                f" | {pct(added_latency.get(door, {}).get(level))}"
                f" | {pct(over.get('p50_ms'))} | {pct(over.get('p99_ms'))}"
                f" | {pct(over.get('server_cpu_ms_per_request'))} |"
            )
    for door, point in f["streamed"].items():
        over = added.get(door, {}).get("streamed", {})
        lines.append(
            f"| {door} | streamed c={point['concurrency']} | {fmt(point['last_chunk_p50_ms'])}"
            f" | {fmt(point['last_chunk_p99_ms'])}"
            f" | {pct(added_latency.get(door, {}).get('streamed'))}"
            f" | {pct(over.get('last_chunk_p50_ms'))}"
            f" | {pct(over.get('last_chunk_p99_ms'))}"
            f" | {pct(over.get('server_cpu_ms_per_stream'))} |"
        )
    return "\n".join(lines)


def workers_text(results: dict[str, Any]) -> str:
    """Section 7: one worker against two, limits on Redis, and LiteLLM at each count."""
    w = section_of(results, "workers")
    if w is None or "skipped" in w:
        return f"### 7. Several workers\n\nSkipped: {w['skipped']}" if w else ""
    heading = (
        f"### 7. Several workers, limits on Redis, static upstream ({w['rounds']} alternating"
        f" rounds of {w['round_s']:g} s per worker count and concurrency, `wrk`,"
        f" servers on cores {cores(w['server_cores'])}, load average"
        f" {w['load_average_before'][0]:.2f} before, {w['load_average_after'][0]:.2f} after)"
    )
    return "\n".join([heading, "", *_workers_table(w), "", *_scaling_lines(w)])


WORKERS_COLUMNS = (
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
)


def _workers_table(w: dict[str, Any]) -> list[str]:
    """A row per target and worker count: c=32's throughput and costs, c=1's p50."""
    rows = head(*WORKERS_COLUMNS)
    for name, label in WORKERS_ROWS:
        for n, points in w.get(name, {}).items():
            busy, one = points.get("32", {}), points.get("1", {})
            cpu = busy.get("cpu", {})
            rows.append(
                row(
                    label,
                    n,
                    fmt(busy.get("rps"), 0),
                    fmt(busy.get("p50_ms")),
                    fmt(one.get("p50_ms")),
                    fmt(busy.get("server_cpu_ms_per_request"), 3),
                    fmt(busy.get("redis_scripts_per_request"), 3),
                    _others_cpu(cpu),
                    fmt(cpu.get("machine_idle_share"), 3),
                    fmt(cpu.get("machine_steal_share"), 3),
                )
            )
    return rows


def _scaling_lines(w: dict[str, Any]) -> list[str]:
    """What N workers answer over one, against the bound their work sets, and LiteLLM."""
    sc, simulated = w["scaling"], w.get("scaling_with_simulator", {})
    added, versus = sc["added_p50_ms_c1"], sc["ratio_to_litellm"]
    bound = sc.get("bound_by_work", {})
    return [
        f"- Two workers answer {fmt(sc['rps_ratio_two_over_one'])}x the requests/s of one"
        f" (bound by work: {fmt(bound.get('2'))}x), four"
        f" {fmt(sc.get('rps_ratio_four_over_one'))}x (bound"
        f" {fmt(bound.get('4'))}x); added p50 at c=1:"
        f" {fmt(added['1'], 3)} ms with one, {fmt(added['2'], 3)} ms with two.",
        f"- Round by round at c=32 (two workers over the one just before):"
        f" {ratios(sc.get('rps_ratio_by_round', []))}; change of the added p50 at c=1,"
        f" round by round: {changes(sc.get('added_p50_change_by_round_ms', []))}.",
        f"- Against LiteLLM with as many workers: {fmt(versus.get('1'))}x with one,"
        f" {fmt(versus.get('2'))}x with two.",
        f"- With the simulator as upstream on the same cores (c=32 only): two workers answer"
        f" {fmt(simulated.get('rps_ratio_two_over_one'))}x the requests/s of one; round by"
        f" round {ratios(simulated.get('rps_ratio_by_round', []))}.",
    ]


def observability_text(results: dict[str, Any]) -> str:
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
        *head(
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
            row(
                concurrency,
                fmt(figures["rps_off"], 0),
                fmt(figures["rps_on"], 0),
                f"{figures['rps_ratio']:.3f}",
                ratios(figures["rps_ratio_by_round"]),
                fmt(figures["cpu_ms_per_request_off"], 3),
                fmt(figures["cpu_ms_per_request_on"], 3),
            )
        )
    did = o.get("on_did", {})
    spans = did.get("spans", {})
    rows += [
        "",
        f"- With both on, the usage writer wrote {fmt(did.get('request_log_written'), 0)}"
        f" records (each a request-log entry) and the exporter sent"
        f" {fmt(spans.get('exported'), 0)} spans ({fmt(spans.get('dropped'), 0)} dropped,"
        f" {fmt(spans.get('failed'), 0)} refused).",
        *_observability_split(o.get("cpu_by_process", {})),
    ]
    return "\n".join(rows)


def _observability_split(split: dict[str, Any]) -> list[str]:
    """Section 9's CPU-ms per request of each process of the gateway, off -> on."""
    lines = []
    for concurrency, setups in split.items():
        off, on = setups.get("off", {}), setups.get("on", {})
        parts = [
            f"{role} {fmt(off.get(role), 3)} → {fmt(on.get(role), 3)}"
            for role in ("gateway", "usage writer", "span exporter")
        ]
        lines.append(f"- CPU-ms per request at c={concurrency}, off → on: " + ", ".join(parts))
    return lines


WORKERS_ROWS = (
    ("gateway", "our gateway"),
    ("gateway_with_simulator", "our gateway, simulator upstream"),
    ("litellm", "LiteLLM"),
)


def _others_cpu(cpu: dict[str, Any]) -> str:
    """The upstream's, Redis's and `wrk`'s CPU per request (section 7's `cpu`)."""
    spent = cpu.get("cpu_ms_per_request", {})
    names = ("upstream", "simulator", "redis", "wrk")
    parts = [f"{name} {spent[name]:.2f}" for name in names if name in spent]
    return ", ".join(parts) or "—"
