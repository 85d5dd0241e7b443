"""One signed webhook call, retried with exponential backoff and jitter for a bounded time.

Each attempt re-checks the URL with the SSRF guard (the name is resolved again, and the
call goes to the address just checked), signs the body with the current timestamp
(`gateway.kernels.webhooks.signing`) and posts it. A 2xx answer delivers; a 408, 429, 5xx, a
timeout or a connection failure is retried after `RetryPolicy.delay`; any other answer
(a redirect included: it is never followed) and a refused URL fail at once. Retrying
stops when the next attempt would start later than `window_s` after the first (for a
delivery resumed after a restart: after it was logged, its earlier attempts counted).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable

import attrs
import httpx
import trio

from gateway.kernels.webhooks.hub import DeliveryJob
from gateway.kernels.webhooks.signing import SIGNATURE_HEADER, signature_header
from providers.upstream.guard import (
    AddressPolicy,
    Resolver,
    Unresolved,
    UnsafeUrl,
    check_url,
    system_resolver,
)

RETRYABLE_STATUSES = frozenset({408, 425, 429})


@attrs.frozen
class RetryPolicy:
    base_s: float = 1.0
    cap_s: float = 300.0
    window_s: float = 3600.0
    attempt_timeout_s: float = 10.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Wait after the `attempt`-th failure: base * 2^(attempt-1), capped, times a
        random factor in [0.5, 1) so receivers that failed together are not retried
        together."""
        return float(min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))) * rng.uniform(0.5, 1.0)


@attrs.frozen
class Attempt:
    ok: bool
    retryable: bool
    status_code: int | None = None
    error: str | None = None


# Told each attempt's outcome and the status it leads to; answers the status the log
# now holds when that differs (the source was deleted: `failed`), else None.
Recorder = Callable[[Attempt, str], Awaitable[str | None]]


@attrs.frozen
class Deliverer:
    """What every delivery shares: the pooled client, the policy, the guard's settings."""

    client: httpx.AsyncClient
    policy: RetryPolicy
    addresses: AddressPolicy
    rng: random.Random = attrs.field(factory=random.Random)
    resolve: Resolver = system_resolver
    wall_clock: Callable[[], float] = time.time

    async def deliver(self, job: DeliveryJob, record: Recorder) -> str:
        """Attempt until delivered, refused, or out of time; `record` is told every
        attempt's outcome with the delivery's status after it (`pending` while retries
        remain), and stops when the log says otherwise. Returns the final status.
        Cancellation stops it between or during
        attempts; the delivery then stays `pending` in the log."""
        started = trio.current_time() - job.elapsed_s
        number = job.attempts
        while True:
            number += 1
            outcome = await self.attempt(job)
            delay = self.policy.delay(number, self.rng)
            late = trio.current_time() + delay - started > self.policy.window_s
            if outcome.ok:
                status = "delivered"
            else:
                status = "failed" if late or not outcome.retryable else "pending"
            status = await record(outcome, status) or status
            if status != "pending":
                return status
            await trio.sleep(delay)

    async def attempt(self, job: DeliveryJob) -> Attempt:
        """One signed POST within `attempt_timeout_s`; never raises for the receiver's
        failures."""
        try:
            destination = await check_url(job.url, self.addresses, self.resolve)
        except UnsafeUrl as exc:  # a name that does not resolve may yet: retried like a
            # refused connection; an unsafe address never becomes safe by waiting
            return Attempt(False, isinstance(exc, Unresolved), error=f"{exc.code}: {exc}")
        timestamp = int(self.wall_clock())
        headers = {
            "Host": destination.host_header(),
            "Content-Type": "application/json",
            "User-Agent": "service-webhooks/1",
            "X-Service-Event": job.event,
            "X-Service-Delivery": job.delivery_id,
            SIGNATURE_HEADER: signature_header(job.secret, timestamp, job.body),
        }
        with trio.move_on_after(self.policy.attempt_timeout_s):
            try:
                response = await self.client.post(
                    destination.request_url(),
                    content=job.body,
                    headers=headers,
                    extensions=destination.extensions(),
                )
            except httpx.HTTPError as exc:
                return Attempt(False, True, error=f"{type(exc).__name__}: {exc}"[:300])
            return _judge(response.status_code)
        return Attempt(False, True, error="timeout")


def _judge(code: int) -> Attempt:
    if 200 <= code < 300:
        return Attempt(True, False, code)
    retryable = code >= 500 or code in RETRYABLE_STATUSES
    return Attempt(False, retryable, code, f"receiver answered {code}")
