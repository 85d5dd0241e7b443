"""ElevenLabs' WebSocket input streaming: the adapter against the simulator, over real
sockets (trio-websocket on both sides), and the protocol's pure pieces."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import pytest
import soundfile
import trio

from gateway.pipelines.voice_line import SocketLine
from providers.audio_types import SpeechRequest
from providers.base import ProviderEndpoint
from providers.elevenlabs import ElevenLabsProvider
from providers.elevenlabs_ws import (
    ServerMessage,
    VendorError,
    opening_message,
    parse_server_message,
    stream_input_url,
    text_message,
)
from providers.errors import AuthenticationFailed, InvalidUpstreamRequest, StreamInterrupted
from providers.sim.core import Fault
from providers.sim.server import SimServer
from providers.websocket_client import open_socket

RACHEL = "21m00Tcm4TlvDq8ikWAM"
TEXT = "The simulated voice reads this sentence over a socket."


def adapter(http: httpx.AsyncClient, sim: SimServer, key: str = "xi-test") -> ElevenLabsProvider:
    endpoint = ProviderEndpoint(
        "elevenlabs", sim.base_url("elevenlabs"), key, {"speech_transport": "websocket"}
    )
    return ElevenLabsProvider(http, endpoint)


def request(fmt: str = "mp3", voice: str = RACHEL) -> SpeechRequest:
    return SpeechRequest("eleven_flash_v2_5", TEXT, voice, fmt)  # type: ignore[arg-type]


# -- pure ----------------------------------------------------------------------------------


def test_the_url_takes_the_socket_scheme_and_the_format() -> None:
    url = stream_input_url("https://api.elevenlabs.io", request("wav"))
    assert url == (
        "wss://api.elevenlabs.io/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream-input"
        "?model_id=eleven_flash_v2_5&output_format=pcm_24000"
    )
    local = stream_input_url("http://127.0.0.1:9/elevenlabs/", request("opus"))
    assert local.startswith("ws://127.0.0.1:9/elevenlabs/v1/") and "opus_48000_64" in local


def test_messages_out() -> None:
    assert json.loads(opening_message(request())) == {"text": " "}
    assert json.loads(text_message("Hello", flush=True)) == {"text": "Hello ", "flush": True}
    assert json.loads(text_message("Hi ", flush=False)) == {"text": "Hi "}


def test_messages_in() -> None:
    audio = base64.b64encode(b"\x01\x02").decode()
    assert parse_server_message(json.dumps({"audio": audio, "isFinal": None})) == ServerMessage(
        b"\x01\x02", False
    )
    assert parse_server_message('{"audio": null, "isFinal": true}') == ServerMessage(b"", True)
    error = {"message": "Have not received new text", "error": "input_timeout_exceeded"}
    assert parse_server_message(json.dumps(error)) == VendorError(
        "input_timeout_exceeded", "Have not received new text"
    )
    assert parse_server_message("not json") is None
    assert parse_server_message('{"audio": "!!"}') is None


# -- against the simulator -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["mp3", "opus", "wav", "flac", "pcm"])
async def test_speech_over_the_socket_in_every_format(sim: SimServer, fmt: str) -> None:
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        async with provider.speech_stream(request(fmt)) as chunks:
            data = b"".join([chunk async for chunk in chunks])
    assert sim.stats.by_path["/elevenlabs/v1/text-to-speech/{voice_id}/stream-input"] == 1
    if fmt == "pcm":
        assert len(data) % 2 == 0 and len(data) / 48_000 > 1.0
        return
    expected = {"mp3": "MP3", "opus": "OGG", "wav": "WAV", "flac": "FLAC"}[fmt]
    info = soundfile.info(io.BytesIO(data))
    assert info.format == expected and info.duration > 1.0


async def test_text_sent_incrementally_is_spoken_at_each_flush(sim: SimServer) -> None:
    """A producer sends sentences while the audio is read in another task: audio for the
    first sentence arrives before the second is sent."""
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        first_audio = trio.Event()
        received: list[bytes] = []

        async def read(audio):  # type: ignore[no-untyped-def]
            async for piece in audio:
                received.append(piece)
                first_audio.set()

        async with provider.speech_socket(request("pcm")) as session, trio.open_nursery() as n:
            n.start_soon(read, session.audio())
            await session.send("One sentence first.", flush=True)
            with trio.fail_after(10):
                await first_audio.wait()
            spoken_before_second = sum(map(len, received))
            await session.send("Then a second one.", flush=True)
            await session.end()
    assert spoken_before_second > 0
    assert sum(map(len, received)) > spoken_before_second


async def test_a_refused_handshake_maps_like_http(sim: SimServer) -> None:
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        with pytest.raises(InvalidUpstreamRequest):
            async with provider.speech_stream(request(voice="nobody")) as chunks:
                [chunk async for chunk in chunks]
        sim.faults.add(Fault(model="eleven_flash_v2_5", status=401, remaining=1))
        with pytest.raises(AuthenticationFailed):
            async with provider.speech_stream(request()) as chunks:
                [chunk async for chunk in chunks]


async def test_a_cut_socket_is_stream_interrupted(sim: SimServer) -> None:
    sim.faults.add(Fault(model="eleven_flash_v2_5", stop_after_chunks=1, remaining=1))
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        with pytest.raises(StreamInterrupted):
            async with provider.speech_stream(request("pcm")) as chunks:
                [chunk async for chunk in chunks]
    assert sim.stats.connections_cut == 1


async def test_leaving_early_closes_the_socket(sim: SimServer) -> None:
    sim.faults.add(Fault(model="eleven_flash_v2_5", stop_after_chunks=1, stall_ms=60_000))
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        with trio.fail_after(10):
            async with provider.speech_stream(request("pcm")) as chunks:
                assert await anext(chunks)
            while sim.stats.client_disconnects == 0:  # noqa: ASYNC110 (a counter, no event)
                await trio.sleep(0.01)
    assert sim.stats.client_disconnects == 1


async def test_the_simulator_speaks_the_raw_protocol(sim: SimServer) -> None:
    """What the vendor's documentation shows, byte for byte: key in the first message,
    each audio's alignment, a final message, an idle session timed out."""
    url = stream_input_url(sim.base_url("elevenlabs"), request("pcm"))
    async with open_socket(url, [], max_message_size=1 << 22) as socket:
        await socket.send_message(json.dumps({"text": " ", "xi_api_key": "xi-test"}))
        await socket.send_message(json.dumps({"text": "Hello there. "}))
        await socket.send_message(json.dumps({"text": ""}))
        messages: list[dict[str, Any]] = []
        while not (messages and messages[-1].get("isFinal")):
            messages.append(json.loads(await socket.get_message()))
    aligned = [m["alignment"]["chars"] for m in messages[:-1] if m["alignment"]]
    assert "".join(char for chars in aligned for char in chars) == "Hello there."
    assert messages[0]["alignment"]["chars"][0] == "H"
    assert all(m["audio"] for m in messages[:-1])
    async with open_socket(url + "&inactivity_timeout=1", [], max_message_size=1 << 22) as socket:
        await socket.send_message(json.dumps({"text": " ", "xi_api_key": "xi-test"}))
        error = json.loads(await socket.get_message())
    assert error["error"] == "input_timeout_exceeded" and error["code"] == 1008


async def test_a_socket_line_puts_each_piece_of_audio_in_its_sentence(sim: SimServer) -> None:
    """The pipeline's line over the simulator: sentences sent one by one, the audio
    tagged by the alignment with the sentence it speaks, every sentence's audio whole
    (PCM cut at whole samples) and in order."""
    sentences = ["One sentence first.", "Then a second, longer one."]
    async with httpx.AsyncClient() as http:
        provider = adapter(http, sim)
        tagged: list[tuple[int, bytes]] = []
        async with provider.speech_socket(request("pcm")) as socket:
            line = SocketLine(socket, "elevenlabs", None, first_s=10, idle_s=10)

            async def read() -> None:
                tagged.extend([item async for item in line.audio()])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                for sentence in sentences:
                    await line.say(sentence)
                await line.end()
    indexes = [index for index, _ in tagged]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1}
    assert all(len(piece) % 2 == 0 for _, piece in tagged)
    assert line.characters == sum(map(len, sentences))
    first_audio = sum(len(piece) for index, piece in tagged if index == 0)
    second_audio = sum(len(piece) for index, piece in tagged if index == 1)
    assert second_audio > first_audio  # the longer sentence has the longer speech
