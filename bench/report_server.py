"""The summary's sections 1-6: the gateway's chat and streams against its targets, the
soak, the simulator's ceiling and the HTTP server's floor (pure: results JSON in, Markdown
out)."""

from __future__ import annotations

from typing import Any

from bench.report_format import cores, fmt, head, ordered, row, section_of


def nonstream_table(results: dict[str, Any]) -> str:
    section = section_of(results, "nonstream")
    if not section:
        return ""
    rows = [
        f"### 1. Non-streamed chat ({section['duration_s']:g} s per point, `wrk`)",
        "",
        *head(
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
        for name in ordered(points):
            p = points[name].get(str(level))
            if p is None:
                continue
            added = overhead.get(name, {}).get(str(level), {})
            rows.append(
                row(
                    level,
                    name,
                    fmt(p["rps"], 0),
                    fmt(p["mean_ms"]),
                    fmt(p["p50_ms"]),
                    fmt(p["p99_ms"]),
                    fmt(p["percentiles_ms"].get("99.9")),
                    fmt(p["percentiles_ms"].get("100")),
                    fmt(p["p99_ms"] / p["mean_ms"] if p["mean_ms"] else None),
                    fmt(added.get("p50_ms")),
                    fmt(added.get("p99_ms")),
                    p["errors"],
                    fmt(p["server_cpu_ms_per_request"], 3),
                    fmt(p.get("upstream_calls_per_request")),
                    fmt(p["server_rss_peak_mib"], 0),
                )
            )
    return "\n".join([*rows, "", _tail_table(points.get("gateway", {}))])


def _tail_table(points: dict[str, Any]) -> str:
    """The gateway's own view of each point (`bench/timeline.py`): where its tail lies."""
    rows = [
        "Where the gateway's tail comes from (its own log: latency inside the app, and its"
        " collections and loop stalls over 1 ms):",
        "",
        *head(
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
            row(
                level,
                " / ".join(
                    fmt(found[k]) for k in ("gateway_p50_ms", "gateway_p99_ms", "gateway_max_ms")
                ),
                " / ".join(
                    fmt(found.get(k))
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
    return f"{kind['count']:.0f} / {fmt(kind['total_ms'])} / {fmt(kind['max_ms'])}"


def stream_table(results: dict[str, Any]) -> str:
    section = section_of(results, "stream")
    if not section:
        return ""
    level = str(section["concurrency"])
    rows = [
        f"### 2. Streamed chat, 20 chunks, concurrency {level}"
        f" ({section['duration_s']:g} s per target)",
        "",
        *head(
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
    for name in ordered(section["points"]):
        p = section["points"][name][level]
        rows.append(
            row(
                name,
                fmt(p["streams_per_s"], 0),
                fmt(p["first_chunk_p50_ms"]),
                fmt(p["first_chunk_p99_ms"]),
                fmt(p["last_chunk_p50_ms"]),
                fmt(p["last_chunk_p99_ms"]),
                p["errors"],
                fmt(p["server_cpu_ms_per_stream"], 3),
                fmt(p["server_rss_peak_mib"], 0),
            )
        )
    return "\n".join(rows)


def open_streams_table(results: dict[str, Any]) -> str:
    section = section_of(results, "open-streams")
    if not section:
        return ""
    rows = [
        "### 3. Slow streams held open through the gateway",
        "",
        *head(
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
            row(
                f"{int(count):,}",
                f"{p['opened']:,}",
                p["failed"],
                p["ended_early"],
                fmt(p["open_time_s"], 1),
                fmt(p["rss_before_mib"], 1),
                fmt(p["rss_open_mib"], 1),
                p["fds_open"],
                fmt(p["rss_after_mib"], 1),
                p["fds_after"],
                fmt(p.get("settle_s"), 1),
            )
        )
    return "\n".join(rows)


def soak_text(results: dict[str, Any]) -> str:
    s = section_of(results, "soak")
    if not s:
        return ""
    return "\n".join(
        [
            f"### 4. Soak: {s['duration_s']:g} s of non-streamed load"
            f" at concurrency {s['concurrency']}",
            "",
            f"- {fmt(s['load']['rps'], 0)} req/s, p50 {fmt(s['load']['p50_ms'])} ms,"
            f" p99 {fmt(s['load']['p99_ms'])} ms, {s['load']['errors']} errors.",
            f"- Gateway RSS {fmt(s['rss_start_mib'], 1)} MiB"
            f" after the {s['warmup_s']:g} s warm-up (median of the first third),"
            f" {fmt(s['rss_end_mib'], 1)} MiB at the end (last third,"
            f" {s['rss_growth_pct']:+.1f} %),"
            f" peak {fmt(s['rss_peak_mib'], 1)} MiB.",
            f"- Open descriptors under load {s['fds_start']} → {s['fds_end']}"
            f" (they vary by {s.get('fds_noise', 0)} as pooled connections come and go);"
            f" idle before {s['fds_idle_before']}, idle after {s['fds_idle_after']}.",
        ]
    )


def ceiling_text(results: dict[str, Any]) -> str:
    c = section_of(results, "ceiling")
    if not c:
        return ""
    per_level = ", ".join(
        f"c={k}: {fmt(v['rps'], 0)} req/s ({fmt(v['requests_per_cpu_s'], 0)} per CPU-second)"
        for k, v in c["points"].items()
    )
    shared = ", ".join(f"c={k}: {fmt(v, 0)} req/s" for k, v in c["shared_core_rps"].items())
    ratio = f"{c['ratio_to_gateway']:g}x" if c["ratio_to_gateway"] else "—"
    return "\n".join(
        [
            "### 5. Simulator ceiling",
            "",
            f"- `wrk` on core(s) {cores(c['load_cores'])}, simulator alone on core(s)"
            f" {cores(c['simulator_cores'])}: {per_level}.",
            f"- Sharing the simulator's core with `wrk` (section 1, direct): {shared or '—'}.",
            f"- Best {fmt(c['best_rps'], 0)} req/s, {ratio} the gateway's non-streamed c=32 rate.",
        ]
    )


def floor_text(results: dict[str, Any]) -> str:
    f = section_of(results, "floor")
    if not f:
        return ""
    rows = [
        f"### 6. The HTTP server's floor: Hypercorn alone ({f['duration_s']:g} s per point, `wrk`)",
        "",
        *head(
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
            row(
                level,
                fmt(p["rps"], 0),
                fmt(p["p50_ms"]),
                fmt(p["p99_ms"]),
                fmt(v.get("floor_added_p50_ms")),
                fmt(p["server_cpu_ms_per_request"], 3),
                fmt(v.get("gateway_cpu_ms_per_request"), 3),
                fmt(v.get("gateway_own_cpu_ms_per_request"), 3),
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
        f"Hypercorn alone serves {fmt(top['rps'], 0)} req/s at c=32 with"
        f" {fmt(top['server_cpu_ms_per_request'], 3)} CPU-ms per request"
        if top
        else "Hypercorn alone was not measured at c=32"
    )
    if at_32.get("gateway_own_cpu_ms_per_request") is not None:
        text += (
            f" ({fmt(at_32['floor_share_of_gateway_cpu_pct'], 0)} % of the gateway's"
            f" {fmt(at_32['gateway_cpu_ms_per_request'], 3)}): the gateway's own work is"
            f" {fmt(at_32['gateway_own_cpu_ms_per_request'], 3)} CPU-ms per request"
        )
    if one.get("floor_added_p50_ms") is not None:
        text += (
            f"; at c=1 the server alone adds {fmt(one['floor_added_p50_ms'])} ms p50 over"
            f" direct-to-simulator, of the gateway's {fmt(one['gateway_added_p50_ms'])} ms"
        )
    return text + "."
