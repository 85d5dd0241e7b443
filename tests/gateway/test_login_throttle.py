"""Login throttling: free failures, then exponential waits, per email and address."""

from __future__ import annotations

from gateway.organization.throttle import LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_up_to_the_ceiling_and_a_success_clears_it() -> None:
    clock = Clock()
    throttle = LoginThrottle(free_failures=3, max_delay_s=8.0, clock=clock)
    waits = []
    for _ in range(7):
        throttle.failed("a@x", "1.2.3.4")
        waits.append(throttle.wait_s("a@x", "1.2.3.4"))
    assert waits == [0.0, 0.0, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert throttle.wait_s("a@x", "5.6.7.8") == 0.0
    assert throttle.wait_s("b@x", "1.2.3.4") == 0.0
    clock.now += 8.0
    assert throttle.wait_s("a@x", "1.2.3.4") == 0.0
    throttle.succeeded("a@x", "1.2.3.4")
    throttle.failed("a@x", "1.2.3.4")
    assert throttle.wait_s("a@x", "1.2.3.4") == 0.0


def test_the_table_is_bounded() -> None:
    throttle = LoginThrottle(free_failures=1, max_entries=2, clock=Clock())
    for email in ("a@x", "b@x", "c@x"):
        throttle.failed(email, "ip")
    assert throttle.wait_s("a@x", "ip") == 0.0
    assert throttle.wait_s("c@x", "ip") == 1.0
