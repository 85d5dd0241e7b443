"""Pipecat's `OpenAIRealtimeLLMService` holding a conversation with the gateway, unchanged
but for the base URL and key. Run by `tests/gateway/realtime/test_voice_frameworks.py`
with the voice clients' own interpreter (`.venv-voice`: Pipecat and LiveKit pin
versions of protobuf and soundfile older than the gateway's); it imports nothing of the
gateway.

`python pipecat_conversation.py URL KEY TURNS_DIR OUT.json`: TURNS_DIR holds first.pcm,
interruption.pcm and second.pcm (PCM16 mono 24 kHz, each ending in a second of
silence). Every server event and every client event the service sent go to OUT.json.

The weather tool answers once the user's turn has ended in the pipeline. Pipecat 1.14
races with itself otherwise: a function result that reaches the assistant aggregator
while it still counts the user as speaking makes the context push (and with it the
service's `response.create`) "owed until the turn ends", and the `UserStoppedSpeakingFrame`
that follows never pays it (`LLMAssistantAggregator`, `_context_push_owed`). A model's
function call can beat that frame only when it comes within Pipecat's own frame hops of
`input_audio_buffer.speech_stopped`: the unpaced simulator behind the gateway's native
relay, on a loaded machine, did (the answer after the function call never came). An
application's tool that takes any time at all does the same as this wait.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pipecat.adapters.schemas.function_schema import FunctionSchema
from pipecat.adapters.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InputAudioRawFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.runner import PipelineRunner
from pipecat.pipeline.task import PipelineParams, PipelineTask
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import FunctionCallParams
from pipecat.services.openai.realtime import events
from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService
from seen import CLIENT, SERVER, completed_answers, count, until

_parse = events.parse_server_event


def _recording_parse(message: str) -> Any:
    SERVER.append(json.loads(message))
    return _parse(message)


events.parse_server_event = _recording_parse


class RecordingService(OpenAIRealtimeLLMService):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.turn_over = asyncio.Event()  # no user turn under way (see the docstring)
        self.turn_over.set()

    async def _ws_send(self, realtime_message: dict[str, Any]) -> None:
        CLIENT.append(realtime_message)
        await super()._ws_send(realtime_message)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)  # passed on to the aggregator first
        if isinstance(frame, UserStartedSpeakingFrame):
            self.turn_over.clear()
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self.turn_over.set()


async def speak(task: PipelineTask, pcm: bytes) -> None:
    for start in range(0, len(pcm), 4800):  # 100 ms a frame, as a microphone would
        frame = InputAudioRawFrame(
            audio=pcm[start : start + 4800], sample_rate=24000, num_channels=1
        )
        await task.queue_frame(frame)
        await asyncio.sleep(0.01)


async def weather(params: FunctionCallParams) -> None:
    assert isinstance(params.llm, RecordingService)
    await params.llm.turn_over.wait()  # the result queued behind the turn's end
    await params.result_callback({"forecast": "sunny", "celsius": 21})


async def main(url: str, key: str, turns: Path) -> None:
    tools = ToolsSchema(
        standard_tools=[
            FunctionSchema(
                name="get_weather",
                description="The weather in a city.",
                properties={"city": {"type": "string"}},
                required=["city"],
            )
        ]
    )
    # The session's tools and instructions, as an application configures them.
    session = events.SessionProperties(instructions="You are a weather assistant.", tools=tools)
    settings = OpenAIRealtimeLLMService.Settings(session_properties=session)
    llm = RecordingService(api_key=key, base_url=url, settings=settings)
    llm.register_function("get_weather", weather)
    context = LLMContext([{"role": "system", "content": "You are a weather assistant."}], tools)
    aggregators = LLMContextAggregatorPair(context)
    pipeline = Pipeline([aggregators.user(), llm, aggregators.assistant()])
    params = PipelineParams(audio_in_sample_rate=24000, audio_out_sample_rate=24000)
    task = PipelineTask(pipeline, params=params)
    runner = PipelineRunner(handle_sigint=False)
    running = asyncio.create_task(runner.run(task))
    try:
        await until("session", lambda: count("session.updated"))
        await speak(task, (turns / "first.pcm").read_bytes())
        await until("a function call", lambda: count("response.function_call_arguments.done"))
        await until("its answer's audio", lambda: count("response.output_audio.delta"))
        await speak(task, (turns / "interruption.pcm").read_bytes())  # barge-in
        await until("a truncation", lambda: count("conversation.item.truncated"))
        await until("the answer to the interruption", lambda: completed_answers() == 1)
        await speak(task, (turns / "second.pcm").read_bytes())
        await until("the second answer", lambda: completed_answers() == 2)
    finally:
        await task.queue_frame(EndFrame())
        await asyncio.wait_for(running, 15)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
    finally:
        Path(sys.argv[4]).write_text(json.dumps({"server": SERVER, "client": CLIENT}))
