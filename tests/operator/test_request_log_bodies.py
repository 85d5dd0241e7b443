"""Bodies in the request log: none unless the workspace turns them on; then the request
and the answer are kept PII-redacted and encrypted at rest, shown to owners and admins
only, and erased from the disk when the workspace turns them off or the window passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai

from gateway.app.server import RunningGateway
from gateway.requestlog.retention import purge as purge_request_log
from tests.gateway.conftest import warm_pii_worker

LOG = "/v1/management/request-log"
WORKSPACE = "/v1/management/workspaces/default"
__all__ = ["warm_pii_worker"]  # the detector's process loads its models before the tests

SECRET_WORD = "bioluminescent"
PROMPT = f"My {SECRET_WORD} email is jane.doe@example.com; call me on 212-555-0187."


async def sealed_bodies(gateway: RunningGateway) -> list[str]:
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: d.execute("SELECT body FROM request_log WHERE body IS NOT NULL").fetchall()
    )
    return [row[0] for row in rows]


def on_disk(data_dir: Path, needle: str) -> list[str]:
    """Every file under the data directory whose bytes hold `needle`."""
    return [
        str(path)
        for path in data_dir.rglob("*")
        if path.is_file() and needle.encode() in path.read_bytes()
    ]


async def entry_of(http: httpx.AsyncClient, request_id: str, **headers: str) -> dict[str, Any]:
    answer = await http.get(f"{LOG}/{request_id}", headers=headers)
    assert answer.status_code == 200, answer.text
    [found] = answer.json()["entries"]
    return dict(found)


async def test_no_body_is_kept_unless_the_workspace_asks(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    workspace = (await http.get(WORKSPACE)).json()
    assert workspace["request_log_bodies"] is False
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
    )
    found = await entry_of(http, raw.headers["x-request-id"])
    assert found["body_kept"] is False and "body" not in found
    assert await sealed_bodies(gateway) == []
    assert on_disk(gateway.state.settings.data_dir, SECRET_WORD) == []


async def test_kept_bodies_are_redacted_encrypted_and_shown_to_admins(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    switched = await http.patch(WORKSPACE, json={"request_log_bodies": True})
    assert switched.status_code == 200, switched.text
    assert switched.json()["request_log_bodies"] is True
    plain = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
    )
    stream = await client.chat.completions.with_raw_response.create(
        model="claude-haiku-4-5", messages=[{"role": "user", "content": PROMPT}], stream=True
    )
    chunks = [c async for c in stream.parse()]  # type: ignore[union-attr]
    streamed_text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    answer = plain.parse().choices[0].message.content
    for raw, text in ((plain, answer), (stream, streamed_text)):
        found = await entry_of(http, raw.headers["x-request-id"])
        assert found["body_kept"] is True
        sent = found["body"]["request"]["messages"][0]["content"]
        assert SECRET_WORD in sent
        assert "jane.doe@example.com" not in sent and "212-555-0187" not in sent
        assert "[EMAIL" in sent and "[PHONE" in sent
        assert found["body"]["response"]["content"] == text
        assert found["body"]["response"]["finish_reason"] == "stop"
    sealed = await sealed_bodies(gateway)
    assert len(sealed) == 2
    assert all(SECRET_WORD not in body and "jane.doe" not in body for body in sealed)
    assert on_disk(gateway.state.settings.data_dir, SECRET_WORD) == []

    account = await http.post(
        "/v1/management/service-accounts",
        json={"name": "dashboards", "role": "viewer", "workspaces": ["default"]},
    )
    assert account.status_code == 201, account.text
    viewer = {"authorization": f"Bearer {account.json()['api_key']}"}
    seen = await entry_of(http, plain.headers["x-request-id"], **viewer)
    assert seen["body_kept"] is True and "body" not in seen
    assert seen["attempts"]  # everything else is theirs to read


async def test_turning_bodies_off_erases_them_from_the_disk(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await http.patch(WORKSPACE, json={"request_log_bodies": True})
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
    )
    [token] = await sealed_bodies(gateway)
    data_dir = gateway.state.settings.data_dir
    assert on_disk(data_dir, token[:40])  # in the database file or its WAL
    off = await http.patch(WORKSPACE, json={"request_log_bodies": False})
    assert off.status_code == 200 and off.json()["request_log_bodies"] is False
    assert (await entry_of(http, raw.headers["x-request-id"]))["body_kept"] is False
    assert on_disk(data_dir, token[:40]) == []
    again = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
    )
    assert (await entry_of(http, again.headers["x-request-id"]))["body_kept"] is False
    events = await http.get("/v1/management/audit-log", params={"type": "workspace.updated"})
    assert events.json()["events"][0]["details"] == {"changed": ["request_log_bodies"]}


async def test_the_window_erases_kept_bodies_from_the_disk(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await http.patch(WORKSPACE, json={"request_log_bodies": True})
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}]
    )
    [token] = await sealed_bodies(gateway)
    far_future = 4_000_000_000.0  # every entry is past the window then
    assert await purge_request_log(gateway.state.request_log, now=far_future) >= 1
    assert on_disk(gateway.state.settings.data_dir, token[:40]) == []


async def test_a_bad_switch_is_a_400(http: httpx.AsyncClient) -> None:
    answer = await http.patch(WORKSPACE, json={"request_log_bodies": "yes"})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "request_log_bodies"
