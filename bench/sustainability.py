"""`python -m bench.sustainability [--rows N]`: how long the sustainability reports take
over a large usage log.

Builds a fresh SQLite store (all migrations) holding `--rows` served requests of one
workspace spread over the last 90 days (ten chat models, some cache hits, repeated
prompts, a few long answers), then times, in this process, what a dashboard reads and
computes: the period's groups, the daily series, the previous period, the days of history
for the percentile, and the opportunity queries and finders. Reports the median of
`--repeat` runs for `last_7_days`, `last_30_days` and a 90-day window.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
from datetime import UTC, date, datetime, timedelta

import sqlite_utils

from gateway.sustainability import figures, opportunities, score
from gateway.sustainability.period import Period
from gateway.sustainability.service import HISTORY_DAYS
from providers.catalog import load_catalog
from store import sustainability as store
from store.migrations import apply_migrations
from store.usage import UsageRecord, insert_records

WORKSPACE = "ws_bench"
MODELS = (
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "gemini-2.5-flash",
    "mistral-small-latest",
    "mistral-large-latest",
    "codestral-latest",
    "command-a-03-2025",
)


def fill(db: sqlite_utils.Database, rows: int, today: date) -> None:
    catalog, rng = load_catalog(), random.Random(16)
    now = datetime.combine(today, datetime.min.time(), UTC) + timedelta(hours=12)
    batch: list[UsageRecord] = []
    for n in range(rows):
        model = catalog.model(rng.choice(MODELS))
        assert model is not None
        hit = rng.random() < 0.1
        batch.append(
            UsageRecord(
                request_id=f"req_{n}",
                key_id="key_bench",
                workspace_id=WORKSPACE,
                model=model.id,
                provider=model.provider,
                endpoint="chat",
                status=200,
                created_at=now - timedelta(seconds=rng.uniform(0, 90 * 86400)),
                prompt_tokens=rng.randint(20, 2000),
                completion_tokens=rng.randint(10, 1600),
                energy_kwh=0.0 if hit else rng.uniform(1e-5, 2e-3),
                carbon_gco2e=0.0 if hit else rng.uniform(1e-3, 0.7),
                cache_hit=hit,
                prompt_hash=f"h{rng.randint(0, rows // 3)}",
            )
        )
        if len(batch) == 10_000:
            insert_records(db, batch)
            batch = []
    insert_records(db, batch)


def dashboard(db: sqlite_utils.Database, period: Period) -> None:
    catalog = load_catalog()

    def scope(p: Period) -> store.Scope:
        return store.Scope(WORKSPACE, p.start, p.end)

    daily = store.groups(db, scope(period), by_day=True)
    current = figures.without_days(daily)
    back = timedelta(days=HISTORY_DAYS)
    history = Period(period.first - back, period.first - timedelta(days=1))
    daily_history = store.groups(db, scope(history), by_day=True)
    days: dict[str | None, list[store.Group]] = {}
    for group in daily_history:
        days.setdefault(group.day, []).append(group)
    result = score.score(catalog, current)
    score.percentile(result.overall, [score.score(catalog, g).overall for g in days.values()])
    previous = store.groups(db, scope(period.previous()))
    analysis = opportunities.Analysis(
        groups=current,
        repeats=store.repeated_prompts(db, scope(period)),
        long_outputs=store.long_outputs(db, scope(period), opportunities.LONG_OUTPUT_TOKENS),
        active_providers=frozenset(p.id for p in catalog.providers()),
        days=period.days,
    )
    opportunities.report(catalog, analysis)
    figures.summary(current, previous, result.overall)
    figures.time_series(daily, period.dates())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 3 runs")
    args = parser.parse_args()
    rows, repeat = (20_000, 3) if args.quick else (args.rows, args.repeat)
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    apply_migrations(db)
    today = datetime.now(UTC).date()
    started = time.perf_counter()
    fill(db, rows, today)
    print(f"{rows} usage rows over 90 days written in {time.perf_counter() - started:.1f} s")
    for name, days in (("last_7_days", 7), ("last_30_days", 30), ("90 days", 90)):
        period = Period(today - timedelta(days=days - 1), today)
        timings = []
        for _ in range(repeat):
            began = time.perf_counter()
            dashboard(db, period)
            timings.append(time.perf_counter() - began)
        print(f"dashboard {name}: median {statistics.median(timings) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
