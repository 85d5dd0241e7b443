"""Files: the per-workspace storage quota (507), counted over every file of the workspace."""

from __future__ import annotations

import attrs
import httpx
import pytest

from gateway.platform.config import Settings
from gateway.platform.server import RunningGateway

from .test_files_api import upload


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, files_quota_bytes=1000)


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
