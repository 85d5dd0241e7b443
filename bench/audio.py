"""`python -m bench.audio [--requests N]`: the audio family's figures.

1. Local round trip: each of `bench/audio_sentences.py`'s sentences synthesised by eSpeak
   NG and transcribed back by the local recogniser; the mean word error rate and how much
   faster than real time recognition ran.
2. Time to first audio byte added by the gateway (`bench/audio_ttfb.py`): streamed
   speech (`tts-1`) from an upstream process whose first byte comes `--first-byte-ms`
   after the request (`bench/speech_source.py`), fetched straight from it and through a
   gateway process in turn by each client task, at concurrency 1 and 32; the p50
   difference is what the gateway adds (target: at most 2 ms), with the gateway's CPU
   time per request.
3. Upload memory (`bench/audio_upload.py`): `--uploads` concurrent transcription uploads
   of `--upload-mb` MB each through a gateway process; its RSS (target: 50 x 25 MB under
   250 MiB).

1 runs in this process; 2 and 3 start gateway processes of their own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import trio

from bench.audio_sentences import SENTENCES, word_error_rate
from bench.audio_ttfb import first_bytes
from bench.audio_upload import upload_memory
from providers.audio_types import AudioClip, SpeechRequest, TranscriptionRequest
from providers.base import ProviderEndpoint
from providers.local.provider import LocalProvider


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


def main(args: argparse.Namespace) -> None:
    if not args.skip_round_trip:
        print("round trip:", trio.run(round_trip), file=sys.stderr)
    if args.uploads:
        figures = trio.run(upload_memory, args.uploads, args.upload_mb)
        print("upload memory:", figures, file=sys.stderr)
    if not args.skip_ttfb:
        figures = first_bytes(args.requests, args.first_byte_ms)
        print("time to first byte:", figures, file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.audio", description=__doc__)
    parser.add_argument("--requests", type=int, default=256, help="per point and target")
    parser.add_argument("--skip-round-trip", action="store_true")
    parser.add_argument("--skip-ttfb", action="store_true")
    parser.add_argument(
        "--first-byte-ms", type=int, default=20, help="the simulated upstream's first-byte delay"
    )
    parser.add_argument("--uploads", type=int, default=50, help="0 skips the upload memory")
    parser.add_argument("--upload-mb", type=int, default=25)
    main(parser.parse_args())
