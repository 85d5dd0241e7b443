"""Documents and audio in chat messages (issue 36 point 3): each vendor gets them in its
own shape, or the request is refused naming the part; never dropped in silence.

The simulators open their answer with what they received (`[received N: ...]`), in the
terms of their own wire format, so each test proves the content arrived, not just a 200.
"""

from __future__ import annotations

import base64
import io
import wave
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from tests.gateway.documents import pdf_with_text
from tests.gateway.test_responses_background import other_workspace

PDF = pdf_with_text(["The quarterly report."])
NOTES = b"The meeting is on Tuesday."


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def files_message(*parts: dict[str, Any]) -> Any:
    return [{"role": "user", "content": [{"type": "text", "text": "Summarise these."}, *parts]}]


PDF_PART = {
    "type": "file",
    "file": {"file_data": data_url("application/pdf", PDF), "filename": "report.pdf"},
}
TEXT_PART = {
    "type": "file",
    "file": {"file_data": data_url("text/plain", NOTES), "filename": "notes.txt"},
}


def wav_clip(seconds: float = 1.0, rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(b"\x00\x01" * int(seconds * rate))
    return out.getvalue()


AUDIO_PART = {
    "type": "input_audio",
    "input_audio": {"data": base64.b64encode(wav_clip()).decode(), "format": "wav"},
}


def error_of(caught: pytest.ExceptionInfo[openai.APIStatusError]) -> dict[str, Any]:
    error: dict[str, Any] = caught.value.response.json()["error"]
    return error


@pytest.mark.parametrize(
    ("model", "received"),
    [
        ("gpt-4o-mini", "[received 2: document report.pdf; document notes.txt]"),
        ("claude-haiku-4-5", "[received 2: document report.pdf; document notes.txt]"),
        ("gemini-2.5-flash", "[received 2: document application/pdf; document text/plain]"),
        # Mistral reads a text file as text: only the PDF is a `document_url` chunk
        ("mistral-small-latest", "[received 1: document report.pdf]"),
    ],
)
async def test_documents_reach_each_vendor_in_its_own_shape(
    client: openai.AsyncOpenAI, model: str, received: str
) -> None:
    answer = await client.chat.completions.create(
        model=model, messages=files_message(PDF_PART, TEXT_PART)
    )
    assert (answer.choices[0].message.content or "").startswith(received)


async def test_a_document_for_a_model_that_reads_none_is_refused_naming_the_part(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="command-a-03-2025", messages=files_message(PDF_PART)
        )
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("unsupported_parameter", "messages[0].content[1]")
    assert "file_input" in error["message"]


async def test_audio_for_a_model_that_hears_none_is_refused_naming_the_part(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="claude-haiku-4-5", messages=files_message(PDF_PART, AUDIO_PART)
        )
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("unsupported_parameter", "messages[0].content[2]")
    assert "audio_input" in error["message"]


async def test_audio_reaches_gemini_inline(client: openai.AsyncOpenAI) -> None:
    """Gemini's simulator transcribes an audio `inlineData` part: the answer names the
    clip's measured length, so the audio itself arrived."""
    answer = await client.chat.completions.create(
        model="gemini-2.5-flash", messages=files_message(AUDIO_PART)
    )
    assert "1.0 second" in (answer.choices[0].message.content or "")


@pytest.mark.parametrize("mode", ["balanced", "cost_optimized", "sustain_optimized"])
async def test_auto_routes_documents_and_audio_only_to_models_that_read_them(
    client: openai.AsyncOpenAI, mode: str
) -> None:
    for part, capability in ((PDF_PART, "file_input"), (AUDIO_PART, "audio_input")):
        raw = await client.chat.completions.with_raw_response.create(
            model="auto", messages=files_message(part), extra_body={"routing_mode": mode}
        )
        served = raw.headers["x-service-model-used"].split("/", 1)[1]
        chain = [served] + [
            alt["model"] for alt in (raw.parse().model_extra or {})["_gateway"]["alternatives"]
        ]
        for model in chain:
            info = load_catalog().model(model)
            assert info is not None and capability in info.capabilities, (model, capability)


@pytest.mark.parametrize(
    ("part", "param"),
    [
        ({"type": "file", "file": {"filename": "a.pdf"}}, "messages[0].content[1].file"),
        (
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,@@@"}},
            "messages[0].content[1].file.file_data",
        ),
        (
            {"type": "file", "file": {"file_data": data_url("application/zip", b"PK")}},
            "messages[0].content[1].file.file_data",
        ),
        (
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "flac"}},
            "messages[0].content[1].input_audio.format",
        ),
    ],
)
async def test_a_malformed_part_is_a_400_naming_it(
    client: openai.AsyncOpenAI, part: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=files_message(part))
    assert error_of(caught)["param"] == param


