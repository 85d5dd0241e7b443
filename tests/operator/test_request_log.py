"""The request log through the management API: a fallback's attempts, the filters, the
cursor, the window, and workspace isolation. Requests are made with the official client;
the log is read as an operator reads it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from gateway.requestlog.retention import purge as purge_request_log
from providers.sim.core import Fault
from store.request_log import LoggedAttempt
from store.usage import UsageRecord, insert_records
from store.workspaces import DEFAULT_WORKSPACE_ID
from tests.operator.conftest import ADMIN_KEY

LOG = "/v1/management/request-log"
HELLO: Any = [{"role": "user", "content": "Hello"}]


async def entries_of(http: httpx.AsyncClient, request_id: str, **headers: str) -> list[Any]:
    answer = await http.get(f"{LOG}/{request_id}", headers=headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["object"] == "request_log.request"
    assert body["id"] == request_id
    entries: list[Any] = body["entries"]
    return entries


async def listed(http: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    answer = await http.get(LOG, params=params)
    assert answer.status_code == 200, answer.text
    page: dict[str, Any] = answer.json()
    return page


@pytest.mark.parametrize("stream", [False, True])
async def test_a_fallback_shows_both_attempts_in_the_request_log(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient, stream: bool
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=HELLO,
        stream=stream,
        extra_headers={"X-Request-ID": f"fallback-proof-{stream}"},
    )
    if stream:
        [_ async for _ in raw.parse()]  # type: ignore[union-attr]
    assert raw.headers["x-request-id"] == f"fallback-proof-{stream}"
    [entry] = await entries_of(http, f"fallback-proof-{stream}")
    assert entry["status"] == 200
    assert entry["model_requested"] == "gpt-4o-mini"
    assert entry["provider"] != "openai"
    assert raw.headers["x-service-model-used"] == f"{entry['provider']}/{entry['model']}"
    first, second = entry["attempts"]
    assert (first["provider"], first["model"], first["outcome"], first["error"]) == (
        "openai",
        "gpt-4o-mini",
        "failed",
        "provider_error",
    )
    assert (second["provider"], second["outcome"], second["error"]) == (
        entry["provider"],
        "won",
        None,
    )
    # latency_ms is whole milliseconds, cut down (a 30.6 ms request reads 30), while the
    # attempts' offsets keep a thousandth: the second may start within its last one.
    assert 0 <= first["start_ms"] <= second["start_ms"] < entry["latency_ms"] + 1
    assert second["start_ms"] >= first["start_ms"] + first["duration_ms"] - 1
    assert entry["ttft_ms"] == pytest.approx(second["start_ms"] + second["duration_ms"], abs=1)
    assert entry["usage"]["completion_tokens"] > 0
    assert entry["cost_usd"] > 0
    assert entry["key_id"].startswith("key_")


async def test_filters_and_the_cursor(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    ok_ids = []
    for n in range(3):
        raw = await client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"ok {n}"}]
        )
        ok_ids.append(raw.headers["x-request-id"])
    gateway.sim.faults.add(Fault(model="*", status=500))
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model="claude-haiku-4-5", messages=HELLO)
    failed_id = failed.value.response.headers["x-request-id"]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="gpt-4o-mini", messages=[])
    refused_id = refused.value.response.headers["x-request-id"]
    await gateway.state.usage.flush()

    everything = await listed(http)
    ids = [e["id"] for e in everything["data"]]
    assert ids[:5] == [refused_id, failed_id, *reversed(ok_ids)]  # newest first
    assert everything["has_more"] is False and everything["next_cursor"] is None

    errors = await listed(http, status="5xx")
    assert [e["id"] for e in errors["data"]] == [failed_id]
    [failure] = errors["data"]
    assert failure["status"] == 502 and failure["error_code"] == "provider_error"
    assert failure["provider"] == failure["attempts"][-1]["provider"]  # the one that failed
    assert len(failure["attempts"]) >= 2
    assert [e["id"] for e in (await listed(http, status="error"))["data"]] == [
        refused_id,
        failed_id,
    ]
    assert [e["id"] for e in (await listed(http, status="400"))["data"]] == [refused_id]
    by_code = await listed(http, error_code="provider_error")
    assert [e["id"] for e in by_code["data"]] == [failed_id]
    assert {e["id"] for e in (await listed(http, model="claude-haiku-4-5"))["data"]} == {failed_id}
    served = await listed(http, provider="openai", status="200")
    assert {e["id"] for e in served["data"]} == set(ok_ids)
    key_id = everything["data"][0]["key_id"]
    assert len((await listed(http, key_id=key_id))["data"]) == 5
    assert (await listed(http, key_id="key_nobody"))["data"] == []
    latencies = sorted(e["latency_ms"] for e in everything["data"])
    floor = latencies[len(latencies) // 2]
    slow = (await listed(http, min_latency_ms=floor))["data"]
    assert sorted(e["latency_ms"] for e in slow) == [x for x in latencies if x >= floor]
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert (await listed(http, since=tomorrow))["data"] == []
    assert len((await listed(http, until=tomorrow))["data"]) == 5

    pages, cursor = [], None
    while True:
        page = await listed(http, limit=2, **({"cursor": cursor} if cursor else {}))
        pages.append([e["id"] for e in page["data"]])
        cursor = page["next_cursor"]
        assert page["has_more"] is (cursor is not None)
        if cursor is None:
            break
    assert pages == [ids[0:2], ids[2:4], ids[4:5]]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"status": "6xx"}, "status"),
        ({"status": "ok"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-01-02T10:00"}, "since"),  # a time without its zone
        ({"min_latency_ms": "-1"}, "min_latency_ms"),
        ({"min_latency": "10"}, "min_latency"),
    ],
)
async def test_bad_parameters_are_400s_naming_them(
    http: httpx.AsyncClient, params: dict[str, str], param: str
) -> None:
    answer = await http.get(LOG, params=params)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_request", param)


@pytest.mark.parametrize(
    ("params", "code", "param"),
    [
        ({"cursor": "not-a-cursor"}, "invalid_cursor", "cursor"),
        ({"since": "2026-01-02", "until": "2026-01-01"}, "invalid_period", "since"),
        ({"since": "2026-01-02", "until": "2026-01-02"}, "invalid_period", "since"),
        ({"until": "9999-12-31T23:59:00-05:00"}, "invalid_period", "until"),
    ],
)
async def test_values_of_the_right_shape_that_mean_nothing_have_codes_of_their_own(
    http: httpx.AsyncClient, params: dict[str, str], code: str, param: str
) -> None:
    """Each is valid by the document's parameter schemas (a string, two dates), so a
    shape code would say the document is looser than the server."""
    answer = await http.get(LOG, params=params)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == (code, param)


async def test_an_unknown_request_is_a_404(http: httpx.AsyncClient) -> None:
    answer = await http.get(f"{LOG}/no-such-request")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "request_not_found"
    assert answer.headers["x-request-id"]


def old_record(request_id: str, created_at: datetime) -> UsageRecord:
    return UsageRecord(
        request_id=request_id,
        key_id="key_old",
        workspace_id=DEFAULT_WORKSPACE_ID,
        model="gpt-4o-mini",
        provider="openai",
        endpoint="chat",
        status=200,
        created_at=created_at,
        request_log=True,
        attempts=(LoggedAttempt("openai", "gpt-4o-mini", 1, 0.5, 12.0, "won"),),
    )


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, request_log_days=2.0)


async def test_entries_leave_the_log_past_its_window(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    now = datetime.now(UTC)
    records = [
        old_record("three-days-old", now - timedelta(days=3)),
        old_record("one-day-old", now - timedelta(days=1)),
    ]
    await gateway.state.db.run(lambda d: insert_records(d, records))
    [kept] = await entries_of(http, "one-day-old")
    assert kept["attempts"] == [
        {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "try": 1,
            "start_ms": 0.5,
            "duration_ms": 12.0,
            "outcome": "won",
            "error": None,
        }
    ]
    assert len((await listed(http))["data"]) == 2
    assert await purge_request_log(gateway.state.request_log, now=now.timestamp()) == 1
    assert [e["id"] for e in (await listed(http))["data"]] == ["one-day-old"]
    assert (await http.get(f"{LOG}/three-days-old")).status_code == 404
    assert await purge_request_log(gateway.state.request_log, now=now.timestamp()) == 0


async def test_a_workspace_sees_only_its_own_requests(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    created = await http.post("/v1/management/workspaces", json={"name": "Other"})
    assert created.status_code == 201, created.text
    other = created.json()["id"]
    made = await http.post(
        "/v1/management/api-keys",
        # A managing key of that workspace alone (an admin key would reach the whole
        # organisation, the default workspace included).
        json={"name": "other-manager", "type": "prod", "permissions": ["chat", "management"]},
        headers={"x-workspace-id": other},
    )
    assert made.status_code == 201, made.text
    other_key = made.json()["key"]
    mine = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"X-Request-ID": "shared-id"}
    )
    assert mine.headers["x-request-id"] == "shared-id"
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {other_key}"}, timeout=10
    ) as theirs:
        answer = await theirs.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": HELLO},
            headers={"X-Request-ID": "shared-id"},
        )
        assert answer.headers["x-request-id"] == "shared-id"
        await theirs.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": HELLO},
            headers={"X-Request-ID": "only-theirs"},
        )
        await gateway.state.usage.flush()
        their_view = (await theirs.get(LOG)).json()["data"]
        assert {e["id"] for e in their_view} == {"shared-id", "only-theirs"}
        [their_entry] = await entries_of(theirs, "shared-id")
        assert (
            await theirs.get(f"{LOG}/shared-id", headers={"x-workspace-id": "default"})
        ).status_code == 404
    [my_entry] = await entries_of(http, "shared-id")
    assert my_entry["key_id"] != their_entry["key_id"]
    assert my_entry["status"] == 200
    assert "only-theirs" not in {e["id"] for e in (await listed(http))["data"]}
    assert (await http.get(f"{LOG}/only-theirs")).status_code == 404
    assert ADMIN_KEY  # the operator's key reaches the other workspace when it names it
    [seen] = await entries_of(http, "only-theirs", **{"x-workspace-id": other})
    assert seen["key_id"] == their_entry["key_id"]
