"""Files: the per-workspace storage quota (507), and a full processing queue that waits."""

from __future__ import annotations

import attrs
import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings

from .test_files_api import processed, upload


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """A 1,000-byte quota, or the overrides a test passes (indirect parametrization)."""
    overrides = getattr(request, "param", {"files_quota_bytes": 1000})
    return attrs.evolve(settings, **overrides)


async def test_the_workspace_quota_answers_507(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    first = await upload(http, "a.txt", b"a" * 600)
    assert first.status_code == 200
    second = await upload(http, "b.txt", b"b" * 600)
    assert second.status_code == 507, second.text
    assert second.json()["error"]["code"] == "storage_quota_exceeded"
    assert len(gateway.state.files.blobs.stored()) == 1
    await http.delete(f"/v1/files/{first.json()['id']}")
    assert (await upload(http, "b.txt", b"b" * 600)).status_code == 200


@pytest.mark.parametrize("settings", [{"file_queue_size": 1, "file_workers": 1}], indirect=True)
async def test_a_full_queue_makes_uploads_wait_and_drops_nothing(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    ids = []
    for index in range(6):
        answer = await upload(http, f"q{index}.txt", f"queued file {index}".encode(), process="1")
        assert answer.status_code == 200, answer.text
        ids.append(answer.json()["id"])
    for index, file_id in enumerate(ids):
        assert (await processed(http, file_id))["status"] == "processed"
        text = (await http.get(f"/v1/files/{file_id}/text")).json()["text"]
        assert text == f"queued file {index}"
