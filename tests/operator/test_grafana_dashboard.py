"""The Grafana dashboard (docs/grafana-dashboard.json) is built on series the gateway
really exports: every query parses as PromQL (`promtool check rules`), names only series
docs/observability.md lists, and a running gateway exports every listed series in a form
`promtool check metrics` accepts."""

from __future__ import annotations

import gc
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs
import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.sim.core import Fault
from tests.operator.tiny_http import OtlpReceiver, receiver

DOCS = Path(__file__).resolve().parents[2] / "docs"
DASHBOARD = DOCS / "grafana-dashboard.json"
SERIES = re.compile(r"\bgateway_[a-z0-9_]+")
SUFFIXES = re.compile(r"_(bucket|count|sum)$")
__all__ = ["receiver"]  # the fixture


def documented() -> set[str]:
    """The metric names of the table in docs/observability.md's Metrics section."""
    text = (DOCS / "observability.md").read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(gateway_[a-z0-9_]+)` \|", section, re.MULTILINE))


def exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool is not None, "promtool is in scripts/system-packages.txt (Debian: prometheus)"
    return subprocess.run(
        [tool, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "family", "provider"} <= variables
    for panel in panels:
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"
            assert panel["targets"] and all(t["expr"] for t in panel["targets"])


def test_every_query_parses_and_names_a_documented_series(tmp_path: Path) -> None:
    listed = documented()
    named = {SUFFIXES.sub("", name) for expr in exprs() for name in SERIES.findall(expr)}
    assert named - listed == set()
    assert {
        "gateway_time_to_first_token_seconds",
        "gateway_upstream_attempts_total",
        "gateway_requests_total",
    } <= named
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{n}", "expr": _concrete(expr)}
                    for n, expr in enumerate(exprs())
                ],
            }
        ]
    }
    path = tmp_path / "rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps(rules))
    checked = promtool("check", "rules", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _concrete(expr: str) -> str:
    """A dashboard query as Prometheus receives it from Grafana."""
    return (
        expr.replace("$__rate_interval", "5m").replace("$family", ".*").replace("$provider", ".*")
    )


@pytest.fixture
def settings(settings: Settings, receiver: tuple[OtlpReceiver, str]) -> Settings:
    """Tracing and the pause tracer on, so that their series exist too."""
    return attrs.evolve(settings, otlp_endpoint=receiver[1] + "/v1/traces", trace_pauses=True)


async def test_a_running_gateway_exports_every_documented_series(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=1))
    await client.chat.completions.create(model="gpt-4o-mini", messages=_hello("one"))
    await client.chat.completions.create(model="gpt-4o-mini", messages=_hello("one"))  # cached
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=_hello("two"), stream=True
    )
    async for _ in stream:
        pass
    await client.audio.speech.create(model="tts-1", voice="nova", input="Hello there.")
    gc.collect()  # a collection the pause tracer times
    await trio.sleep(0.05)  # the loop-lag timer ticks every 10 ms
    await gateway.state.usage.flush()
    text = (await http.get("/metrics")).text
    exported = {SUFFIXES.sub("", name) for name in SERIES.findall(text)}
    assert documented() - exported == set()
    checked = promtool("check", "metrics", stdin=text)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _hello(text: str) -> Any:
    return [{"role": "user", "content": text}]
