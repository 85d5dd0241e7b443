"""Prometheus metrics: one registry per app, fed from three places and read at scrape time.

- The request middleware (`gateway.operator.middleware`) counts every HTTP answer by
  endpoint family, status and provider and times it.
- The one usage-record builder (`gateway.upstream.usage`) hands each record to
  `observe_usage`: tokens, metered units, cost, energy, carbon, cache hits.
- The upstream chain reports each attempt's time to first byte (`upstream_first_byte`).

Live figures (open streams aside) are not counted on the hot path at all: a collector
reads them from the app state when Prometheus scrapes (`StateCollector`).

Every label value comes from a bounded set: families are a fixed table, statuses are
integers below 600, and providers and models pass through `BoundedLabel`, which maps
anything past its first few hundred distinct values to "other". No request id, key id or
free text is ever a label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from gateway.operator.context import current_request

if TYPE_CHECKING:
    from store.usage import UsageRecord

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
METERED_UNITS = ("audio_seconds", "characters", "pages", "bytes_stored")


@attrs.define
class BoundedLabel:
    """A label value from an open set, kept bounded: the first `limit` distinct values
    pass, later ones become "other" (a misbehaving client cannot grow the series)."""

    limit: int = 256
    _seen: set[str] = attrs.field(factory=set)

    def __call__(self, value: str | None) -> str:
        if not value:
            return "none"
        if value in self._seen:
            return value
        if len(self._seen) >= self.limit:
            return "other"
        self._seen.add(value)
        return value


class GatewayMetrics:
    """Every metric the gateway exports, in a registry of its own (tests run several apps
    in one process, so the global default registry would mix them)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.providers = BoundedLabel()
        self.models = BoundedLabel(limit=512)
        self._define_requests()
        self._define_usage()

    def _define_requests(self) -> None:
        r = self.registry
        self.requests = Counter(
            "gateway_requests", "HTTP answers", ["family", "status", "provider"], registry=r
        )
        self.latency = Histogram(
            "gateway_request_duration_seconds",
            "Time from request to the first byte of the answer",
            ["family"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.overhead = Histogram(
            "gateway_added_latency_seconds",
            "Time to the answer's first byte minus the time spent waiting for upstreams",
            ["family"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.first_byte = Histogram(
            "gateway_upstream_first_byte_seconds",
            "Upstream time from sending to the first result (an answer or a first chunk)",
            ["provider"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rate_limited = Counter(
            "gateway_rate_limit_refusals",
            "Requests refused by the gateway's limits",
            ["family"],
            registry=r,
        )
        self.open_streams = Gauge(
            "gateway_open_streams", "Streamed answers being sent", ["family"], registry=r
        )

    def _define_usage(self) -> None:
        r = self.registry
        labels = ["family", "provider", "model"]
        self.tokens = Counter(
            "gateway_tokens", "Tokens metered", [*labels, "direction"], registry=r
        )
        self.units = Counter(
            "gateway_metered_units", "Non-token units", [*labels, "unit"], registry=r
        )
        self.cost = Counter("gateway_cost_usd", "Cost at list prices, USD", labels, registry=r)
        self.energy = Counter("gateway_energy_kwh", "Estimated energy, kWh", labels, registry=r)
        self.carbon = Counter(
            "gateway_carbon_gco2e", "Estimated emissions, gCO2e", labels, registry=r
        )
        self.cache_hits = Counter(
            "gateway_cache_hits", "Answers served from the response cache", ["family"], registry=r
        )
        self.usage_records = Counter(
            "gateway_usage_records", "Usage records built", ["family", "status"], registry=r
        )

    def observe_usage(self, record: UsageRecord) -> None:
        """One request's usage record: what it metered and what it cost."""
        family = record.endpoint
        labels = (family, self.providers(record.provider), self.models(record.model))
        self.usage_records.labels(family, str(record.status)).inc()
        if record.cache_hit:
            self.cache_hits.labels(family).inc()
        if record.prompt_tokens:
            self.tokens.labels(*labels, "prompt").inc(record.prompt_tokens)
        if record.completion_tokens:
            self.tokens.labels(*labels, "completion").inc(record.completion_tokens)
        for unit in METERED_UNITS:
            amount = getattr(record, unit, 0) or 0
            if amount:
                self.units.labels(*labels, unit).inc(amount)
        if record.cost_usd:
            self.cost.labels(*labels).inc(record.cost_usd)
        if record.energy_kwh:
            self.energy.labels(*labels).inc(record.energy_kwh)
        if record.carbon_gco2e:
            self.carbon.labels(*labels).inc(record.carbon_gco2e)

    def upstream_first_byte(self, provider: str, ms: float) -> None:
        """An upstream attempt's time to its first result; also charged to the current
        request, so that the middleware can tell the gateway's own share."""
        seconds = ms / 1000
        self.first_byte.labels(self.providers(provider)).observe(seconds)
        context = current_request()
        if context is not None:
            context.upstream_s += seconds

    def answered(
        self, family: str, status: int, provider: str | None, elapsed_s: float, upstream_s: float
    ) -> None:
        self.requests.labels(family, str(status), self.providers(provider)).inc()
        self.latency.labels(family).observe(elapsed_s)
        self.overhead.labels(family).observe(max(0.0, elapsed_s - upstream_s))
        if status == 429:
            self.rate_limited.labels(family).inc()

    def watch(self, source: Callable[[], Iterator[Metric]]) -> None:
        """Add figures read at scrape time."""
        self.registry.register(_Live(source))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Live(Collector):
    def __init__(self, source: Callable[[], Iterator[Metric]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        return self._source()

    def describe(self) -> list[Metric]:
        return []


def gauge(name: str, doc: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def summary(name: str, doc: str, count: int, total: float) -> SummaryMetricFamily:
    return SummaryMetricFamily(name, doc, count_value=count, sum_value=total)
