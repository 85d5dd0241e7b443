"""`python -m bench.durability [--kills N]`: kill -9 under load, then check what survived.

A real gateway process (`gateway serve --demo`, simulators inside) takes a steady mixed
load: chat plain and streamed, management writes (API keys, routing rules, a provider's
settings), file uploads and deletions. At a random moment it is killed with SIGKILL, then
restarted on the same data directory, N times. After each restart:

- every acknowledged change is there: each key and rule whose creation was answered, the
  provider setting last answered (or the one in flight at the kill), each uploaded file
  with the same bytes (SHA-256 of `GET /v1/files/{id}/content`), and each deleted file
  still gone (404);
- the database passes `PRAGMA integrity_check`;
- the blob store holds exactly the blobs the file rows name, and no temporary file;
- the usage records lost are counted: an answered chat whose record is missing. The
  contract (README, "Durability contract") allows only records of requests answered in
  the last group-commit window before the kill; each loss is checked against it.

The ledger counts only what the client saw answered in full: a request cut by the kill
had no answer, and the contract promises nothing about it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from bench import procs
from bench.process_rig import GatewayProcess, admin_headers

# A usage record may be lost only if its request was answered this close to the kill:
# the writer's group-commit window (50 ms) plus one batch's write, with room for a busy
# machine (the check must not depend on the host's speed, only catch real losses).
LOSS_WINDOW_S = 2.0
SIM_PACE = {"GATEWAY_SIM_TTFT_MS": "20", "GATEWAY_SIM_TOKENS_PER_SECOND": "400"}
CHAT_BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Say something durable."}],
    "service": {"cache": "skip"},
}


@attrs.define
class Ledger:
    """What the gateway acknowledged (answered in full), and when (trio clock)."""

    keys: dict[str, str] = attrs.field(factory=dict)
    rules: dict[str, str] = attrs.field(factory=dict)
    files: dict[str, str] = attrs.field(factory=dict)  # file id -> sha256
    deleted_files: set[str] = attrs.field(factory=set)
    deleting: str | None = None  # a deletion cut by the kill may or may not have happened
    provider_acked: str | None = None
    provider_in_flight: str | None = None
    chats: dict[str, float] = attrs.field(factory=dict)  # request id -> answered at
    failures: list[str] = attrs.field(factory=list)  # answers that were not 2xx


@attrs.frozen
class Cycle:
    """One kill and what the restart found."""

    kill_after_s: float
    acknowledged: dict[str, int]
    usage_lost: int
    usage_lost_outside_window: int
    problems: tuple[str, ...]


# -- load ---------------------------------------------------------------------------------


async def chat_worker(client: httpx.AsyncClient, ledger: Ledger, *, stream: bool) -> None:
    while True:
        body = CHAT_BODY | {"stream": stream}
        if stream:
            request_id = await _streamed_chat(client, body, ledger)
        else:
            answer = await client.post("/v1/chat/completions", json=body)
            request_id = _request_id(answer, ledger)
        if request_id is not None:
            ledger.chats[request_id] = trio.current_time()


def _request_id(answer: httpx.Response, ledger: Ledger) -> str | None:
    if answer.status_code != 200:
        ledger.failures.append(f"chat {answer.status_code}: {answer.text[:200]}")
        return None
    return str(answer.json()["service"]["request_id"])


async def _streamed_chat(
    client: httpx.AsyncClient, body: dict[str, Any], ledger: Ledger
) -> str | None:
    request_id = None
    async with client.stream("POST", "/v1/chat/completions", json=body) as answer:
        if answer.status_code != 200:
            await answer.aread()
            return _request_id(answer, ledger)
        async for line in answer.aiter_lines():
            if line.startswith("data: {"):
                frame = json.loads(line[6:])
                if "error" in frame:
                    ledger.failures.append(f"stream error event: {line[:200]}")
                    return None
                request_id = frame.get("service", {}).get("request_id", request_id)
            elif line == "data: [DONE]":
                return request_id
    return None  # ended without [DONE]: not acknowledged


async def management_worker(client: httpx.AsyncClient, ledger: Ledger, rng: random.Random) -> None:
    n = rng.randrange(3)  # each cycle starts with another kind: short cycles cover them all
    while True:
        n += 1
        kind = n % 3
        if kind == 0:
            name = f"dur-key-{rng.getrandbits(32):08x}"
            answer = await client.post("/v1/management/api-keys", json={"name": name})
            if _ok(answer, ledger):
                ledger.keys[answer.json()["id"]] = name
        elif kind == 1:
            name = f"dur-rule-{rng.getrandbits(32):08x}"
            rule = {"name": name, "conditions": {"models": ["dur-*"]}, "actions": {}}
            rule["actions"] = {"route_to": "gpt-4o-mini"}
            answer = await client.post("/v1/management/routing-rules", json=rule)
            if _ok(answer, ledger):
                ledger.rules[answer.json()["id"]] = name
        else:
            value = f"org-{rng.getrandbits(32):08x}"
            ledger.provider_in_flight = value
            settings = {"settings": {"organization_id": value}}
            answer = await client.patch("/v1/management/providers/openai", json=settings)
            if _ok(answer, ledger):
                ledger.provider_acked, ledger.provider_in_flight = value, None


async def files_worker(client: httpx.AsyncClient, ledger: Ledger, rng: random.Random) -> None:
    while True:
        if ledger.files and rng.random() < 0.2:
            file_id = rng.choice(sorted(ledger.files))
            ledger.deleting = file_id
            answer = await client.delete(f"/v1/files/{file_id}")
            if _ok(answer, ledger):
                del ledger.files[file_id]
                ledger.deleted_files.add(file_id)
            ledger.deleting = None
            continue
        size = rng.choice((1_000, 40_000, 400_000))
        data = rng.randbytes(size // 2).hex().encode()
        answer = await client.post(
            "/v1/files", files={"file": ("d.txt", data)}, data={"purpose": "assistants"}
        )
        if _ok(answer, ledger):
            ledger.files[answer.json()["id"]] = hashlib.sha256(data).hexdigest()


def _ok(answer: httpx.Response, ledger: Ledger) -> bool:
    if answer.status_code < 300:
        return True
    ledger.failures.append(f"{answer.request.method} {answer.request.url.path}: {answer.text}")
    return False


async def load_until_killed(
    gateway: GatewayProcess, ledger: Ledger, rng: random.Random, kill_after_s: float
) -> float:
    """Run the mixed load, SIGKILL the gateway after `kill_after_s`; the kill's time."""
    limits = httpx.Limits(max_connections=16)
    async with (
        httpx.AsyncClient(
            base_url=gateway.url,
            headers=admin_headers(),
            timeout=30,
            limits=limits,
            trust_env=False,
        ) as client,
        trio.open_nursery() as nursery,
    ):
        for worker in (
            lambda: chat_worker(client, ledger, stream=False),
            lambda: chat_worker(client, ledger, stream=False),
            lambda: chat_worker(client, ledger, stream=True),
            lambda: chat_worker(client, ledger, stream=True),
            lambda: management_worker(client, ledger, rng),
            lambda: files_worker(client, ledger, rng),
        ):
            nursery.start_soon(_until_cut, worker)
        await trio.sleep(kill_after_s)
        killed_at = trio.current_time()
        await trio.to_thread.run_sync(gateway.kill)
        nursery.cancel_scope.cancel()
    return killed_at


