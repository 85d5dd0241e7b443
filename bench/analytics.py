"""`python -m bench.analytics [--quick]`: the analytics pages and exports over a big usage log.

1. Fill: `--rows` usage rows (default 2,000,000) over the last 30 days of the default
   workspace (20 keys, 6 models of 4 providers, every outcome class, cache hits), inserted
   in one transaction, then rolled up by `store.usage_rollups.rebuild`. Before that, the
   usage writer's own insert (raw rows and rollups, batches of 500) is timed on
   `--writer-rows` rows: rows per second.
2. Pages: a gateway process (demo mode) on that data directory; each of the eight pages is
   asked `--samples` times for the whole 30 days (after 3 warm-ups); p50 and p99 in ms.
   Target: p50 under 50 ms, p99 under 200 ms.
3. Export: a CSV and a Parquet export of about `--export-rows` rows (the usage section of
   the days that hold them): time from the POST to `complete`, file size, and the gateway
   process's resident memory: its peak so far (VmHWM) and its size (VmRSS) before, then its
   peak during the export (VmHWM reset through /proc/<pid>/clear_refs first) and the
   export's own increment. Target: under 200 MiB.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio

from bench.procs import free_port
from bench.uploads import rss_kib, wait_ready
from store import usage_rollups
from store.db import open_database
from store.usage import _INSERT, UsageRecord, insert_records

ADMIN_KEY = "gw_admin_bench_" + secrets.token_hex(12)
A = "/v1/management/analytics"
PAGES = (
    "/usage?granularity=day",
    "/usage?granularity=hour&group_by=model",
    "/usage/models",
    "/usage/api-keys",
    "/costs",
    "/performance",
    "/errors",
    "/cache",
    "/realtime",
)
MODELS = (
    ("gpt-4o-mini", "openai", "chat"),
    ("gpt-4o", "openai", "chat"),
    ("claude-3-5-haiku", "anthropic", "chat"),
    ("mistral-small", "mistral", "chat"),
    ("text-embedding-3-small", "openai", "embeddings"),
    ("tts-1", "openai", "audio.speech"),
)
STATUSES = (200,) * 40 + (429, 504, 502, 400)
CODES = {429: "rate_limit_exceeded", 504: "provider_timeout", 502: "provider_error", 400: "x"}


def generate(count: int, start: datetime, days: int) -> Iterator[dict[str, Any]]:
    """`count` usage rows spread evenly over `days` days from `start`, in time order, as
    the usage log's insert takes them."""
    rand = random.Random(15)
    keys = [f"key_bench_{n:02d}" for n in range(20)]
    step = days * 86400 / count
    first = start.timestamp()
    for n in range(count):
        model, provider, endpoint = MODELS[n % len(MODELS)]
        status = STATUSES[rand.randrange(len(STATUSES))]
        hit = endpoint == "chat" and status == 200 and rand.random() < 0.1
        epoch = first + n * step
        yield {
            "request_id": f"req_{n}", "key_id": keys[n % len(keys)], "workspace_id": "default",
            "model": model, "provider": provider, "endpoint": endpoint,
            "prompt_tokens": rand.randrange(2000), "completion_tokens": rand.randrange(500),
            "audio_seconds": 0.0, "characters": 0, "pages": 0, "searches": 0,
            "bytes_stored": 0, "cost_usd": 0.0 if hit else rand.random() / 1000,
            "latency_ms": rand.lognormvariate(6, 0.7), "energy_kwh": 0.0, "carbon_gco2e": 0.0,
            "status": status, "error_code": CODES.get(status), "cache_hit": int(hit),
            "cache_savings_usd": rand.random() / 1000 if hit else 0.0, "project": None,
            "team": None, "tags": "[]", "prompt_hash": None, "agent_session": None,
            "created_at": datetime.fromtimestamp(epoch, UTC).isoformat(),
            "created_epoch": epoch,
        }  # fmt: skip


def fill(data_dir: Path, rows: int, start: datetime) -> dict[str, float]:
    """Insert the rows in one transaction (executemany), then build their rollups with
    `usage_rollups.rebuild` (the same sums the writer keeps; tests/store prove it)."""
    database = open_database(data_dir)
    try:
        began = time.perf_counter()
        database.run_sync(lambda d: _insert(d, generate(rows, start, 30)))
        inserted = time.perf_counter()
        database.run_sync(usage_rollups.rebuild)
        rolled = time.perf_counter()
        rollups = database.run_sync(
            lambda d: d.execute("SELECT count(*) FROM usage_rollups").fetchone()[0]
        )
    finally:
        database.close()
    return {"rows": rows, "insert_s": round(inserted - began, 1),
            "rollups_s": round(rolled - inserted, 1), "rollup_rows": rollups}  # fmt: skip


def _insert(db: Any, rows: Iterator[dict[str, Any]]) -> None:
    with db.atomic():
        db.conn.executemany(_INSERT, rows)


def _record(row: dict[str, Any]) -> UsageRecord:
    fields = {name: value for name, value in row.items() if name != "created_epoch"}
    fields["cache_hit"] = bool(row["cache_hit"])
    fields["tags"] = ()
    fields["created_at"] = datetime.fromisoformat(row["created_at"])
    return UsageRecord(**fields)


