"""The summary's parts for issue 37: the hot path against the floor, the budget per
request, and the instructions per request (pure: results JSON in, Markdown out)."""

from __future__ import annotations

from typing import Any

from bench.checks import GUARD_SHORTFALL, Check


def hotpath_text(results: dict[str, Any], checks: list[Check]) -> str:
    section = _section(results, "hotpath")
    if not section:
        return ""
    relayed, hits = section["relayed"], section["cache_hits"]
    rows = [
        f"### The hot path against the floor ({section['rounds']} alternating rounds of"
        f" {section['point_s']:g} s per point, medians; load average"
        f" {relayed['load_average']:g})",
        "",
        "| figure | gateway | floor | gateway vs floor | gateway CPU-ms/req | floor CPU-ms/req |",
        "|---|---:|---:|---:|---:|---:|",
        *_rows("relayed", relayed),
        *_rows("cache hit", hits),
        _speech_row(section["speech"]),
        "",
        _memory_line(section),
        f"- Guard (`make bench-quick`): {_guard_line(checks)}",
    ]
    return "\n".join(rows)


def _memory_line(section: dict[str, Any]) -> str:
    """Issue 37's memory figure (the gateway's process, and which install it was
    composed as), with the process tree beside it."""
    tree = f"process tree, its usage writer included: {section['gateway_rss_peak_mib']:g} MiB"
    process = section.get("gateway_process_rss_peak_mib")
    if process is None:
        return f"- Gateway RSS under load ({tree})."
    composed = (
        "composed as a core install"
        if section.get("gateway_module") == "bench.core_serve"
        else "every extra installed"
    )
    return (
        f"- Gateway process RSS under load (issue 37's figure, target <= 90 MiB): peak"
        f" {process:g} MiB, {composed}, during its c=32 rounds ({tree})."
    )


def _rows(label: str, figures: dict[str, Any]) -> list[str]:
    rows = []
    c32, c1, sse = figures.get("c32"), figures.get("c1"), figures.get("sse")
    if c32:
        rows.append(
            _row(
                f"{label}: req/s at c=32",
                _n(c32["gateway"]["rps"], 0),
                _n(c32["floor"]["rps"], 0),
                f"{c32['ratio']:.2f}x",
                _n(c32["gateway"]["server_cpu_ms_per_request"], 3),
                _n(c32["floor"]["server_cpu_ms_per_request"], 3),
            )
        )
    if c1:
        for field, name in (("p50_ms", "p50"), ("p99_ms", "p99")):
            rows.append(
                _row(
                    f"{label}: c=1 {name} ms",
                    _n(c1["gateway"][field]),
                    _n(c1["floor"][field]),
                    f"{c1[f'added_{field}']:+.2f} ms",
                    _n(c1["gateway"]["server_cpu_ms_per_request"], 3),
                    _n(c1["floor"]["server_cpu_ms_per_request"], 3),
                )
            )
    if sse:
        rows.append(
            _row(
                f"{label}: SSE streams/s at c=32 (20 chunks)",
                _n(sse["gateway"]["streams_per_s"], 0),
                _n(sse["floor"]["streams_per_s"], 0),
                f"{sse['ratio']:.2f}x",
                _n(sse["gateway"]["server_cpu_ms_per_request"], 3),
                _n(sse["floor"]["server_cpu_ms_per_request"], 3),
            )
        )
    return rows


def _speech_row(speech: dict[str, Any]) -> str:
    return _row(
        f"speech: first byte at c=1, p50 ms ({speech['requests']} requests each)",
        _n(speech["gateway_p50_ms"]),
        _n(speech["floor_p50_ms"]),
        f"{speech['added_p50_ms']:+.2f} ms",
        _n(speech["gateway_cpu_ms_per_request"], 3),
        "—",
    )


def _guard_line(checks: list[Check]) -> str:
    guarded = [c for c in checks if c.score is not None]
    if not guarded:
        return "nothing measured."
    failed = [c for c in guarded if c.guard_failed]
    bar = f"{1 - GUARD_SHORTFALL:.0%}"
    if not failed:
        return f"every guarded figure at {bar} of its target or better."
    return f"{len(failed)} of {len(guarded)} guarded figures under {bar} of their target: " + (
        ", ".join(f"{c.name.removeprefix('hot path: ')} at {c.score:.0%}" for c in failed)
    )


def budget_table(results: dict[str, Any]) -> str:
    section = _section(results, "budget")
    if not section:
        return ""
    rows = [
        f"### The budget per relayed request (py-spy, {section['samples']:,} samples at c=32,"
        f" {section['cpu_ms_per_request']:.3f} CPU-ms per request, {section['rps']:g} req/s)",
        "",
        "| stage | share of samples | CPU us per request |",
        "|---|---:|---:|",
    ]
    for stage, figures in section["stages"].items():
        rows.append(
            _row(stage, f"{figures['share_pct']:.1f} %", _n(figures["cpu_us_per_request"], 0))
        )
    gc_us = section["gc_ms_per_request"] * 1000
    rows.append(
        _row("garbage collection (timed by the gateway, within the above)", "", _n(gc_us, 1))
    )
    return "\n".join(rows)


def instructions_text(results: dict[str, Any]) -> str:
    section = _section(results, "instructions")
    if not section:
        return ""
    ours, theirs = section["gateway"], section["floor"]
    return (
        "### Instructions per relayed request (callgrind, load-independent)\n\n"
        f"- Gateway {ours['per_request'] / 1e6:.2f} M, Hypercorn alone"
        f" {theirs['per_request'] / 1e6:.2f} M: {section['ratio']:.2f}x; the gateway's own"
        f" {section['gateway_own_per_request'] / 1e6:.2f} M per request"
        f" ({section['requests']} requests on one connection after {section['warm_up']},"
        f" idle instructions taken off: gateway {ours['idle_per_s'] / 1e6:.2f} M/s,"
        f" floor {theirs['idle_per_s'] / 1e6:.2f} M/s)."
    )


def _section(results: dict[str, Any], name: str) -> dict[str, Any] | None:
    section = results["sections"].get(name)
    return None if not section or "error" in section else section


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _n(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"
