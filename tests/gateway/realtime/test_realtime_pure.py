"""The Realtime family's pure parts, with plain tables: the two dialects, session updates,
the answer lifecycle, truncation, pacing and the G.711 codec."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from gateway.realtime.audio import InputAudio, OutputAudio
from gateway.realtime.config import AudioFormat, SessionConfig, apply_update, render_session
from gateway.realtime.conversation import Item, Spoken, chat_messages, truncated
from gateway.realtime.events import Dialect, RealtimeError, beta_session, parse_client_event
from gateway.realtime.pacing import Pacer
from gateway.realtime.states import ended, next_state

CONFIG = SessionConfig(kind="realtime", model="gpt-realtime")


@pytest.mark.parametrize(
    ("ga", "beta"),
    [
        ("response.output_audio.delta", "response.audio.delta"),
        ("response.output_audio_transcript.done", "response.audio_transcript.done"),
        ("response.output_text.delta", "response.text.delta"),
        ("conversation.item.added", "conversation.item.created"),
        ("response.done", "response.done"),
    ],
)
def test_the_beta_dialect_renames_and_every_event_has_an_id(ga: str, beta: str) -> None:
    ga_body = json.loads(Dialect().render({"type": ga}) or b"")
    beta_body = json.loads(Dialect(beta=True).render({"type": ga}) or b"")
    assert ga_body["type"] == ga and beta_body["type"] == beta
    assert ga_body["event_id"] and beta_body["event_id"]


def test_ids_are_unique_and_beta_drops_what_it_lacks() -> None:
    dialect = Dialect()
    ids = {json.loads(dialect.render({"type": "error"}) or b"")["event_id"] for _ in range(100)}
    assert len(ids) == 100
    assert Dialect(beta=True).render({"type": "conversation.item.done"}) is None


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{}", "invalid_event"),
        ("not json", "invalid_json"),
        ("[1]", "invalid_event"),
        ('{"type": "response.explode"}', "invalid_event"),
    ],
)
def test_unreadable_client_events_are_refused(raw: str | bytes, code: str) -> None:
    with pytest.raises(RealtimeError) as refused:
        parse_client_event(raw)
    assert refused.value.code == code


def test_a_ga_update_and_its_beta_rendering() -> None:
    update = {
        "type": "realtime",
        "output_modalities": ["text"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcmu"},
                "turn_detection": {"type": "semantic_vad", "eagerness": "high"},
            },
            "output": {"voice": "cedar", "speed": 1.2},
        },
        "max_output_tokens": "inf",
    }
    config = apply_update(CONFIG, update)
    assert config.input_format == AudioFormat("audio/pcmu", 8000)
    assert config.turn_detection is not None and config.turn_detection.end_silence_ms == 300
    assert (config.voice, config.speed, config.speaks) == ("cedar", 1.2, False)
    beta = beta_session(render_session(config, "sess_1"))
    assert beta["input_audio_format"] == "g711_ulaw" and beta["modalities"] == ["text"]


@pytest.mark.parametrize(
    ("update", "param"),
    [
        ({"audio": {"input": {"format": {"type": "audio/pcm", "rate": 11025}}}}, "rate"),
        ({"audio": {"input": {"turn_detection": {"type": "loud"}}}}, "turn_detection"),
        ({"tools": [{"type": "function"}]}, "tools[0].name"),
        ({"max_output_tokens": 0}, "max_output_tokens"),
        ({"type": "translation"}, "session.type"),
    ],
)
def test_a_wrong_update_names_its_field_and_changes_nothing(
    update: dict[str, Any], param: str
) -> None:
    with pytest.raises(RealtimeError) as refused:
        apply_update(CONFIG, update | {"instructions": "changed"})
    assert refused.value.param is not None and refused.value.param.endswith(param)


@pytest.mark.parametrize(
    ("state", "event", "outcome"),
    [
        ("idle", "create", "responding"),
        ("responding", "ended", "idle"),
        ("responding", "barge_in", "responding"),
        ("responding", "create", "conversation_already_has_active_response"),
        ("idle", "cancel", "response_cancel_not_active"),
    ],
)
def test_the_session_table(state: str, event: str, outcome: str) -> None:
    try:
        assert next_state(state, event) == outcome  # type: ignore[arg-type]
    except RealtimeError as refused:
        assert refused.code == outcome


def test_the_response_table() -> None:
    assert ended("in_progress", "cancelled") == "cancelled"
    assert ended("in_progress", "finished") == "completed"


SPOKEN = Item(
    "item_1",
    "message",
    role="assistant",
    audio=True,
    text="One two three four. Five six seven eight.",
    spoken=[Spoken("One two three four.", 2000), Spoken("Five six seven eight.", 2000)],
)


@pytest.mark.parametrize(
    ("end_ms", "kept"),
    [
        (0, ""),
        (1000, "One two"),
        (2000, "One two three four."),
        (3500, "One two three four. Five six seven"),
        (9999, "One two three four. Five six seven eight."),
    ],
)
def test_truncation_keeps_what_was_played(end_ms: int, kept: str) -> None:
    cut = truncated(SPOKEN, end_ms)
    assert cut.text == kept and SPOKEN.text.startswith(cut.text)
    assert chat_messages([cut], "")[-1:] == (
        [{"role": "assistant", "content": kept}] if kept else []
    )


def test_function_calls_and_outputs_become_chat_messages() -> None:
    items = [
        Item("a", "message", role="user", text="Weather?"),
        Item(
            "b", "function_call", call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'
        ),
        Item("c", "function_call_output", call_id="call_1", output='{"sunny":true}'),
    ]
    messages = chat_messages(items, "Be brief.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"sunny":true}'}


def test_the_pacer_allows_the_lead_and_no_more() -> None:
    pacer = Pacer(1.5)
    assert pacer.delay(10.0, 1.0) == 0.0
    pacer.sent(10.0, 1.0)
    assert pacer.delay(10.0, 1.0) == pytest.approx(0.5)  # 2 s sent at 10.5: 1.5 ahead
    pacer.sent(10.5, 1.0)
    assert pacer.played_ms(11.0) == 1000 and pacer.played_ms(20.0) == 2000


def test_g711_round_trips_through_the_codecs() -> None:
    tone = (np.sin(np.arange(24_000) / 24_000 * 2 * np.pi * 440) * 8000).astype("<i2")
    ulaw = OutputAudio(AudioFormat("audio/pcmu", 8000)).encode(tone.tobytes())
    assert len(ulaw) == pytest.approx(8000, abs=64)  # one byte a sample at 8 kHz
    back = np.frombuffer(InputAudio(AudioFormat("audio/pcmu", 8000)).decode(ulaw), "<i2")
    assert len(back) == pytest.approx(16_000, abs=64)  # resampled for the VAD
    assert np.abs(back).max() == pytest.approx(8000, rel=0.1)