async def test_a_gateway_file_id_is_read_inline_never_forwarded(
    client: openai.AsyncOpenAI,
) -> None:
    """`purpose: user_data`, as the openai package sends files for models, then its id in
    a message: Anthropic receives the document itself (Anthropic has no such file)."""
    uploaded = await client.files.create(file=("report.pdf", PDF), purpose="user_data")
    part = {"type": "file", "file": {"file_id": uploaded.id}}
    answer = await client.chat.completions.create(
        model="claude-haiku-4-5", messages=files_message(part)
    )
    assert (answer.choices[0].message.content or "").startswith("[received 1: document report.pdf]")
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(
            model="claude-haiku-4-5",
            messages=files_message({"type": "file", "file": {"file_id": "file-unknown"}}),
        )


async def test_purpose_vision_takes_images_only(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.files.create(file=("notes.txt", NOTES), purpose="vision")
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("invalid_file_type", "purpose")


async def test_responses_input_file_and_audio_reach_the_vendor(client: openai.AsyncOpenAI) -> None:
    """/v1/responses `input_file` (inline) is chat's file part: Anthropic gets a document;
    `input_audio` reaches Gemini, which hears the clip."""
    pdf = PDF_PART["file"]
    response = await client.responses.create(
        model="claude-haiku-4-5",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Summarise."},
                    {"type": "input_file", "file_data": pdf["file_data"], "filename": "report.pdf"},
                ],
            }
        ],
    )
    assert response.output_text.startswith("[received 1: document report.pdf]")
    heard = await client.responses.create(
        model="gemini-2.5-flash",
        input=[{"role": "user", "content": [AUDIO_PART]}],  # type: ignore[list-item]
    )
    assert "1.0 second" in heard.output_text


async def test_responses_file_url_is_a_400_naming_it(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="gpt-4o-mini",
            input=[
                {
                    "role": "user",
                    "content": [{"type": "input_file", "file_url": "https://x.example/a.pdf"}],
                }
            ],
        )
    assert error_of(caught)["param"] == "input[0].content[0].file_url"


async def test_another_workspaces_file_id_is_a_404_and_reaches_no_vendor(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    uploaded = await client.files.create(file=("report.pdf", PDF), purpose="user_data")
    key = await other_workspace(http, gateway, "elsewhere")
    before = len(gateway.sim.requests)
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=key, max_retries=0
    ) as other:
        with pytest.raises(openai.NotFoundError):
            await other.chat.completions.create(
                model="gpt-4o-mini",
                messages=files_message({"type": "file", "file": {"file_id": uploaded.id}}),
            )
    assert len(gateway.sim.requests) == before


RESPONSES_PDF = {
    "type": "input_file",
    "file_data": data_url("application/pdf", PDF),
    "filename": "report.pdf",
}
TOOL_TURN: Any = [
    {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "Found."},
]


@pytest.mark.parametrize(
    ("instructions", "before", "param"),
    [
        (None, [], "input[0].content[1]"),
        ("Be brief.", [], "input[0].content[1]"),
        ("Be brief.", [{"role": "assistant", "content": "Hi."}, *TOOL_TURN], "input[3].content[1]"),
    ],
)
async def test_responses_refusal_of_a_file_names_the_input_item(
    client: openai.AsyncOpenAI, instructions: str | None, before: Any, param: str
) -> None:
    """Chat names the part in its own messages (the instructions its first, a function
    call joined to the assistant turn before it): the refusal names the input item."""
    asked: Any = {"role": "user", "content": [{"type": "input_text", "text": "Read"}]}
    asked["content"].append(RESPONSES_PDF)
    extra: Any = {} if instructions is None else {"instructions": instructions}
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="command-a-03-2025", input=[*before, asked], **extra)
    error = error_of(caught)
    assert (error["code"], error["param"], error["value"]) == (
        "unsupported_parameter",
        param,
        "file",
    )
    assert error["message"].startswith(f"'{param}' cannot be honoured")
