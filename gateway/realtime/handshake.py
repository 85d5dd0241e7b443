"""The handshake of `GET /v1/realtime`: where the key is, which dialect, which
subprotocol to answer. Pure."""

from __future__ import annotations

from collections.abc import Mapping

SUBPROTOCOL_KEY = "openai-insecure-api-key."
SUBPROTOCOL_BETA = "openai-beta.realtime-v1"


def credential(authorization: str | None, subprotocols: list[str]) -> str | None:
    """The `Authorization` header, or the key a browser puts in a subprotocol."""
    if authorization:
        return authorization
    for protocol in subprotocols:
        if protocol.startswith(SUBPROTOCOL_KEY):
            return "Bearer " + protocol[len(SUBPROTOCOL_KEY) :]
    return None


def wants_beta(headers: Mapping[str, str], subprotocols: list[str]) -> bool:
    beta = (headers.get("openai-beta") or "").replace(" ", "").lower()
    return "realtime=v1" in beta.split(",") or SUBPROTOCOL_BETA in subprotocols


def chosen_subprotocol(subprotocols: list[str]) -> str | None:
    """The subprotocol the handshake answers with: `realtime` when the client offered it
    (a browser's SDK offers it beside the key)."""
    return "realtime" if "realtime" in subprotocols else None
