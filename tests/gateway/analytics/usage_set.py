"""A known set of usage rows, and every analytics figure computed from it independently.

Rows span two workspaces, four models of three providers, three keys, chat, embeddings,
audio and OCR, every outcome class, cache hits, and days inside and just outside the
period (2026-03-01 to 2026-03-03). The expectations below read the rows themselves with
plain Python, never the gateway's rollups or sketches.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from store.usage import UsageRecord

WORKSPACE = "default"
OTHER = "ws_elsewhere"
START, END = date(2026, 3, 1), date(2026, 3, 3)
PERIOD = {"start_date": START.isoformat(), "end_date": END.isoformat()}
MODELS = (
    ("gpt-4o-mini", "openai", "chat"),
    ("claude-3-5-haiku", "anthropic", "chat"),
    ("text-embedding-3-small", "openai", "embeddings"),
    ("tts-1", "openai", "audio.speech"),
    ("mistral-ocr-latest", "mistral", "ocr"),
)
OUTCOMES = (
    (200, None),
    (200, None),
    (200, None),
    (200, None),
    (429, "rate_limit_exceeded"),
    (504, "provider_timeout"),
    (502, "provider_error"),
    (503, "provider_unavailable"),
    (400, "context_length_exceeded"),
    (404, "model_not_found"),
)


def build_rows(keys: tuple[str, ...], count: int = 600) -> list[UsageRecord]:
    rand = random.Random(15)
    first = datetime(2026, 2, 28, 12, tzinfo=UTC)  # half a day before the period
    rows = []
    for i in range(count):
        model, provider, endpoint = rand.choice(MODELS)
        status, code = rand.choice(OUTCOMES)
        hit = endpoint == "chat" and status == 200 and rand.random() < 0.3
        prompt, completion = rand.randint(1, 900), rand.randint(0, 400)
        cost = round((prompt + completion) * 1e-6 * rand.randint(1, 30), 9)
        rows.append(
            UsageRecord(
                request_id=f"req_{i}",
                key_id=rand.choice(keys),
                workspace_id=OTHER if i % 7 == 0 else WORKSPACE,
                model=model,
                provider=provider,
                endpoint=endpoint,
                status=status,
                error_code=code,
                created_at=first + timedelta(seconds=rand.randint(0, 4 * 86400 - 1)),
                prompt_tokens=prompt if status < 400 or status == 502 else 0,
                completion_tokens=completion if status < 400 else 0,
                cost_usd=0.0 if hit or status >= 400 else cost,
                cache_savings_usd=cost if hit else 0.0,
                cache_hit=hit,
                latency_ms=round(rand.lognormvariate(6, 0.8), 3) if status != 429 else 0.0,
            )
        )
    return rows


def in_period(rows: Iterable[UsageRecord], workspace: str = WORKSPACE) -> list[UsageRecord]:
    since = datetime(START.year, START.month, START.day, tzinfo=UTC)
    until = since + timedelta(days=(END - START).days + 1)
    return [r for r in rows if r.workspace_id == workspace and since <= r.created_at < until]


def exact_percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def successes(rows: Iterable[UsageRecord]) -> list[UsageRecord]:
    return [r for r in rows if r.status < 400]


def kind(row: UsageRecord) -> str | None:
    if row.status < 400:
        return None
    if row.status == 429:
        return "rate_limit"
    if row.status == 504 or row.error_code == "provider_timeout":
        return "timeout"
    return "provider_error" if row.status >= 500 else "invalid_request"


def group(
    rows: Iterable[UsageRecord], key: Callable[[UsageRecord], Any]
) -> dict[Any, list[UsageRecord]]:
    groups: dict[Any, list[UsageRecord]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())
