"""One PNG chart per run with matplotlib: latency distributions, throughput, the soak and
the latency timeline, each a panel of the same figure (`<stem>.png` beside `<stem>.json`).

matplotlib is in the `dev` extra, which `make bench` installs; `ensure_matplotlib` installs
it into the running venv when the bench runs without it. The figure carries a footer naming
the machine, the pinning and the durations, so a chart copied elsewhere still says what it
measured.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report_format import section_of

COLORS = {"direct": "#7f7f7f", "gateway": "#1f77b4", "litellm": "#d62728"}
LABELS = {"direct": "direct to simulator", "gateway": "our gateway", "litellm": "LiteLLM proxy"}
PAUSE_COLORS = {"gc": "#d62728", "loop_lag": "#ff7f0e"}
FOOTER_IN = 0.3  # inches under the panels for the footer

Panel = Callable[[dict[str, Any], Any], None]  # draws one part of the run into a subfigure


def ensure_matplotlib() -> str | None:
    """None when matplotlib is importable (installing it if needed), else why not."""
    try:
        importlib.import_module("matplotlib")
        return None
    except ImportError:
        pass
    print("installing matplotlib into this venv for the charts...", file=sys.stderr, flush=True)
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        return f"pip install matplotlib failed: {done.stderr.strip()[-300:]}"
    importlib.invalidate_caches()
    return None


def draw(results: dict[str, Any], path: Path) -> Path | None:
    """The run's one chart, a panel for each part the results hold; None when they hold
    none (a section with nothing to plot, such as `workers` alone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    panels = _panels(results)
    if not panels:
        return None
    heights = [height for height, _ in panels]
    fig = plt.figure(figsize=(12, sum(heights) + FOOTER_IN), layout="constrained")
    footer = FOOTER_IN / (sum(heights) + FOOTER_IN)  # the footer's strip, as a fraction
    engine = fig.get_layout_engine()
    assert isinstance(engine, ConstrainedLayoutEngine)  # layout="constrained" above
    engine.set(rect=(0, footer, 1, 1 - footer))  # left, bottom, width, height
    subfigures = fig.subfigures(len(panels), 1, height_ratios=heights, squeeze=False)
    for sub, (_, panel) in zip(subfigures.flat, panels, strict=True):
        panel(results, sub)
    _footer(fig, results)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _panels(results: dict[str, Any]) -> list[tuple[float, Panel]]:
    """(height in inches, drawer) of each part the results can show, top to bottom."""
    latency_rows = -(-len(_latency_panels(results)) // 2)
    candidates: list[tuple[float, Panel]] = [
        (4.0 * latency_rows, _latency),
        (4.6 if _throughput_groups(results) else 0, _throughput),
        (4.6 if _soak_of(results) else 0, _soak),
        (4.5 if _timeline_of(results) else 0, _timeline),
    ]
    return [(height, panel) for height, panel in candidates if height]


def _footer(fig: Any, results: dict[str, Any]) -> None:
    m, pin, plan = results["machine"], results["pinning"], results["plan"]
    soak = _soak_of(results)
    durations = f"{plan['point_s']:g} s per point" + (
        f", {soak['duration_s']:g} s soak" if soak else ""
    )
    text = (
        f"{m['cores']} cores, {m['cpu_model']} | gateway/LiteLLM on core {_cores(pin['gateway'])},"
        f" simulator + load on core {_cores(pin['load'])} | {durations} | {results['date']}"
    )
    fig.text(0.01, 0.005, text, fontsize=7, color="#555555")


def _cores(cores: Any) -> str:
    return ",".join(str(c) for c in cores)


def _latency(results: dict[str, Any], sub: Any) -> None:
    """Percentile curves: one panel per non-streamed concurrency, two for streams."""
    panels = _latency_panels(results)
    columns = 2 if len(panels) > 1 else 1
    rows = -(-len(panels) // columns)
    axes = sub.subplots(rows, columns, squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (title, curves) in zip(axes.flat, panels, strict=False):
        for name, percentiles in curves.items():
            xs = list(range(len(percentiles)))
            ax.plot(
                xs,
                list(percentiles.values()),
                marker="o",
                ms=3,
                label=LABELS[name],
                color=COLORS[name],
            )
            ax.set_xticks(xs, list(percentiles), rotation=60, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("percentile")
        ax.set_ylabel("ms (log)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    sub.suptitle("Latency distributions")


def _latency_panels(results: dict[str, Any]) -> list[tuple[str, dict[str, dict[str, float]]]]:
    panels = []
    nonstream = (section_of(results, "nonstream") or {}).get("points", {})
    levels = sorted({int(c) for by_c in nonstream.values() for c in by_c})
    for level in levels:
        curves = {
            n: by_c[str(level)]["percentiles_ms"]
            for n, by_c in nonstream.items()
            if str(level) in by_c
        }
        panels.append((f"non-streamed, concurrency {level}", curves))
    stream = section_of(results, "stream")
    if stream:
        at = str(stream["concurrency"])
        for kind, key in (("first chunk", "first_chunk"), ("last chunk", "last_chunk")):
            curves = {n: by_c[at][f"{key}_percentiles_ms"] for n, by_c in stream["points"].items()}
            panels.append((f"streamed, time to {kind}, concurrency {at}", curves))
    return panels


def _throughput(results: dict[str, Any], sub: Any) -> None:
    """Grouped bars: requests/s per concurrency and streams/s, per target."""
    groups = _throughput_groups(results)
    names = [n for n in LABELS if any(n in values for _, values in groups)]
    ax = sub.subplots()
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [g + i * width for g in range(len(groups))]
        ys = [values.get(name, 0) for _, values in groups]
        bars = ax.bar(xs, ys, width, label=LABELS[name], color=COLORS[name])
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.set_xticks(
        [g + width * (len(names) - 1) / 2 for g in range(len(groups))],
        [label for label, _ in groups],
        fontsize=8,
    )
    ax.set_ylabel("per second")
    ax.set_title("Throughput per target")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _throughput_groups(results: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    groups = []
    nonstream = (section_of(results, "nonstream") or {}).get("points", {})
    levels = sorted({int(c) for by_c in nonstream.values() for c in by_c})
    for level in levels:
        values = {n: by_c[str(level)]["rps"] for n, by_c in nonstream.items() if str(level) in by_c}
        groups.append((f"req/s, non-streamed\nc={level}", values))
    stream = section_of(results, "stream")
    if stream:
        at = str(stream["concurrency"])
        values = {n: by_c[at]["streams_per_s"] for n, by_c in stream["points"].items()}
        groups.append((f"streams/s, streamed\nc={at}", values))
    return groups


def _soak_of(results: dict[str, Any]) -> dict[str, Any] | None:
    soak = section_of(results, "soak")
    return soak if soak and soak["samples"] else None


def _soak(results: dict[str, Any], sub: Any) -> None:
    """The gateway's RSS and open descriptors over the soak."""
    soak = _soak_of(results)
    assert soak is not None  # `_panels` draws this panel only then
    t, rss, fds = zip(*soak["samples"], strict=True)
    ax = sub.subplots()
    ax.plot(t, rss, color=COLORS["gateway"], label="RSS (MiB)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("RSS MiB")
    ax.set_ylim(0, max(rss) * 1.2)
    ax.axvline(soak["warmup_s"], color="#999999", ls=":", label="end of warm-up")
    other = ax.twinx()
    other.plot(t, fds, color="#ff7f0e", label="open fds")
    other.set_ylabel("open file descriptors")
    other.set_ylim(0, max(fds) * 1.5)
    ax.set_title(f"Gateway during the soak (non-streamed, concurrency {soak['concurrency']})")
    ax.legend(loc="lower left", fontsize=8)
    other.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)


def _timeline_of(results: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The concurrency and timeline of the gateway's point that recorded one, if any."""
    points = (section_of(results, "nonstream") or {}).get("points", {}).get("gateway", {})
    for level, point in points.items():
        timeline = point.get("timeline", {})
        if timeline.get("points"):
            return level, timeline
    return None


def _timeline(results: dict[str, Any], sub: Any) -> None:
    """Latency over time at the timeline's concurrency: one dot per request (the
    gateway's own latency, at the time it ended), and a mark for each collection or loop
    stall the gateway logged. Slow requests stacked in one column share a pause; slow
    requests spread along the run come from contention."""
    found = _timeline_of(results)
    assert found is not None  # `_panels` draws this panel only then
    level, timeline = found
    ax = sub.subplots()
    xs = [t / 1000 for t, _ in timeline["points"]]
    ax.scatter(
        xs, [ms for _, ms in timeline["points"]], s=2, color=COLORS["gateway"], label="request"
    )
    ax.axhline(timeline["gateway_p99_ms"], color="#555555", lw=0.8, ls="--", label="p99")
    for kind, color in PAUSE_COLORS.items():
        ticks = [(t / 1000, ms) for t, k, ms in timeline["pause_points"] if k == kind]
        if ticks:
            ax.scatter(
                [t for t, _ in ticks],
                [ms for _, ms in ticks],
                marker="x",
                s=14,
                color=color,
                label=f"{kind} pause (its length)",
            )
    ax.set_yscale("log")
    ax.set_xlabel("seconds into the load point")
    ax.set_ylabel("ms (log)")
    ax.set_title(
        f"non-streamed, concurrency {level}: latency over time; slow requests clustered"
        f" {timeline['slow_clustered_share']:.0%}, in flight during a pause"
        f" {timeline['slow_during_pause_share']:.0%}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
