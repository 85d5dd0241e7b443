"""Transcriptions as the client asked for them, and the events of a streamed one. Pure.

`verbose_json` follows OpenAI's shape field for field (the official client parses it into
`TranscriptionVerbose`); the scores a vendor does not report are Whisper's neutral values.
`diarized_json` is OpenAI's `TranscriptionDiarized` (segments by speaker). A streamed
transcription is server-sent events in the shape the official client reads
(`transcript.text.delta` events, or `transcript.text.segment` events for `diarized_json`,
then one `transcript.text.done`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from providers.audio_types import Segment, TokenLogprob, TranscriptDelta, TranscriptionResult

# The language names OpenAI reports in verbose_json, for the codes our engines return.
LANGUAGE_NAMES = {
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
    "ja": "japanese",
    "zh": "chinese",
}

MEDIA_TYPES = {
    "json": "application/json",
    "verbose_json": "application/json",
    "diarized_json": "application/json",
    "text": "text/plain; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
}


def render_transcription(
    result: TranscriptionResult,
    response_format: str,
    granularities: Sequence[str],
    *,
    task: str = "transcribe",
) -> bytes:
    """The body for `response_format` (its media type is `MEDIA_TYPES[response_format]`);
    `task` is `translate` for a translation's verbose answer."""
    if response_format == "text":
        return (result.text + "\n").encode()
    if response_format == "srt":
        return srt(result.segments or _one_segment(result)).encode()
    if response_format == "vtt":
        return vtt(result.segments or _one_segment(result)).encode()
    if response_format == "verbose_json":
        return orjson.dumps(verbose(result, granularities, task=task))
    if response_format == "diarized_json":
        return orjson.dumps(diarized(result))
    if result.logprobs:
        return orjson.dumps({"text": result.text, "logprobs": _logprobs(result.logprobs)})
    return orjson.dumps({"text": result.text})


def diarized(result: TranscriptionResult) -> dict[str, Any]:
    """OpenAI's `TranscriptionDiarized`: the text, and its segments each with a speaker
    (`unknown` for a stretch the vendor did not attribute)."""
    return {
        "task": "transcribe",
        "duration": round(result.duration_s, 3),
        "text": result.text,
        "segments": [_speaker_segment(s) for s in result.segments or _one_segment(result)],
        "usage": _usage(result),
    }


def _speaker_segment(segment: Segment) -> dict[str, Any]:
    return {
        "type": "transcript.text.segment",
        "id": f"seg_{segment.id:03d}",
        "start": segment.start,
        "end": segment.end,
        "speaker": segment.speaker or "unknown",
        "text": segment.text,
    }


def _logprobs(logprobs: Sequence[TokenLogprob]) -> list[dict[str, Any]]:
    return [{"token": p.token, "logprob": p.logprob, "bytes": list(p.bytes)} for p in logprobs]


def _usage(result: TranscriptionResult) -> dict[str, Any]:
    return {"type": "duration", "seconds": max(1, round(result.duration_s))}


def verbose(
    result: TranscriptionResult, granularities: Sequence[str], *, task: str = "transcribe"
) -> dict[str, Any]:
    """The spec's verbose answer: `segments` always (the spec and issue 10 list them for
    every verbose answer; OpenAI drops them when only `word` is asked, which leaves a
    client reading `segments` with nothing), `words` when `word` timing is asked. A
    translation's language is always English, whatever the vendor said it heard."""
    language = LANGUAGE_NAMES.get(result.language or "", result.language or "english")
    body: dict[str, Any] = {
        "task": task,
        "language": "english" if task == "translate" else language,
        "duration": round(result.duration_s, 3),
        "text": result.text,
    }
    body["segments"] = [_segment(s) for s in result.segments or _one_segment(result)]
    if "word" in granularities:
        body["words"] = [
            {"word": w.word, "start": w.start, "end": w.end}
            | ({"speaker": w.speaker} if w.speaker else {})
            for w in result.words
        ]
    return body


def _segment(segment: Segment) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": segment.id,
        "seek": 0,
        "start": segment.start,
        "end": segment.end,
        "text": segment.text,
        "tokens": [],
        "temperature": 0.0,
        "avg_logprob": segment.avg_logprob,
        "compression_ratio": 1.0,
        "no_speech_prob": segment.no_speech_prob,
    }
    if segment.speaker:
        body["speaker"] = segment.speaker
    return body


def _one_segment(result: TranscriptionResult) -> tuple[Segment, ...]:
    """A vendor that returns no segments still gets one cue covering the whole clip."""
    if not result.text:
        return ()
    return (Segment(0, 0.0, round(result.duration_s, 3), result.text),)


# -- subtitles -----------------------------------------------------------------------------


def srt(segments: Sequence[Segment]) -> str:
    cues = [
        f"{n}\n{_stamp(s.start, ',')} --> {_stamp(s.end, ',')}\n{_cue_text(s)}\n"
        for n, s in enumerate(segments, 1)
    ]
    return "\n".join(cues)


def vtt(segments: Sequence[Segment]) -> str:
    cues = [f"{_stamp(s.start, '.')} --> {_stamp(s.end, '.')}\n{_cue_text(s)}\n" for s in segments]
    return "WEBVTT\n\n" + "\n".join(cues)


def _cue_text(segment: Segment) -> str:
    return f"[{segment.speaker}] {segment.text}" if segment.speaker else segment.text


def _stamp(seconds: float, separator: str) -> str:
    millis = max(0, round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


# -- streamed transcription ----------------------------------------------------------------


def transcript_text(result: TranscriptionResult) -> str:
    """The transcript as plain text: one `speaker: text` line a segment when the vendor
    told the speakers apart, else the text as recognised."""
    if any(segment.speaker for segment in result.segments):
        return "\n".join(
            f"{segment.speaker or 'unknown'}: {segment.text.strip()}" for segment in result.segments
        )
    return result.text


def delta_event(text: str) -> bytes:
    return _sse({"type": "transcript.text.delta", "delta": text})


def delta_frame(delta: TranscriptDelta, *, by_speaker: bool) -> bytes:
    """A piece of a streamed transcript: a whole speaker's segment when the client asked
    `diarized_json` and the vendor gave one, else its text."""
    if by_speaker and delta.segment is not None:
        return segment_event(delta.segment)
    return delta_event(delta.text)


def segment_event(segment: Segment) -> bytes:
    return _sse(_speaker_segment(segment))


def done_event(result: TranscriptionResult) -> bytes:
    event: dict[str, Any] = {"type": "transcript.text.done", "text": result.text}
    if result.logprobs:
        event["logprobs"] = _logprobs(result.logprobs)
    event["usage"] = _usage(result)
    return _sse(event)


def error_event(code: str, message: str) -> bytes:
    """A failure after the stream began: the status line is gone, so it travels in-band."""
    return _sse({"type": "error", "error": {"code": code, "message": message}})


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"