async def _until_cut(worker: Any) -> None:
    """A load worker ends when the gateway goes away under it."""
    try:
        await worker()
    except (httpx.TransportError, httpx.StreamError):
        return


# -- checks -------------------------------------------------------------------------------


def check_acknowledged(gateway: GatewayProcess, ledger: Ledger) -> list[str]:
    """Every acknowledged change, read back through the API after the restart (a change
    cut by the kill may be found done or not, and the ledger learns which)."""
    problems: list[str] = []
    with httpx.Client(
        base_url=gateway.url, headers=admin_headers(), timeout=30, trust_env=False
    ) as client:
        for key_id, name in ledger.keys.items():
            answer = client.get(f"/v1/management/api-keys/{key_id}")
            if answer.status_code != 200 or answer.json().get("name") != name:
                problems.append(f"key {key_id} lost: {answer.status_code}")
        for rule_id, name in ledger.rules.items():
            answer = client.get(f"/v1/management/routing-rules/{rule_id}")
            if answer.status_code != 200 or answer.json().get("name") != name:
                problems.append(f"rule {rule_id} lost: {answer.status_code}")
        problems += _check_provider(client, ledger)
        for file_id, digest in list(ledger.files.items()):
            answer = client.get(f"/v1/files/{file_id}/content")
            if file_id == ledger.deleting and answer.status_code == 404:
                del ledger.files[file_id]  # its deletion was done, just not answered
                ledger.deleted_files.add(file_id)
                continue
            if answer.status_code != 200 or hashlib.sha256(answer.content).hexdigest() != digest:
                problems.append(f"file {file_id} lost or changed: {answer.status_code}")
        for file_id in ledger.deleted_files:
            answer = client.get(f"/v1/files/{file_id}")
            if answer.status_code != 404:
                problems.append(f"deleted file {file_id} is back: {answer.status_code}")
    return problems


def _check_provider(client: httpx.Client, ledger: Ledger) -> list[str]:
    if ledger.provider_acked is None:
        return []
    found = client.get("/v1/management/providers/openai").json()["settings"]
    allowed = {ledger.provider_acked, ledger.provider_in_flight}
    if found.get("organization_id") not in allowed:
        return [f"provider setting {ledger.provider_acked} lost: {found}"]
    return []


