"""Reading the Prometheus text format back in tests."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def total(found: Samples, name: str, **want: str) -> float:
    return sum(
        value
        for (sample, labels), value in found.items()
        if sample == name and set(want.items()) <= set(labels)
    )


async def scrape(http: httpx.AsyncClient) -> Samples:
    response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return samples(response.text)
