"""Which front door may name a model: OpenAI serves some models through one API only.

OpenAI's Responses-only models (`o3-pro`, `gpt-5.5-pro`: the catalog's `endpoints:
["responses"]`) asked on `/v1/chat/completions` are OpenAI's own 404 there, and the
gateway answers a client that names one on another door as OpenAI would, in its envelope
(`model_endpoint_not_supported`), rather than serving what the vendor's API refuses.
Pure: the catalog and the names.
"""

from __future__ import annotations

from gateway.platform.errors import ApiError
from providers.catalog import Catalog

CHAT_COMPLETIONS = "chat_completions"
PATHS = {
    "chat_completions": "v1/chat/completions",
    "responses": "v1/responses",
    "messages": "v1/messages",
}


def refuse_off_endpoint(catalog: Catalog, model: str, endpoint: str) -> None:
    """A 404 `model_endpoint_not_supported` naming `model` when the catalog's model (by
    id, alias or `provider/model`) is served through other doors than `endpoint` only;
    nothing for any other model (`auto`, unknown ids: resolution says what they are)."""
    info = catalog.model(model)
    if info is None or info.served_on(endpoint):
        return
    served = " and ".join(PATHS[e] for e in info.endpoints)
    raise ApiError(
        404,
        "model_endpoint_not_supported",
        f"This model is only supported in {served} and not in {PATHS[endpoint]}.",
        param="model",
        model=model,
        endpoints=list(info.endpoints),
    )