def check_store(data_dir: Path) -> tuple[list[str], set[str]]:
    """Integrity, blobs against rows, and the request ids of the usage records."""
    problems: list[str] = []
    with sqlite3.connect(f"file:{data_dir / 'gateway.db'}?mode=ro", uri=True) as db:
        verdict = db.execute("PRAGMA integrity_check").fetchall()
        if verdict != [("ok",)]:
            problems.append(f"integrity_check: {verdict[:5]}")
        named = {row[0] for row in db.execute("SELECT DISTINCT sha256 FROM files")}
        usage_ids = {row[0] for row in db.execute("SELECT request_id FROM usage_records")}
    db.close()
    blobs = data_dir / "blobs"
    on_disk = {p.name for p in blobs.glob("??/*") if p.is_file()}
    leftovers = [p.name for p in (blobs / "tmp").glob("*")] if (blobs / "tmp").exists() else []
    if on_disk - named:
        problems.append(f"orphan blobs: {sorted(on_disk - named)[:5]}")
    if named - on_disk:
        problems.append(f"rows naming missing blobs: {sorted(named - on_disk)[:5]}")
    if leftovers:
        problems.append(f"half-written uploads left: {leftovers[:5]}")
    return problems, usage_ids


def check_usage(ledger: Ledger, usage_ids: set[str], killed_at: float) -> tuple[int, int]:
    """(records lost, of which answered before the contract's window): only the window's
    may be missing."""
    lost = [rid for rid in ledger.chats if rid not in usage_ids]
    outside = [rid for rid in lost if ledger.chats[rid] < killed_at - LOSS_WINDOW_S]
    return len(lost), len(outside)


# -- the run ------------------------------------------------------------------------------


async def one_cycle(
    gateway: GatewayProcess, ledger: Ledger, rng: random.Random, kill_range: tuple[float, float]
) -> Cycle:
    """Load, kill, restart, check. The ledger carries over: every earlier acknowledgement
    must survive every later kill too."""
    kill_after_s = rng.uniform(*kill_range)
    before = len(ledger.chats)
    killed_at = await load_until_killed(gateway, ledger, rng, kill_after_s)
    await trio.to_thread.run_sync(gateway.start)
    problems = await trio.to_thread.run_sync(check_acknowledged, gateway, ledger)
    store_problems, usage_ids = await trio.to_thread.run_sync(check_store, gateway.data_dir)
    lost, outside = check_usage(ledger, usage_ids, killed_at)
    if outside:
        store_problems.append(f"{outside} usage records lost outside the contract's window")
    acknowledged = {
        "chats": len(ledger.chats) - before,
        "keys": len(ledger.keys),
        "rules": len(ledger.rules),
        "files": len(ledger.files),
        "deleted_files": len(ledger.deleted_files),
    }
    ledger.chats, ledger.deleting = {}, None  # usage is checked per kill, in its window
    return Cycle(kill_after_s, acknowledged, lost, outside, tuple(problems + store_problems))


async def run(
    work: Path, *, kills: int, seed: int, kill_range: tuple[float, float] = (0.5, 3.0)
) -> list[Cycle]:
    """Start a gateway in `work`, kill it `kills` times under load; the cycles' findings."""
    rng = random.Random(seed)
    gateway = GatewayProcess(work / "data", procs.free_port(), work, dict(SIM_PACE))
    ledger = Ledger()
    cycles: list[Cycle] = []
    await trio.to_thread.run_sync(gateway.start)
    try:
        for _ in range(kills):
            cycles.append(await one_cycle(gateway, ledger, rng, kill_range))
    finally:
        await trio.to_thread.run_sync(gateway.stop)
    if ledger.failures:
        cycles.append(Cycle(0.0, {}, 0, 0, tuple(f"refused: {f}" for f in ledger.failures)))
    return cycles


def summary(cycles: Sequence[Cycle]) -> dict[str, Any]:
    kills = [c for c in cycles if c.kill_after_s > 0]
    return {
        "kills": len(kills),
        "chats_acknowledged": sum(c.acknowledged.get("chats", 0) for c in kills),
        "keys": max((c.acknowledged.get("keys", 0) for c in kills), default=0),
        "rules": max((c.acknowledged.get("rules", 0) for c in kills), default=0),
        "files_alive": max((c.acknowledged.get("files", 0) for c in kills), default=0),
        "files_deleted": max((c.acknowledged.get("deleted_files", 0) for c in kills), default=0),
        "usage_lost": [c.usage_lost for c in kills],
        "usage_lost_outside_window": sum(c.usage_lost_outside_window for c in kills),
        "problems": [p for c in cycles for p in c.problems],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durability", description=__doc__)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="durability-"))
    try:
        cycles = trio.run(lambda: run(work, kills=args.kills, seed=args.seed))
        result = summary(cycles)
        print(json.dumps(result, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