def writer_rate(rows: int) -> dict[str, float]:
    """Rows per second of the usage writer's own insert (raw rows and rollups), in batches
    of 500 as the writer commits them, into a fresh in-memory database."""
    database = open_database(None)
    records = [_record(row) for row in generate(rows, datetime(2026, 1, 1, tzinfo=UTC), 1)]
    try:
        began = time.perf_counter()
        for n in range(0, rows, 500):
            database.run_sync(partial(insert_records, records=records[n : n + 500]))
        elapsed = time.perf_counter() - began
    finally:
        database.close()
    return {"rows": rows, "rows_per_s": round(rows / elapsed)}


def quantile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def pages(http: httpx.AsyncClient, period: dict[str, str], samples: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for page in PAGES:
        path, _, extra = page.partition("?")
        params = {**period, **dict(p.split("=") for p in extra.split("&") if p)}
        times = []
        for n in range(samples + 3):
            began = time.perf_counter()
            response = await http.get(f"{A}{path}", params=params)
            took = (time.perf_counter() - began) * 1000
            assert response.status_code == 200, response.text
            if n >= 3:
                times.append(took)
        results[page] = {"p50_ms": round(statistics.median(times), 1),
                         "p99_ms": round(quantile(times, 0.99), 1)}  # fmt: skip
        print(f"  {page}: {results[page]}", file=sys.stderr)
    return results


async def export(
    http: httpx.AsyncClient, pid: int, period: dict[str, str], fmt: str
) -> dict[str, Any]:
    peak_before = rss_kib(pid, "VmHWM")
    # Reset the peak to the current size: VmHWM after is then the export's own peak (the
    # start-up's, e.g. migrations, no longer hides in it).
    await trio.Path(f"/proc/{pid}/clear_refs").write_text("5")
    rss_before = rss_kib(pid)
    samples: list[int] = []
    began = time.perf_counter()
    created = await http.post(f"{A}/export", json={**period, "format": fmt, "include": ["usage"]})
    assert created.status_code == 202, created.text
    record = created.json()
    while record["status"] == "processing":
        samples.append(rss_kib(pid))
        await trio.sleep(0.05)
        record = (await http.get(f"{A}/export/{record['export_id']}")).json()
    elapsed = time.perf_counter() - began
    assert record["status"] == "complete", record
    return {
        "format": fmt,
        "rows": record["rows"],
        "seconds": round(elapsed, 2),
        "rows_per_s": round(record["rows"] / elapsed),
        "mib": round(record["size_bytes"] / 2**20, 1),
        "rss_peak_before_mib": round(peak_before / 1024, 1),
        "rss_before_mib": round(rss_before / 1024, 1),
        "rss_peak_during_mib": round(rss_kib(pid, "VmHWM") / 1024, 1),
        "export_increment_mib": round((rss_kib(pid, "VmHWM") - rss_before) / 1024, 1),
        "rss_max_sampled_mib": round(max(samples, default=0) / 1024, 1),
    }


async def run(args: argparse.Namespace) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=30)
    period = {"start_date": start.date().isoformat(),
              "end_date": (today - timedelta(days=1)).date().isoformat()}  # fmt: skip
    export_days = max(1, round(30 * args.export_rows / args.rows))
    export_end = start + timedelta(days=export_days - 1)
    export_period = {
        "start_date": start.date().isoformat(),
        "end_date": export_end.date().isoformat(),
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or scratch
        if (Path(data_dir) / "gateway.db").exists():
            print("reusing the usage log in", data_dir)
        else:
            print("usage writer (raw rows + rollups):", writer_rate(args.writer_rows))
            print("fill:", fill(Path(data_dir), args.rows, start))
        env = {**os.environ, "GATEWAY_ADMIN_KEY": ADMIN_KEY, "GATEWAY_HEALTH_PROBE_INTERVAL_S": "0"}
        code = "from gateway.app.cli import main; main()"
        argv = [sys.executable, "-c", code, "serve", "--demo", "--host", "127.0.0.1",
                "--port", str(port), "--data-dir", data_dir]  # fmt: skip
        process = await trio.lowlevel.open_process(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            await wait_ready(url)
            headers = {"authorization": f"Bearer {ADMIN_KEY}"}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600) as http:
                if "pages" in args.sections:
                    print("pages (30 days):", await pages(http, period, args.samples))
                for fmt in ("csv", "parquet") if "export" in args.sections else ():
                    print("export:", await export(http, process.pid, export_period, fmt))
        finally:
            process.terminate()
            with trio.move_on_after(30, shield=True):
                await process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.analytics", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200,000 rows, 100,000 exported")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--export-rows", type=int, default=1_000_000)
    parser.add_argument("--writer-rows", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument(
        "--data-dir",
        help="keep the filled data here; a directory that already holds a database is "
        "reused as it is (for A/B runs on the same rows: copy it first, a newer gateway "
        "migrates it)",
    )
    parser.add_argument("--sections", default="pages,export", help="comma-separated: pages, export")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.export_rows, args.samples, args.writer_rows = 200_000, 100_000, 20, 10_000
    trio.run(run, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
