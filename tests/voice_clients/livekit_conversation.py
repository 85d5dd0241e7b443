"""LiveKit Agents' `openai.realtime.RealtimeModel` and `openai.STT(use_realtime=True)`
against the gateway, unchanged but for the base URL and key. Run by
`tests/gateway/realtime/test_voice_frameworks.py` with the voice clients' own
interpreter (`.venv-voice`); it imports nothing of the gateway.

`python livekit_conversation.py URL KEY TURNS_DIR OUT.json` (URL: the gateway's
`ws://.../v1/realtime`; LiveKit is given `http://.../v1` as it would be given OpenAI's).
The script plays the part `AgentSession` plays for the model: it answers function calls
through the chat context, and on the user's speech during an answer it interrupts and
truncates the assistant's message to what was played.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import llm, utils
from livekit.agents.stt import SpeechEventType
from livekit.plugins import openai as lk_openai
from seen import CLIENT, SERVER, completed_answers, count, until

FINALS: list[str] = []
BACKGROUND: set[asyncio.Task[None]] = set()  # the tasks the callbacks start


def background(work: Any) -> None:
    task = asyncio.create_task(work)
    BACKGROUND.add(task)
    task.add_done_callback(BACKGROUND.discard)


@llm.function_tool
async def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny", "celsius": 21}


class Player:
    """What a speaker would have played of the assistant's message being spoken."""

    def __init__(self) -> None:
        self.message_id: str | None = None
        self.started = 0.0
        self.audio_ms = 0.0

    def heard_ms(self) -> int:
        return int(min((time.monotonic() - self.started) * 1000, self.audio_ms))


def frames(pcm: bytes) -> list[rtc.AudioFrame]:
    return [
        rtc.AudioFrame(pcm[i : i + 4800], 24000, 1, len(pcm[i : i + 4800]) // 2)
        for i in range(0, len(pcm), 4800)
    ]


async def speak(session: Any, pcm: bytes) -> None:
    for frame in frames(pcm):
        session.push_audio(frame)
        await asyncio.sleep(0.01)


async def follow(session: Any, event: llm.GenerationCreatedEvent, player: Player) -> None:
    """Play a generation's audio and answer its function calls."""

    async def play(message: Any) -> None:
        player.message_id, player.started, player.audio_ms = message.message_id, 0.0, 0.0
        async for frame in message.audio_stream:
            if not player.started:
                player.started = time.monotonic()
            player.audio_ms += frame.samples_per_channel / frame.sample_rate * 1000

    async def messages() -> None:
        async for message in event.message_stream:
            background(play(message))
            async for _ in message.text_stream:
                pass

    reader = asyncio.create_task(messages())
    calls = [call async for call in event.function_stream]
    await reader
    if not calls:
        return
    context = session.chat_ctx.copy()
    for call in calls:
        result = await get_weather(**json.loads(call.arguments))
        context.items.append(
            llm.FunctionCallOutput(
                name=call.name, call_id=call.call_id, output=json.dumps(result), is_error=False
            )
        )
    await session.update_chat_ctx(context)
    session.generate_reply()


async def conversation(http_url: str, key: str, turns: Path) -> None:
    model = lk_openai.realtime.RealtimeModel(base_url=http_url, api_key=key)
    session = model.session()
    session.on("openai_server_event_received", SERVER.append)
    session.on("openai_client_event_queued", CLIENT.append)
    player = Player()

    def on_generation(event: llm.GenerationCreatedEvent) -> None:
        background(follow(session, event, player))

    def on_speech(_: Any) -> None:  # AgentSession's barge-in
        if player.message_id is not None and player.started:
            session.interrupt()
            session.truncate(
                message_id=player.message_id, modalities=["audio"], audio_end_ms=player.heard_ms()
            )
            player.message_id = None

    session.on("generation_created", on_generation)
    session.on("input_speech_started", on_speech)
    await session.update_tools([get_weather])
    await until("session", lambda: count("session.updated"))
    await speak(session, (turns / "first.pcm").read_bytes())
    await until("a function call", lambda: count("response.function_call_arguments.done"))
    await until("its answer's audio", lambda: count("response.output_audio.delta"))
    await asyncio.sleep(0.5)  # half a second of it played
    await speak(session, (turns / "interruption.pcm").read_bytes())
    await until("a truncation", lambda: count("conversation.item.truncated"))
    await until("the answer to the interruption", lambda: completed_answers() == 1)
    await speak(session, (turns / "second.pcm").read_bytes())
    await until("the second answer", lambda: completed_answers() == 2)
    await session.aclose()
    await model.aclose()


async def transcription(http_url: str, key: str, turns: Path) -> None:
    """`openai.STT(use_realtime=True)`: a transcription session over the same endpoint."""
    stt = lk_openai.STT(base_url=http_url, api_key=key, use_realtime=True)
    stream = stt.stream()
    heard = asyncio.Event()

    async def read() -> None:
        async for event in stream:
            if event.type == SpeechEventType.FINAL_TRANSCRIPT and event.alternatives:
                FINALS.append(event.alternatives[0].text)
                heard.set()

    reader = asyncio.create_task(read())
    for frame in frames((turns / "second.pcm").read_bytes()):
        stream.push_frame(frame)
        await asyncio.sleep(0.01)
    await asyncio.wait_for(heard.wait(), 60)
    await stream.aclose()  # a session that lasts as long as the microphone: closed here
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await stt.aclose()


async def main(ws_url: str, key: str, turns: Path) -> None:
    http_url = ws_url.replace("ws://", "http://").removesuffix("/realtime")
    async with utils.http_context.open():
        await conversation(http_url, key, turns)
        await transcription(http_url, key, turns)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
    finally:
        Path(sys.argv[4]).write_text(
            json.dumps({"server": SERVER, "client": CLIENT, "stt": FINALS})
        )
