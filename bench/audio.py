"""`python -m bench.audio [--requests N]`: the audio family's figures.

1. Local round trip: each of `bench/audio_sentences.py`'s sentences synthesised by eSpeak
   NG and transcribed back by the local recogniser; the mean word error rate and how much
   faster than real time recognition ran.
2. Time to first audio byte added by the gateway: streamed speech (`tts-1`, served by the
   simulator, whose first byte is held back `--first-byte-ms`) fetched straight from the
   simulator and through the gateway in turn by each client task, at concurrency 1 and
   32; the p50 difference is what the gateway adds (target: at most 2 ms).
3. Upload memory (`bench/audio_upload.py`): `--uploads` concurrent transcription uploads
   of `--upload-mb` MB each through a gateway process; its RSS (target: 50 x 25 MB under
   250 MiB).

Runs a gateway and its simulator in this process (demo mode, unpaced simulator).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import httpx
import trio

from bench.audio_sentences import SENTENCES, word_error_rate
from bench.audio_upload import upload_memory
from gateway.platform.config import Settings
from gateway.platform.server import RunningGateway, run_gateway
from providers.audio_types import AudioClip, SpeechRequest, TranscriptionRequest
from providers.base import ProviderEndpoint
from providers.local.provider import LocalProvider
from providers.sim.core import Fault

ADMIN_KEY = "gw_admin_bench_0123456789abcdefghijklmn"
BODY = {
    "model": "tts-1",
    "voice": "alloy",
    "input": "Your table is ready.",
    "response_format": "pcm",  # no encoding at the simulator: its first byte is the delay
    "stream": True,
}


async def round_trip() -> dict[str, float]:
    local = LocalProvider(None, ProviderEndpoint("local", "local://", ""))
    errors, audio_s, busy_s = [], 0.0, 0.0
    for sentence in SENTENCES:
        speech = await local.speech(SpeechRequest("local-espeak-ng", sentence, "en-us", "wav"))
        clip = AudioClip(speech.data, "wav", 0.0)
        started = time.perf_counter()
        result = await local.transcribe(TranscriptionRequest("local-whisper-tiny-en", clip))
        busy_s += time.perf_counter() - started
        audio_s += result.duration_s
        errors.append(word_error_rate(sentence, result.text))
    return {
        "sentences": len(SENTENCES),
        "mean_wer": round(statistics.fmean(errors), 3),
        "realtime_factor": round(audio_s / busy_s, 2),
    }


async def first_byte_ms(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url, json=BODY, headers=headers) as response:
        response.raise_for_status()
        chunks = response.aiter_raw()
        await anext(chunks)
        elapsed = (time.perf_counter() - started) * 1000
        async for _ in chunks:
            pass
    return elapsed


async def ttfb(
    targets: list[tuple[str, dict[str, str]]], concurrency: int, requests: int
) -> list[list[float]]:
    """`requests` first-byte times per target; each of `concurrency` workers takes the
    targets in turn, so every target is measured under the same load."""
    found: list[list[float]] = [[] for _ in targets]
    limits = httpx.Limits(max_connections=concurrency * len(targets))
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker(count: int) -> None:
            for _ in range(count):
                for times, (url, headers) in zip(found, targets, strict=True):
                    times.append(await first_byte_ms(client, url, headers))

        async with trio.open_nursery() as nursery:
            for _ in range(concurrency):
                nursery.start_soon(worker, max(1, requests // concurrency))
    return found


async def added_ttfb(gateway: RunningGateway, requests: int, delay_ms: int) -> dict[str, float]:
    """The gateway's first byte minus the simulator's, both with the simulator's first
    byte held back `delay_ms` (a fault on `tts-1`), at concurrency 1 and 32."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="tts-1", delay_ms=delay_ms))
    direct = (gateway.sim.base_url("openai") + "/v1/audio/speech", {"authorization": "Bearer sim"})
    through = (gateway.url + "/v1/audio/speech", {"authorization": f"Bearer {ADMIN_KEY}"})
    figures: dict[str, float] = {"upstream_first_byte_delay_ms": delay_ms}
    for concurrency in (1, 32):
        upstream, ours = await ttfb([direct, through], concurrency, requests)
        figures[f"c{concurrency}_upstream_p50_ms"] = round(statistics.median(upstream), 2)
        figures[f"c{concurrency}_gateway_p50_ms"] = round(statistics.median(ours), 2)
        added = statistics.median(ours) - statistics.median(upstream)
        figures[f"c{concurrency}_added_p50_ms"] = round(added, 2)
    return figures


async def main(args: argparse.Namespace) -> None:
    if not args.skip_round_trip:
        print("round trip:", await round_trip(), file=sys.stderr)
    if args.uploads:
        figures = await upload_memory(args.uploads, args.upload_mb)
        print("upload memory:", figures, file=sys.stderr)
    if not args.skip_ttfb:
        await first_bytes(args.requests, args.first_byte_ms)


async def first_bytes(requests: int, delay_ms: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            host="127.0.0.1",
            port=0,
            data_dir=Path(data),
            demo=True,
            admin_key=ADMIN_KEY,
            sim_ttft_ms=0,
            sim_tokens_per_second=0,
        )
        async with trio.open_nursery() as nursery:
            gateway = await nursery.start(partial(run_gateway, settings, env={}))
            warm_up = (gateway.url + "/v1/audio/speech", {"authorization": f"Bearer {ADMIN_KEY}"})
            await ttfb([warm_up], 1, 4)
            figures = await added_ttfb(gateway, requests, delay_ms)
            print("time to first byte:", figures, file=sys.stderr)
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.audio", description=__doc__)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--skip-round-trip", action="store_true")
    parser.add_argument("--skip-ttfb", action="store_true")
    parser.add_argument(
        "--first-byte-ms", type=int, default=20, help="the simulated upstream's first-byte delay"
    )
    parser.add_argument("--uploads", type=int, default=50, help="0 skips the upload memory")
    parser.add_argument("--upload-mb", type=int, default=25)
    trio.run(main, parser.parse_args())
