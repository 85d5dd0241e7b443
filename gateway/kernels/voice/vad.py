"""End of turn and barge-in from voice activity: a small state machine over 20 ms frames.

`TurnDetector.feed` takes PCM16 mono audio at `RATE` in pieces of any size, asks the
voice-activity classifier about each whole 20 ms frame, and reports the two changes a
voice session acts on: `speech_started` after `START_FRAMES` voiced frames in a row (a
cough is not a turn), `speech_stopped` after `END_FRAMES` unvoiced ones (a pause for
breath is not the end of one). Pure but for the classifier, which is handed in; the
default is WebRTC's VAD (`webrtcvad-wheels`: a small C library in a wheel, no model to
download).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import attrs

RATE = 16_000
FRAME_MS = 20
FRAME_BYTES = RATE * FRAME_MS // 1000 * 2
START_FRAMES = 2  # 40 ms of speech starts a turn (and barges in)
END_FRAMES = 25  # 500 ms of silence ends it
AGGRESSIVENESS = 2  # WebRTC VAD's 0-3: how readily noise is called non-speech

Signal = Literal["speech_started", "speech_stopped"]
Classifier = Callable[[bytes], bool]


def webrtc_classifier(aggressiveness: int = AGGRESSIVENESS) -> Classifier:
    """WebRTC's voice-activity decision for one 20 ms frame at 16 kHz."""
    import webrtcvad

    vad = webrtcvad.Vad(aggressiveness)

    def is_speech(frame: bytes) -> bool:
        return bool(vad.is_speech(frame, RATE))

    return is_speech


@attrs.define
class TurnDetector:
    is_speech: Classifier
    start_frames: int = START_FRAMES
    end_frames: int = END_FRAMES
    speaking: bool = False
    _run: int = 0  # frames in a row that disagree with `speaking`
    _rest: bytes = b""

    def feed(self, pcm: bytes) -> list[Signal]:
        """The changes the audio caused, in order."""
        data = self._rest + pcm
        whole = len(data) // FRAME_BYTES * FRAME_BYTES
        self._rest = data[whole:]
        signals: list[Signal] = []
        for start in range(0, whole, FRAME_BYTES):
            signal = self._frame(self.is_speech(data[start : start + FRAME_BYTES]))
            if signal is not None:
                signals.append(signal)
        return signals

    def _frame(self, voiced: bool) -> Signal | None:
        if voiced == self.speaking:
            self._run = 0
            return None
        self._run += 1
        if self._run < (self.end_frames if self.speaking else self.start_frames):
            return None
        self._run = 0
        self.speaking = voiced
        return "speech_started" if voiced else "speech_stopped"
