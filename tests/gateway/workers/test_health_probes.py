"""The health-probe worker: every active provider asked for its model list, each answer
(or its absence) recorded apart from request outcomes."""

from __future__ import annotations

import attrs
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from gateway.upstream.registry import ConfiguredProvider
from gateway.workers.health_probes import probe_round
from providers.base import Provider
from providers.errors import UpstreamUnavailable


class Silent(Provider):
    provider_id = "anthropic"

    async def list_models(self) -> list[str]:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


class Down(Provider):
    provider_id = "mistral"

    async def list_models(self) -> list[str]:
        raise UpstreamUnavailable("mistral", "connection refused")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, health_probe_deadline_s=0.2)


def install(gateway: RunningGateway, provider: Provider) -> None:
    configured = gateway.state.registry.configured("default")
    assert isinstance(configured, dict)
    configured[provider.provider_id] = ConfiguredProvider(
        configured[provider.provider_id].record, provider
    )


async def test_one_round_probes_every_active_provider(gateway: RunningGateway) -> None:
    install(gateway, Silent())
    install(gateway, Down())
    health = gateway.state.health

    with trio.fail_after(5):  # the silent provider is given up after its 0.2 s deadline
        await probe_round(gateway.state.probes)

    (openai,) = health.probes("default", "openai")  # the simulator answers
    assert openai.ok and openai.latency_ms >= 0
    (silent,) = health.probes("default", "anthropic")
    assert not silent.ok and silent.error_type == "provider_timeout"
    (down,) = health.probes("default", "mistral")
    assert not down.ok and down.error_type == "provider_unavailable"
    # a provider that served no request is judged by its probes, with no latency
    figures = health.figures("default", "mistral")
    assert figures.status == "degraded" and figures.latency_ms is None
    assert health.figures("default", "openai").status == "healthy"
    # probes are not request outcomes: routing's latency signal stays unknown
    assert health.figures("default", "openai").latency_ms is None


class Broken(Provider):
    """A fault of ours inside one provider's call (an encoding error, a bug)."""

    provider_id = "cohere"

    async def list_models(self) -> list[str]:
        raise UnicodeEncodeError("latin-1", "ключ", 0, 1, "ordinal not in range(256)")


async def test_a_fault_in_one_providers_probe_is_recorded_and_the_round_goes_on(
    gateway: RunningGateway,
) -> None:
    install(gateway, Broken())
    with trio.fail_after(5):
        await probe_round(gateway.state.probes)
    (broken,) = gateway.state.health.probes("default", "cohere")
    assert not broken.ok and broken.error_type == "internal_error"
    (openai,) = gateway.state.health.probes("default", "openai")
    assert openai.ok
