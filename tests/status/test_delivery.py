"""Retries of a webhook delivery, at exact virtual times (trio's autojump clock)."""

from __future__ import annotations

import random

import attrs
import httpx
import trio

from gateway.kernels.webhooks.delivery import Attempt, Deliverer, RetryPolicy
from gateway.kernels.webhooks.hub import DeliveryJob
from gateway.kernels.webhooks.signing import verify
from providers.upstream.guard import AddressPolicy

JOB = DeliveryJob("dlv_1", "https://hooks.example.com/in", "whsec_k", "incident.created", b"{}")


async def public(host: str, port: int) -> list[str]:
    return ["93.184.216.34"]


class Script:
    """A receiver answering the scripted statuses, noting the virtual time of each call."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.times: list[float] = []
        self.signatures: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.times.append(trio.current_time())
        self.signatures.append(request.headers["x-service-signature"])
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return httpx.Response(status)


async def run(
    script: Script, policy: RetryPolicy, job: DeliveryJob = JOB
) -> tuple[str, list[tuple[Attempt, str]]]:
    log: list[tuple[Attempt, str]] = []

    async def record(outcome: Attempt, status: str) -> None:
        log.append((outcome, status))

    async with httpx.AsyncClient(transport=httpx.MockTransport(script)) as client:
        deliverer = Deliverer(
            client,
            policy,
            AddressPolicy(),
            rng=random.Random(7),
            resolve=public,
            wall_clock=lambda: 1000.0,
        )
        status = await deliverer.deliver(job, record)
    return status, log


def expected_delays(count: int, policy: RetryPolicy) -> list[float]:
    rng = random.Random(7)
    return [policy.delay(n, rng) for n in range(1, count + 1)]


async def test_a_500_is_retried_with_exponential_backoff_and_jitter(
    autojump_clock: trio.abc.Clock,
) -> None:
    policy = RetryPolicy(base_s=1.0)
    script = Script(500, 503, 200)
    start = trio.current_time()
    status, log = await run(script, policy)
    first, second = expected_delays(2, policy)
    assert 0.5 <= first < 1.0 and 1.0 <= second < 2.0
    assert [t - start for t in script.times] == [0.0, first, first + second]
    assert status == "delivered"
    assert [s for _, s in log] == ["pending", "pending", "delivered"]
    assert [a.status_code for a, _ in log] == [500, 503, 200]
    for header in script.signatures:
        assert verify("whsec_k", header, b"{}", now=1000.0)


async def test_retrying_stops_within_the_window(autojump_clock: trio.abc.Clock) -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=8.0, window_s=30.0)
    script = Script(502)
    start = trio.current_time()
    status, log = await run(script, policy)
    assert status == "failed"
    assert log[-1][1] == "failed"
    elapsed = [t - start for t in script.times]
    assert elapsed[-1] <= 30.0
    delays = expected_delays(len(elapsed), policy)
    assert elapsed[-1] + delays[-1] > 30.0  # the next attempt would have been too late
    cumulative = [sum(delays[:n]) for n in range(len(elapsed))]
    assert elapsed == cumulative
    assert len(log) == len(elapsed)


async def test_a_client_error_is_not_retried(autojump_clock: trio.abc.Clock) -> None:
    script = Script(404)
    status, log = await run(script, RetryPolicy())
    assert status == "failed"
    assert len(script.times) == 1
    assert log[0][0].status_code == 404


async def test_a_silent_receiver_times_out_and_is_retried(autojump_clock: trio.abc.Clock) -> None:
    calls: list[float] = []

    async def hang(request: httpx.Request) -> httpx.Response:
        calls.append(trio.current_time())
        if len(calls) == 1:
            await trio.sleep_forever()
        return httpx.Response(204)

    policy = RetryPolicy(base_s=1.0, attempt_timeout_s=10.0)
    log: list[str] = []

    async def record(outcome: Attempt, status: str) -> None:
        log.append(f"{status}:{outcome.error or outcome.status_code}")

    start = trio.current_time()
    async with httpx.AsyncClient(transport=httpx.MockTransport(hang)) as client:
        deliverer = Deliverer(client, policy, AddressPolicy(), rng=random.Random(7), resolve=public)
        assert await deliverer.deliver(JOB, record) == "delivered"
    assert log == ["pending:timeout", "delivered:204"]
    assert calls[1] - start == 10.0 + expected_delays(1, policy)[0]


async def test_a_resumed_delivery_goes_on_with_its_backoff_and_window(
    autojump_clock: trio.abc.Clock,
) -> None:
    """A delivery resumed after a restart (3 attempts made, 20 s of its 30 s window
    spent) waits as after its 4th failure and stops when the window is used up."""
    policy = RetryPolicy(base_s=1.0, cap_s=8.0, window_s=30.0)
    resumed = attrs.evolve(JOB, attempts=3, elapsed_s=20.0)
    script = Script(503)
    start = trio.current_time()
    status, log = await run(script, policy, resumed)
    rng = random.Random(7)
    delays = [policy.delay(n, rng) for n in (4, 5, 6)]
    assert 4.0 <= delays[0] < 8.0  # the 4th failure's backoff, not the 1st's
    # Attempts go on while the next one still starts within the window, counted from
    # the delivery's first attempt 20 s before the restart.
    expected, at = [0.0], 0.0
    for delay in delays:
        if 20.0 + at + delay > 30.0:
            break
        at += delay
        expected.append(at)
    assert [t - start for t in script.times] == expected
    assert status == "failed"
    assert [s for _, s in log] == ["pending"] * (len(expected) - 1) + ["failed"]
