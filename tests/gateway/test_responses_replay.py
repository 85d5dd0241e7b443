"""A background response's kept events (`gateway.responses.replay`), its states
(`gateway.responses.background_runs.TRANSITIONS`) and its run's deadline, cancel and
forgetting, without a gateway, at exact virtual times."""

from __future__ import annotations

import json

import orjson
import pytest
import trio

from gateway.platform.errors import ApiError
from gateway.responses.background_runs import TRANSITIONS, BackgroundResponses, Run, moves
from gateway.responses.replay import EventLog
from store.responses import StoredResponse
from streams.sse import SSEDecoder, encode_event


def decoded(frames: list[bytes]) -> list[dict[str, object]]:
    decoder = SSEDecoder()
    return [json.loads(event.data) for frame in frames for event in decoder.feed(frame)]


def delta(text: str) -> dict[str, object]:
    return {"type": "response.output_text.delta", "delta": text}


async def read(log: EventLog, after: int) -> list[dict[str, object]]:
    return decoded([frame async for frame in log.follow(after)])


async def test_events_are_numbered_and_read_from_any_point() -> None:
    log = EventLog(max_bytes=10_000)
    for text in ("a", "b", "c"):
        log.add(delta(text))
    log.add({"type": "response.completed", "response": {}})
    log.close()
    assert log.ended
    events = await read(log, -1)
    assert [event["sequence_number"] for event in events] == [0, 1, 2, 3]
    assert [event.get("delta") for event in await read(log, 1)] == ["c", None]
    assert await read(log, 3) == []


async def test_a_reader_follows_live_until_the_log_closes(
    autojump_clock: trio.abc.Clock,
) -> None:
    log = EventLog(max_bytes=10_000)
    log.add(delta("a"))
    seen: list[tuple[float, str]] = []

    async def reader() -> None:
        async for frame in log.follow(-1):
            seen.append((trio.current_time(), decoded([frame])[0]["delta"]))  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.sleep(1)
        log.add(delta("b"))
        await trio.sleep(1)
        log.close()
    assert seen == [(0.0, "a"), (1.0, "b")]  # each event as it came, the end with the close


def frame_size(sequence: int, text: str) -> int:
    event = {**delta(text), "sequence_number": sequence}
    return len(encode_event("response.output_text.delta", orjson.dumps(event)))


async def test_the_oldest_events_go_past_the_bound() -> None:
    log = EventLog(max_bytes=3 * frame_size(0, "00"))  # three events of this size
    for i in range(10):
        log.add(delta(f"{i:02d}"))
    log.close()
    events = await read(log, 6)
    assert [event["delta"] for event in events] == ["07", "08", "09"]
    log.check(6)  # from the oldest kept: fine
    with pytest.raises(ApiError) as caught:
        log.check(5)  # the first events are gone: a 400 naming starting_after
    assert caught.value.status == 400 and caught.value.extra["param"] == "starting_after"


async def test_a_reader_that_fell_behind_is_told_and_ends() -> None:
    log = EventLog(max_bytes=3 * frame_size(0, "00"))
    log.add(delta("00"))
    follower = log.follow(-1)
    for i in range(1, 10):
        log.add(delta(f"{i:02d}"))
    log.close()
    events = decoded([frame async for frame in follower])
    assert [event["type"] for event in events] == ["error"]
    assert events[0]["code"] == "events_not_kept" and events[0]["sequence_number"] == 0


@pytest.mark.parametrize(
    ("status", "to", "allowed"),
    [
        ("queued", "in_progress", True),
        ("queued", "cancelled", True),
        ("queued", "completed", False),  # a response runs before it completes
        ("in_progress", "completed", True),
        ("in_progress", "incomplete", True),
        ("in_progress", "failed", True),
        ("in_progress", "cancelled", True),
        ("in_progress", "queued", False),
        ("cancelled", "completed", False),  # a cancelled response stays cancelled
        ("completed", "cancelled", False),  # a finished one cannot be cancelled
        ("failed", "failed", False),
    ],
)
def test_the_states_move_only_forward(status: str, to: str, allowed: bool) -> None:
    assert moves(status, to) is allowed
    assert set(TRANSITIONS) == {"queued", "in_progress"}  # every other state is final


class FakeKeeper:
    """The store's keeper as the runs see it: what was kept, in order."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, str]] = []

    async def keep(self, record: StoredResponse) -> None:
        self.kept.append((record.id, str(record.response["status"])))


def runs_over(keeper: FakeKeeper) -> BackgroundResponses:
    """Runs storing into `keeper`, with no database (they never sweep here)."""
    return BackgroundResponses(
        keeper,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        limit=4,
        per_workspace=4,
        timeout_s=100,
        events_max_bytes=10_000,
    )


def queued_record(response_id: str, workspace_id: str = "ws") -> StoredResponse:
    return StoredResponse(
        id=response_id,
        workspace_id=workspace_id,
        key_id="k",
        previous_response_id=None,
        created_at=0,
        expires_at=None,
        input_items=(),
        response={"id": response_id, "status": "queued", "created_at": 0},
    )


async def forever(run: Run) -> None:
    await trio.sleep_forever()


async def test_a_run_times_out_cancels_and_forgets_at_exact_times(
    autojump_clock: trio.abc.Clock,
) -> None:
    keeper = FakeKeeper()
    runs = runs_over(keeper)
    async with trio.open_nursery() as nursery:
        await nursery.start(runs.run)
        slow = await runs.start(queued_record("resp_slow"), forever, opening=None)
        await slow.done.wait()  # the deadline: failed, its upstream work cancelled
        assert trio.current_time() == 100 and slow.status == "failed"
        assert slow.response["error"]["code"] == "response_timeout"
        cancelled = await runs.start(queued_record("resp_c"), forever, opening=None)
        await trio.sleep(1)
        assert await runs.cancel(cancelled) and trio.current_time() == 101
        assert not await runs.cancel(slow)  # finished: not cancellable
        gone = await runs.start(queued_record("resp_gone", "doomed"), forever, opening=None)
        await trio.sleep(1)
        runs.forget_workspace("doomed")  # the workspace was deleted
        await gone.done.wait()
        assert runs.get("doomed", "resp_gone") is None
        nursery.cancel_scope.cancel()
    assert keeper.kept == [
        ("resp_slow", "queued"),
        ("resp_slow", "in_progress"),
        ("resp_slow", "failed"),
        ("resp_c", "queued"),
        ("resp_c", "in_progress"),
        ("resp_c", "cancelled"),
        ("resp_gone", "queued"),
        ("resp_gone", "in_progress"),  # and nothing after its workspace went
    ]
