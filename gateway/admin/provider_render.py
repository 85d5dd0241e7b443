"""The provider-management answers, as TypedDicts (the OpenAPI document's schemas are
written from them; `gateway.admin.providers` and the routes build them). Credentials are
never shown."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from gateway.admin.key_render import UsageToday
from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Doc, Range

ProviderStatus = Annotated[
    str, Choices(("active", "inactive", "disabled")), Doc("inactive: not configured")
]


class LastError(TypedDict):
    """The latest failed call to the provider."""

    time: Time | None
    type: str | None


class ProviderHealth(TypedDict):
    """The provider's health in the workspace, with its success rate over 30 days."""

    status: Annotated[str, Choices(("healthy", "degraded"))]
    latency_ms: float | None
    last_check: Time | None
    uptime_30d: Annotated[float, Range(least=0, most=1)]
    last_error: LastError | None


class ProviderSummary(TypedDict):
    """A provider of the catalog, configured in the workspace or not."""

    id: str
    name: str
    status: ProviderStatus
    configured: bool
    configured_at: Time | None
    models: list[str]
    health: ProviderHealth | None


class ProviderList(TypedDict):
    providers: list[ProviderSummary]


class ConfiguredProvider(TypedDict):
    """A provider just configured."""

    id: str
    name: str
    status: ProviderStatus
    configured: Literal[True]
    configured_at: Time
    models: list[str]


class ProviderModel(TypedDict):
    """A catalog model of the provider; `available`: it would be routed to now."""

    id: str
    type: str
    available: bool


class ProviderDetail(TypedDict):
    """One provider: its settings (never its credentials), models, health and today's use."""

    id: str
    name: str
    status: ProviderStatus
    configured: bool
    configured_at: Time | None
    models: list[ProviderModel]
    health: ProviderHealth | None
    settings: dict[str, Any]
    credentials_updated_at: Time | None
    disabled_at: Time | None
    capabilities: list[str]
    usage: UsageToday


class LiveHealth(TypedDict):
    """The live figures of a configured provider (the last calls' window)."""

    status: Annotated[str, Choices(("healthy", "degraded", "disabled"))]
    latency_ms: float | None
    success_rate: float | None
    samples: int
    last_error: LastError | None


class ProvidersHealth(TypedDict):
    providers: Annotated[dict[str, LiveHealth], Doc("By provider id")]


class CredentialsUpdated(TypedDict):
    id: str
    credentials_updated_at: Time | None
    status: ProviderStatus


class ProviderTestError(TypedDict):
    type: str
    message: str


class ProviderTest(TypedDict):
    """A live call to the vendor (its model list), timed."""

    id: str
    test_result: Literal["success", "failure"]
    latency_ms: int | None
    models_available: list[str]
    tested_at: Time
    error: NotRequired[ProviderTestError]


class Disabled(TypedDict):
    id: str
    status: ProviderStatus
    disabled_at: Time | None


class Enabled(TypedDict):
    id: str
    status: ProviderStatus
    enabled_at: Time


class ProviderForgotten(TypedDict):
    """A deleted configuration: the provider is `inactive` again."""

    id: str
    deleted: Literal[True]
    status: Literal["inactive"]
    configured: Literal[False]
