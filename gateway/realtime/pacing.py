"""Audio paced to real time, with a bounded lead: pure arithmetic over trio's clock.

A cascade synthesises speech much faster than it plays (up to 25x). Sent as fast as it
comes, an answer would sit whole in the client's buffer after a second: a barge-in then
wastes all that synthesis, and the history keeps what was sent, not what was heard. The
pacer lets the gateway run ahead of playback by at most `lead_s` (a setting,
`realtime_audio_lead_s`): the client always has that much to play, never more.
"""

from __future__ import annotations

import attrs


@attrs.define
class Pacer:
    lead_s: float
    started: float | None = None  # when the first audio of the answer was sent
    sent_s: float = 0.0  # seconds of audio sent so far

    def delay(self, now: float, seconds: float) -> float:
        """How long to wait before sending `seconds` more audio, so that what was sent
        stays within `lead_s` of what has played since the first piece."""
        if self.started is None:
            return 0.0
        ahead = self.sent_s + seconds - (now - self.started)
        return max(0.0, ahead - self.lead_s)

    def sent(self, now: float, seconds: float) -> None:
        if self.started is None:
            self.started = now
        self.sent_s += seconds

    def played_ms(self, now: float) -> int:
        """What the client has played by `now`, at most (it started when the first audio
        was sent, and cannot play what it was not sent)."""
        if self.started is None:
            return 0
        return round(min(self.sent_s, now - self.started) * 1000)
