"""Scripted fake upstreams for the race tests: each try of a candidate follows one step."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio


class Retryable(Exception):
    """A failure worth trying elsewhere (a 503, a reset connection)."""


class Fatal(Exception):
    """A failure no other candidate would fix (a 400)."""


def is_retryable(error: Exception) -> bool:
    return isinstance(error, Retryable)


@dataclass(frozen=True)
class Step:
    """One try: wait `delay`, then produce ("ok"), fail ("retryable", "fatal") or stall
    forever ("hang"). A `shielded` opening cannot be interrupted, like a close that must
    finish: it produces its result even after the race is decided."""

    delay: float = 0.0
    result: str = "ok"
    shielded: bool = False


@dataclass(eq=False)
class FakeUpstream:
    name: str
    try_number: int
    opened_at: float
    closed_at: float | None = None

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    async def aclose(self) -> None:
        self.closed_at = trio.current_time()


@dataclass
class Upstreams:
    """Candidates are names; `scripts[name]` lists the steps of its successive tries."""

    scripts: dict[str, list[Step]]
    opened: list[FakeUpstream] = field(default_factory=list)

    async def attempt(self, name: str) -> FakeUpstream:
        """Open the next try of `name`; a try that fails or is cancelled closes itself,
        as an attempt must."""
        tries = sum(1 for up in self.opened if up.name == name)
        step = self.scripts[name][tries]
        upstream = FakeUpstream(name, tries + 1, trio.current_time())
        self.opened.append(upstream)
        try:
            await self._play(step, upstream)
        except BaseException:
            upstream.closed_at = trio.current_time()
            raise
        return upstream

    @staticmethod
    async def _play(step: Step, upstream: FakeUpstream) -> None:
        if step.result == "hang":
            await trio.sleep_forever()
        with trio.CancelScope(shield=step.shielded):
            await trio.sleep(step.delay)
        if step.result == "retryable":
            raise Retryable(f"{upstream.name} try {upstream.try_number}")
        if step.result == "fatal":
            raise Fatal(f"{upstream.name} try {upstream.try_number}")
        assert step.result == "ok"

    def starts(self) -> list[tuple[str, int, float]]:
        return [(up.name, up.try_number, up.opened_at) for up in self.opened]

    def closes(self) -> dict[tuple[str, int], float | None]:
        return {(up.name, up.try_number): up.closed_at for up in self.opened}

    def assert_all_closed_but(self, winner: FakeUpstream | None = None) -> None:
        for upstream in self.opened:
            if upstream is not winner:
                assert upstream.closed, f"{upstream} was left open"
        if winner is not None:
            assert not winner.closed
