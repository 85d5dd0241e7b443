"""Which adapter class speaks to which provider id.

One line per vendor; the gateway builds adapters through `build_adapter` only.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from providers.anthropic import AnthropicProvider
from providers.base import Provider, ProviderEndpoint
from providers.cohere import CohereProvider
from providers.elevenlabs import ElevenLabsProvider
from providers.google import GoogleProvider
from providers.local.provider import LocalProvider
from providers.mistral import MistralProvider
from providers.openai import OpenAIProvider
from providers.upstream import Upstream

AdapterClass = Callable[[Upstream, ProviderEndpoint], Provider]

ADAPTER_CLASSES: MappingProxyType[str, AdapterClass] = MappingProxyType(
    {
        "openai": OpenAIProvider,
        "anthropic": AnthropicProvider,
        "mistral": MistralProvider,
        "cohere": CohereProvider,
        "google": GoogleProvider,
        "elevenlabs": ElevenLabsProvider,
        "local": LocalProvider,
    }
)


def build_adapter(client: Upstream, endpoint: ProviderEndpoint) -> Provider:
    """The adapter for `endpoint.provider_id`; a provider with no adapter yet is refused."""
    try:
        cls = ADAPTER_CLASSES[endpoint.provider_id]
    except KeyError:
        raise LookupError(f"no adapter for provider {endpoint.provider_id!r}") from None
    return cls(client, endpoint)


def builtin_adapters(client: Upstream) -> dict[str, Provider]:
    """Providers that need no configuration: the offline engines of `providers.local`."""
    return {"local": LocalProvider(client, ProviderEndpoint("local", "local://", ""))}
