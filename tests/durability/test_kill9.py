"""The bounded version of `bench.durability`: a real gateway process killed with SIGKILL
under mixed load, restarted on the same data, and checked (see the bench's docstring)."""

from __future__ import annotations

from pathlib import Path

from bench.durability import run, summary


async def test_nothing_acknowledged_is_lost_to_kill_9(tmp_path: Path) -> None:
    cycles = await run(tmp_path, kills=2, seed=7, kill_range=(1.0, 2.0))
    found = summary(cycles)
    assert found["problems"] == [], found
    assert found["kills"] == 2
    # The load really ran: each kind of acknowledged change was there to be checked.
    assert found["chats_acknowledged"] > 0
    assert found["keys"] > 0 and found["rules"] > 0
    assert found["files_alive"] + found["files_deleted"] > 0
    assert found["usage_lost_outside_window"] == 0
