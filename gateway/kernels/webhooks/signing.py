"""Signatures on outgoing webhook calls (status webhooks and alert notifications).

A receiver must be able to tell our calls from forgeries and replays, so each call carries
`X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` computed with the
subscription's own secret over `"<t>." + body`. Including the timestamp lets a receiver
refuse old calls (we suggest a five-minute tolerance); the secret is returned once, when
the subscription (or alert) is created, and stored encrypted.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "X-Service-Signature"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300


def new_secret() -> str:
    """A fresh signing secret: `whsec_` and 32 random bytes in url-safe base64."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of `"<timestamp>." + body` under `secret`."""
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify(
    secret: str, header: str, body: bytes, *, now: float, tolerance_s: float = DEFAULT_TOLERANCE_S
) -> bool:
    """What a receiver does: parse the header, check the age, compare in constant time."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = signature(secret, timestamp, body)
    return hmac.compare_digest(expected, parts.get("v1", ""))
