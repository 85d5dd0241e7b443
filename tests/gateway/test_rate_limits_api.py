"""GET /v1/management/rate-limits, served by its blueprint over a running gateway's state.

The limiter is built here (the app wires its own), so the test can take from it and see
the figures move.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from quart_trio import QuartTrio

from gateway.admin.rate_limits import rate_limits_blueprint
from gateway.app.server import RunningGateway
from gateway.platform.errors import ApiError
from gateway.platform.web import error_response
from gateway.upstream.limits import RateLimiter, store_count_loader
from providers.types import Usage
from store import keys, usage
from store.keys import ApiKeyRecord, RateLimits
from store.secrets import KeyKind, new_api_key
from tests.gateway.conftest import ADMIN_KEY

PATH = "/v1/management/rate-limits"


@attrs.frozen
class Harness:
    gateway: RunningGateway
    limiter: RateLimiter
    app: QuartTrio

    async def get(self, token: str | None) -> tuple[int, Any]:
        headers = {} if token is None else {"authorization": f"Bearer {token}"}
        response = await self.app.test_client().get(PATH, headers=headers)
        return response.status_code, await response.get_json()

    def add_key(self, kind: KeyKind, permissions: tuple[str, ...], **limits: int) -> str:
        secret = new_api_key(kind)
        record = keys.new_record(
            secret,
            workspace_id=self.admin().workspace_id,
            name="t",
            kind=kind,
            permissions=permissions,
            now=datetime.now(UTC),
            rate_limits=RateLimits(**limits),
        )
        self.gateway.state.keyring.put(record)
        return secret

    def admin(self) -> ApiKeyRecord:
        record = self.gateway.state.keyring.lookup(ADMIN_KEY)
        assert record is not None
        return record


@pytest.fixture
def harness(gateway: RunningGateway) -> Harness:
    limiter = RateLimiter(count_loader=store_count_loader(gateway.state.db))
    app = QuartTrio(__name__)
    admin = attrs.evolve(gateway.state.admin, limits=limiter, upstream=limiter.upstream)
    app.register_blueprint(rate_limits_blueprint(admin))

    async def api_error(error: ApiError) -> Any:
        return error_response(error)

    app.register_error_handler(ApiError, api_error)
    return Harness(gateway, limiter, app)


def _assert_iso(text: str) -> datetime:
    assert text.endswith("Z")
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_the_view_shows_plan_defaults_and_every_provider(harness: Harness) -> None:
    status, body = await harness.get(ADMIN_KEY)
    assert status == 200, body
    assert set(body) == {"api_key", "providers"}
    mine = body["api_key"]
    assert mine["rpm"]["limit"] == mine["rpm"]["remaining"] == 600  # admin keys: Pro plan
    assert mine["tpm"]["limit"] == mine["tpm"]["remaining"] == 400_000
    assert mine["daily"]["limit"] is None and mine["daily"]["remaining"] is None
    for figure in ("rpm", "tpm", "daily"):
        _assert_iso(mine[figure]["reset_at"])
    midnight = _assert_iso(mine["daily"]["reset_at"])
    assert (midnight.hour, midnight.minute, midnight.second) == (0, 0, 0)
    configured = harness.gateway.state.registry.configured(harness.admin().workspace_id)
    assert set(body["providers"]) == set(configured) and configured
    for figures in body["providers"].values():
        assert figures == {
            "rpm": {"limit": None, "remaining": None},
            "tpm": {"limit": None, "remaining": None},
        }


async def test_the_view_follows_what_was_taken(harness: Harness) -> None:
    admin = harness.admin()
    admission = await harness.limiter.acquire(admin, 1500)
    admission.settle(Usage(1000))
    admission.release()
    provider_id, entry = next(
        iter(harness.gateway.state.registry.configured(admin.workspace_id).items())
    )
    harness.gateway.state.registry.put(
        attrs.evolve(entry.record, settings={**entry.record.settings, "rpm": 100, "tpm": 9000})
    )
    harness.limiter.upstream.record_request(admin.workspace_id, provider_id)
    harness.limiter.upstream.record_tokens(admin.workspace_id, provider_id, 1000)

    status, body = await harness.get(ADMIN_KEY)
    assert status == 200, body
    assert body["api_key"]["rpm"]["remaining"] == 599
    assert body["api_key"]["tpm"]["remaining"] == 399_000
    reset = _assert_iso(body["api_key"]["rpm"]["reset_at"])
    assert 55 < (reset - datetime.now(UTC)).total_seconds() <= 60
    assert body["providers"][provider_id] == {
        "rpm": {"limit": 100, "remaining": 99},
        "tpm": {"limit": 9000, "remaining": 8000},
    }


async def test_the_daily_figure_starts_from_the_usage_log(harness: Harness) -> None:
    secret = harness.add_key("dev", ("management",), daily_requests=10, rpm=7)
    record = harness.gateway.state.keyring.lookup(secret)
    assert record is not None
    today = [
        usage.UsageRecord(
            request_id=f"req_{i}",
            key_id=record.id,
            workspace_id=record.workspace_id,
            model="m",
            provider="p",
            endpoint="chat",
            status=200,
            created_at=datetime.now(UTC),
        )
        for i in range(4)
    ]
    await harness.gateway.state.db.run(lambda d: usage.insert_records(d, today))
    status, body = await harness.get(secret)
    assert status == 200, body
    mine = body["api_key"]
    assert mine["daily"]["limit"] == 10 and mine["daily"]["remaining"] == 6
    assert mine["rpm"]["limit"] == mine["rpm"]["remaining"] == 7
    assert mine["tpm"]["limit"] == 40_000  # a dev key's own tpm is unset: the Free plan's


async def test_an_ordinary_key_reads_its_own_limits_only(harness: Harness) -> None:
    status, body = await harness.get(harness.add_key("prod", ("chat",), rpm=5))
    assert status == 200, body
    assert set(body) == {"api_key"}  # the providers' figures need management
    assert body["api_key"]["rpm"] == {
        "limit": 5,
        "remaining": 5,
        "reset_at": body["api_key"]["rpm"]["reset_at"],
    }
    status, body = await harness.get(None)
    assert status == 401
    assert body["error"]["code"] == "invalid_api_key"


async def test_a_refusal_is_a_429_envelope(harness: Harness) -> None:
    secret = harness.add_key("dev", ("management",), rpm=1)
    record = harness.gateway.state.keyring.lookup(secret)
    assert record is not None
    (await harness.limiter.acquire(record, 1)).release()
    app = harness.app

    @app.get("/refused")
    async def refused() -> Any:
        await harness.limiter.acquire(record, 1)
        return "never"

    response = await app.test_client().get("/refused")
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) in range(59, 61)
    assert response.headers["X-RateLimit-Remaining-Requests"] == "0"
    error = (await response.get_json())["error"]
    assert (error["type"], error["code"], error["limit_type"]) == (
        "rate_limit_error",
        "rate_limit_exceeded",
        "rpm",
    )
    assert (error["limit"], error["current"]) == (1, 1)
