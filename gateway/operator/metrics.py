"""Prometheus metrics: one registry per app, fed from three places and read at scrape time.

- The request middleware (`gateway.operator.middleware`) counts every HTTP answer by
  endpoint family, status, provider and model and times it (the provider and model come
  from the request's usage records, so every family that calls a vendor is labelled).
- The one usage-record builder (`gateway.upstream.usage`) hands each record to
  `observe_usage`: tokens, metered units, cost, energy, carbon, cache hits, the time to
  the first token, and each upstream attempt of the race by outcome and duration.
- The upstream chain reports each attempt's time to first byte (`upstream_first_byte`).

Live figures (open streams aside) are not counted on the hot path at all: a collector
reads them from the app state when Prometheus scrapes (`gateway.operator.live`).

Every label value comes from a bounded set: families are a fixed table, statuses are
integers below 600, and providers and models pass through `BoundedLabel`, which maps
anything past its first few hundred distinct values to "other". No request id, key id or
free text is ever a label.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import TYPE_CHECKING

import attrs
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gateway.platform.context import current_request

if TYPE_CHECKING:
    from store.request_log import LoggedAttempt
    from store.usage import UsageRecord

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# Pauses of the event loop are far shorter than requests: finer buckets.
PAUSE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)
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


class CounterTally:
    """A counter family as a plain dict: the gateway runs on one trio thread, so no lock
    is needed to add, and the scrape (on the same thread) reads a consistent state."""

    def __init__(self, name: str, doc: str, labels: tuple[str, ...]) -> None:
        self.name, self.doc, self.labels = name, doc, labels
        self.values: dict[tuple[str, ...], float] = {}

    def add(self, key: tuple[str, ...], amount: float = 1.0) -> None:
        self.values[key] = self.values.get(key, 0.0) + amount

    def collect(self) -> Metric:
        family = CounterMetricFamily(self.name, self.doc, labels=list(self.labels))
        for key, value in self.values.items():
            family.add_metric(list(key), value)
        return family


class GaugeTally(CounterTally):
    def collect(self) -> Metric:
        family = GaugeMetricFamily(self.name, self.doc, labels=list(self.labels))
        for key, value in self.values.items():
            family.add_metric(list(key), value)
        return family


class HistogramTally:
    """A histogram family: per label set, one count per bucket and the sum."""

    def __init__(
        self, name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
    ) -> None:
        self.name, self.doc, self.labels, self.buckets = name, doc, labels, buckets
        self.counts: dict[tuple[str, ...], list[int]] = {}
        self.sums: dict[tuple[str, ...], float] = {}

    def observe(self, key: tuple[str, ...], value: float) -> None:
        counts = self.counts.get(key)
        if counts is None:
            counts = self.counts[key] = [0] * (len(self.buckets) + 1)
        counts[bisect_left(self.buckets, value)] += 1
        self.sums[key] = self.sums.get(key, 0.0) + value

    def add_counts(self, key: tuple[str, ...], counts: list[int], total: float) -> None:
        """Add a series' counts per bucket and its sum (a scrape's fold)."""
        mine = self.counts.get(key)
        if mine is None:
            mine = self.counts[key] = [0] * (len(self.buckets) + 1)
        for index, count in enumerate(counts):
            mine[index] += count
        self.sums[key] = self.sums.get(key, 0.0) + total

    def collect(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.doc, labels=list(self.labels))
        bounds = [*(repr(float(b)) for b in self.buckets), "+Inf"]
        for key, counts in self.counts.items():
            cumulative = list(accumulate(counts))
            family.add_metric(list(key), list(zip(bounds, cumulative, strict=True)), self.sums[key])
        return family


class _Answers:
    """The answers of one label set (family, status, provider, model): their count and
    their two histograms (to the first byte, and that less the upstreams' wait), folded
    into the request tallies at scrape time (`GatewayMetrics._fold_answers`)."""

    __slots__ = ("count", "latency", "latency_sum", "overhead", "overhead_sum")

    def __init__(self) -> None:
        self.count = 0
        self.latency = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.overhead = [0] * (len(LATENCY_BUCKETS) + 1)
        self.overhead_sum = 0.0


class _Usage:
    """The usage records of one raw (family, status, provider, model): what they metered
    and cost, summed, and their times to the first token; folded into the usage tallies
    at scrape time (`GatewayMetrics._fold_usage`). Metered units other than tokens are
    rare and go to their tally at once."""

    __slots__ = (
        "cache_hits",
        "carbon",
        "completion",
        "cost",
        "energy",
        "first_token",
        "first_token_sum",
        "labels",
        "prompt",
        "records",
        "status",
    )

    def __init__(self, labels: tuple[str, str, str], status: str) -> None:
        self.labels, self.status = labels, status
        self.records = self.cache_hits = self.prompt = self.completion = 0
        self.cost = self.energy = self.carbon = self.first_token_sum = 0.0
        self.first_token = [0] * (len(LATENCY_BUCKETS) + 1)


class _Attempts:
    """The upstream attempts of one raw (provider, model, outcome, error): their count and
    the histogram of their durations (`GatewayMetrics._fold_attempts`)."""

    __slots__ = ("count", "duration", "duration_sum", "labels")

    def __init__(self, labels: tuple[str, str, str, str]) -> None:
        self.labels = labels
        self.count = 0
        self.duration = [0] * (len(LATENCY_BUCKETS) + 1)
        self.duration_sum = 0.0


# Answers' raw label values (before `BoundedLabel`) remembered with their series: past
# this many distinct ones, an answer's labels are worked out each time (still bounded).
RAW_ANSWER_KEYS = 4096


class GatewayMetrics:
    """Every metric the gateway exports, in a registry of its own (tests run several apps
    in one process, so the global default registry would mix them).

    The request path only adds to dictionaries and lists: no lock, no string
    formatting; the text format is produced when Prometheus scrapes. An answer
    (`answered`) finds its label set's `_Answers` with one look-up of its raw values
    and adds to it; the scrape folds them into the four request tallies. Per answer
    that is a third of the dictionary work of updating the tallies themselves.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.providers = BoundedLabel()
        self.models = BoundedLabel(limit=512)
        self._answers: dict[tuple[str, int, str | None, str | None], _Answers] = {}
        self._answers_by_labels: dict[tuple[str, str, str, str], _Answers] = {}
        self._usage_labels: dict[tuple[str, str | None, str | None], tuple[str, str, str]] = {}
        self._usage: dict[tuple[str, int, str, str], _Usage] = {}
        self._attempts: dict[tuple[str, str, str, str | None], _Attempts] = {}
        self._usage_by_labels: dict[tuple[str, str, str, str], _Usage] = {}
        self._attempts_by_labels: dict[tuple[str, str, str, str], _Attempts] = {}
        self._define_requests()
        self._define_usage()
        self.registry.register(_Live(self._collect_tallies))

    def _define_requests(self) -> None:
        self.requests = CounterTally(
            "gateway_requests", "HTTP answers", ("family", "status", "provider", "model")
        )
        self.latency = HistogramTally(
            "gateway_request_duration_seconds",
            "Time from request to the first byte of the answer",
            ("family", "provider", "model"),
            LATENCY_BUCKETS,
        )
        self.overhead = HistogramTally(
            "gateway_added_latency_seconds",
            "Time to the answer's first byte minus the time spent waiting for upstreams",
            ("family",),
            LATENCY_BUCKETS,
        )
        self.first_byte = HistogramTally(
            "gateway_upstream_first_byte_seconds",
            "Upstream time from sending to the first result (an answer or a first chunk)",
            ("provider",),
            LATENCY_BUCKETS,
        )
        self.rate_limited = CounterTally(
            "gateway_rate_limit_refusals", "Requests refused by the gateway's limits", ("family",)
        )
        self.open_streams = GaugeTally(
            "gateway_open_streams", "Streamed answers being sent", ("family",)
        )
        self.gc_pause = HistogramTally(
            "gateway_gc_pause_seconds",
            "Garbage collections, by generation (the event loop stops for each)",
            ("generation",),
            PAUSE_BUCKETS,
        )
        self.loop_lag = HistogramTally(
            "gateway_loop_lag_seconds",
            "How late the event loop woke a task that asked to wake every 10 ms",
            (),
            PAUSE_BUCKETS,
        )

    def _define_usage(self) -> None:
        labels = ("family", "provider", "model")
        self.tokens = CounterTally("gateway_tokens", "Tokens metered", (*labels, "direction"))
        self.units = CounterTally("gateway_metered_units", "Non-token units", (*labels, "unit"))
        self.cost = CounterTally("gateway_cost_usd", "Cost at list prices, USD", labels)
        self.energy = CounterTally("gateway_energy_kwh", "Estimated energy, kWh", labels)
        self.carbon = CounterTally("gateway_carbon_gco2e", "Estimated emissions, gCO2e", labels)
        self.cache_hits = CounterTally(
            "gateway_cache_hits", "Answers served from the response cache", ("family",)
        )
        self.usage_records = CounterTally(
            "gateway_usage_records", "Usage records built", ("family", "status")
        )
        self.first_token = HistogramTally(
            "gateway_time_to_first_token_seconds",
            "Time from a model call's arrival to its first token (a stream's first chunk, "
            "a whole answer's arrival)",
            labels,
            LATENCY_BUCKETS,
        )
        self.attempts = CounterTally(
            "gateway_upstream_attempts",
            "Upstream attempts of the race, by how each ended",
            ("provider", "model", "outcome", "error"),
        )
        self.attempt_duration = HistogramTally(
            "gateway_upstream_attempt_duration_seconds",
            "How long each upstream attempt ran until it won, failed or was cancelled",
            ("provider", "outcome"),
            LATENCY_BUCKETS,
        )

    def _collect_tallies(self) -> Iterator[Metric]:
        self._fold_answers()
        self._fold_usage()
        for tally in vars(self).values():
            if isinstance(tally, CounterTally | HistogramTally):
                yield tally.collect()

    def observe_usage(self, record: UsageRecord) -> None:
        """One request's usage record: what it metered and what it cost, added to its
        raw values' series (`_Usage`; labels worked out once per series)."""
        usage = self._usage.get((record.endpoint, record.status, record.provider, record.model))
        if usage is None:
            usage = self._usage_of(record)
        usage.records += 1
        if record.cache_hit:
            usage.cache_hits += 1
        usage.prompt += record.prompt_tokens
        usage.completion += record.completion_tokens
        if record.audio_seconds or record.characters or record.pages or record.bytes_stored:
            self._metered(record, usage.labels)
        usage.cost += record.cost_usd
        usage.energy += record.energy_kwh
        usage.carbon += record.carbon_gco2e
        if record.ttft_ms is not None and record.status < 400:
            seconds = record.ttft_ms / 1000
            usage.first_token[bisect_left(LATENCY_BUCKETS, seconds)] += 1
            usage.first_token_sum += seconds
        for attempt in record.attempts:
            self._attempted(attempt)

    def _usage_of(self, record: UsageRecord) -> _Usage:
        """A new raw key's series: one per bounded label set and status, remembered
        under the raw values while there are few of them (as `_answers_of`)."""
        labels = self._labels(record.endpoint, record.provider, record.model)
        status = _STATUS.get(record.status) or str(record.status)
        key = (*labels, status)
        usage = self._usage_by_labels.get(key)
        if usage is None:
            usage = self._usage_by_labels[key] = _Usage(labels, status)
        if len(self._usage) < RAW_ANSWER_KEYS:
            self._usage[(record.endpoint, record.status, record.provider, record.model)] = usage
        return usage

    def _labels(self, family: str, provider: str | None, model: str | None) -> tuple[str, str, str]:
        """(family, provider, model) as labels: bounded (`BoundedLabel`), and remembered
        for the raw values while there are few of them."""
        labels = self._usage_labels.get((family, provider, model))
        if labels is None:
            labels = (family, self.providers(provider), self.models(model))
            if len(self._usage_labels) < RAW_ANSWER_KEYS:
                self._usage_labels[(family, provider, model)] = labels
        return labels

    def _metered(self, record: UsageRecord, labels: tuple[str, ...]) -> None:
        for unit in METERED_UNITS:
            amount = getattr(record, unit, 0) or 0
            if amount:
                self.units.add((*labels, unit), amount)

    def _attempted(self, attempt: LoggedAttempt) -> None:
        key = (attempt.provider, attempt.model, attempt.outcome, attempt.error)
        attempts = self._attempts.get(key)
        if attempts is None:
            attempts = self._attempts_of(key)
        attempts.count += 1
        if attempt.duration_ms is not None:
            seconds = attempt.duration_ms / 1000
            attempts.duration[bisect_left(LATENCY_BUCKETS, seconds)] += 1
            attempts.duration_sum += seconds

    def _attempts_of(self, key: tuple[str, str, str, str | None]) -> _Attempts:
        provider, model, outcome, error = key
        _, provider_label, model_label = self._labels("", provider, model)
        labels = (provider_label, model_label, outcome, error or "")
        attempts = self._attempts_by_labels.get(labels)
        if attempts is None:
            attempts = self._attempts_by_labels[labels] = _Attempts(labels)
        if len(self._attempts) < RAW_ANSWER_KEYS:
            self._attempts[key] = attempts
        return attempts

    def _fold_usage(self) -> None:
        """The usage tallies made again from the records' and attempts' series (each
        holds every record since the start); a zero sum makes no sample, as before."""
        tallies = (self.usage_records, self.cache_hits, self.tokens, self.cost)
        for tally in (*tallies, self.energy, self.carbon, self.attempts):
            tally.values = {}
        for histogram in (self.first_token, self.attempt_duration):
            histogram.counts, histogram.sums = {}, {}
        for usage in self._usage_by_labels.values():
            self._fold_one_usage(usage)
        for attempts in self._attempts_by_labels.values():
            provider, _, outcome, _ = attempts.labels
            self.attempts.add(attempts.labels, attempts.count)
            if attempts.duration_sum or any(attempts.duration):
                duration = (attempts.duration, attempts.duration_sum)
                self.attempt_duration.add_counts((provider, outcome), *duration)

    def _fold_one_usage(self, usage: _Usage) -> None:
        labels = usage.labels
        self.usage_records.add((labels[0], usage.status), usage.records)
        if usage.cache_hits:
            self.cache_hits.add((labels[0],), usage.cache_hits)
        for direction, tokens in (("prompt", usage.prompt), ("completion", usage.completion)):
            if tokens:
                self.tokens.add((*labels, direction), tokens)
        for tally, amount in ((self.cost, usage.cost), (self.energy, usage.energy)):
            if amount:
                tally.add(labels, amount)
        if usage.carbon:
            self.carbon.add(labels, usage.carbon)
        if any(usage.first_token):
            self.first_token.add_counts(labels, usage.first_token, usage.first_token_sum)

    def upstream_first_byte(self, provider: str, ms: float) -> None:
        """An upstream attempt's time to its first result; also charged to the current
        request, so that the middleware can tell the gateway's own share."""
        seconds = ms / 1000
        self.first_byte.observe((self.providers(provider),), seconds)
        context = current_request()
        if context is not None:
            context.upstream_s += seconds

    def stream_opened(self, family: str) -> None:
        self.open_streams.add((family,), 1)

    def stream_closed(self, family: str) -> None:
        self.open_streams.add((family,), -1)

    def answered(
        self,
        family: str,
        status: int,
        provider: str | None,
        model: str | None,
        elapsed_s: float,
        upstream_s: float,
    ) -> None:
        """One HTTP answer: provider and model are "none" for an answer no model call
        made (management, a refusal before any model was named)."""
        answers = self._answers.get((family, status, provider, model))
        if answers is None:
            answers = self._answers_of(family, status, provider, model)
        answers.count += 1
        answers.latency[bisect_left(LATENCY_BUCKETS, elapsed_s)] += 1
        answers.latency_sum += elapsed_s
        overhead = elapsed_s - upstream_s if elapsed_s > upstream_s else 0.0
        answers.overhead[bisect_left(LATENCY_BUCKETS, overhead)] += 1
        answers.overhead_sum += overhead

    def _answers_of(
        self, family: str, status: int, provider: str | None, model: str | None
    ) -> _Answers:
        """The series of answers with these raw values: their bounded labels' (made the
        first time), remembered under the raw values while there are few of them."""
        labels = (family, _STATUS.get(status) or str(status), self.providers(provider))
        labelled = (*labels, self.models(model))
        answers = self._answers_by_labels.get(labelled)
        if answers is None:
            answers = self._answers_by_labels[labelled] = _Answers()
        if len(self._answers) < RAW_ANSWER_KEYS:
            self._answers[(family, status, provider, model)] = answers
        return answers

    def _fold_answers(self) -> None:
        """The request tallies made again from the answers' series (they hold every
        answer since the start: the tallies are counters)."""
        self.requests.values = {}
        for tally in (self.latency, self.overhead):
            tally.counts, tally.sums = {}, {}
        self.rate_limited.values = {}
        for (family, status, provider, model), answers in self._answers_by_labels.items():
            self.requests.add((family, status, provider, model), answers.count)
            self.latency.add_counts((family, provider, model), answers.latency, answers.latency_sum)
            self.overhead.add_counts((family,), answers.overhead, answers.overhead_sum)
            if status == "429":
                self.rate_limited.add((family,), answers.count)

    def watch(self, source: Callable[[], Iterator[Metric]]) -> None:
        """Add figures read at scrape time."""
        self.registry.register(_Live(source))

    def render(self) -> bytes:
        return generate_latest(self.registry)


_STATUS = {code: str(code) for code in range(100, 600)}


class _Live(Collector):
    def __init__(self, source: Callable[[], Iterator[Metric]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        return self._source()

    def describe(self) -> list[Metric]:
        return []
