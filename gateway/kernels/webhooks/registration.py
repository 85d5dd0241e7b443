"""A webhook's URL checked when it is registered, the same way for every family.

Status webhooks, status alerts and agents' limit alerts each take a URL to deliver to.
It must lead where the operator's address policy lets webhooks go
(`providers.upstream.guard.webhook_policy`: public addresses, and the hosts of
`GATEWAY_WEBHOOK_ALLOWED_HOSTS`); each delivery is checked again when it connects.
"""

from __future__ import annotations

from gateway.platform.errors import ApiError
from providers.upstream.guard import UnsafeUrl, check_registration, webhook_policy


async def check_webhook_url(url: str, allowed_hosts: str, *, param: str) -> None:
    """Return if `url` may be registered; else a 400 with the guard's code, naming `param`."""
    try:
        await check_registration(url, webhook_policy(allowed_hosts))
    except UnsafeUrl as exc:
        raise ApiError(400, exc.code, str(exc), param=param, value=url) from None
