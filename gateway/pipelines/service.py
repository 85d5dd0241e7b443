"""Serving `POST /v1/audio/pipelines`: resolve the template, check the audio, plan every
stage, take the key's share of its limits, then run the overlapped pipeline
(`gateway.kernels.voice.flow`) whole or streamed.

Everything that can be refused is refused before the answer starts (an unknown template
is a 404, bad audio or parameters a 400, a spent limit a 429), so a stream's 200 head is
only sent for a pipeline that runs. A pipeline is admitted once against the key's limits
(one request, the model's prompt and `max_tokens`) and settled with the model's real
tokens when it ends; each stage leaves its own usage record (`gateway.app.voice_stages`).

The template's kind adds its post-processing: `legal` carries out the spoken formatting
commands before the model sees the transcript and formats the document after it;
`scribe` validates the model's note, finds PII/PHI in the transcript and writes the audit
event (built by the caller, in the request, and stored here when the note is done).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio

from gateway.kernels.pii import worker as pii_worker
from gateway.kernels.voice.errors import audio_status
from gateway.kernels.voice.flow import EVENT_BUFFER, Event, Finisher, Trace, run_pipeline
from gateway.pipelines import legal, scribe
from gateway.pipelines.capabilities import PreparedStages
from gateway.pipelines.custom import find_template
from gateway.pipelines.encoding import ThreadedEncoder
from gateway.pipelines.input import PipelineParams
from gateway.pipelines.metered import ENDPOINT
from gateway.pipelines.render import PipelineResult, ScribeResult, event_line, result_body
from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.template_input import voice_known
from gateway.pipelines.templates import Template, with_overrides
from gateway.platform.auth import Principal
from gateway.platform.body import TaskBody
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.extras import FILES, not_installed
from gateway.upstream.facts import RequestFacts, new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from providers.audio_codec import Pcm, codec_for, encode
from providers.audio_types import PCM_RATE, AudioClip
from providers.types import Usage
from providers.voices import load_voices
from store import audit
from store.audit import AuditEvent


@attrs.frozen
class Prepared:
    """A pipeline ready to run: everything checked, planned and admitted."""

    id: str
    services: PipelinesServices
    facts: RequestFacts
    template: Template
    stages: PreparedStages
    hold: Hold
    audit_event: AuditEvent | None

    def finisher(self) -> Finisher | None:
        if self.template.kind == "scribe":
            return self._scribe
        if self.template.kind == "legal":
            return _legal
        if self.template.tts is not None:
            return self._stream_audio
        return None

    def encoder(self) -> ThreadedEncoder | None:
        """A streamed answer's encoder: none for raw PCM or a template without speech."""
        tts = self.template.tts
        if tts is None or tts.format == "pcm":
            return None
        return ThreadedEncoder(tts.format)

    async def _stream_audio(self, trace: Trace) -> Mapping[str, Any]:
        """What the `audio.chunk` data of a stream is (documented in README): one file
        in the template's format across the chunks, or raw PCM16."""
        tts = self.template.tts
        assert tts is not None
        rate = PCM_RATE if tts.format == "pcm" else codec_for(tts.format)[2]
        return {"audio_format": tts.format, "sample_rate": rate}

    def shape_transcript(self) -> Any:
        return legal.apply_commands if self.template.kind == "legal" else None

    async def _scribe(self, trace: Trace) -> Mapping[str, Any]:
        note = scribe.structured_note(trace.response)
        findings = await pii_worker.run_scan(
            scribe.pii_findings, trace.transcript, limiter=self.services.pii_scans
        )
        logged = False
        audit_id = None
        if self.audit_event is not None:
            details = _scribe_details(self, trace, findings)
            event = attrs.evolve(self.audit_event, target_id=self.id, details=details)
            await self.services.db.run(lambda d: audit.append(d, event))
            logged, audit_id = True, event.id
        workspace = self.facts.principal.workspace_id
        covered = scribe.hipaa_covered(trace.providers, lambda p: _baa(self.services, workspace, p))
        return {
            "structured_note": note,
            "pii_detected": findings,
            "audit_id": audit_id,
            "compliance": {"hipaa": covered and logged, "audit_logged": logged},
        }

    def settle(self) -> None:
        """Charge the key the model's real tokens and give its concurrency slot back."""
        metered = self.stages.metered
        target = metered.llm_target or self.stages.planned_llm_target
        usage = Usage(metered.prompt_tokens, metered.completion_tokens)
        self.services.engine.settle(self.facts, target, self.hold, usage)
        self.hold.release()


async def _legal(trace: Trace) -> Mapping[str, Any]:
    return {"document": legal.format_legal(trace.response)}


def _scribe_details(
    prepared: Prepared, trace: Trace, findings: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the audit log keeps of a scribe run: who served it and what kinds of PII were
    found, never the transcript or the values."""
    return {
        "pipeline_id": prepared.id,
        "template": prepared.template.id,
        "providers": dict(trace.providers),
        "pii_types": sorted({f["type"] for f in findings}),
        "pii_count": len(findings),
    }


def _baa(services: PipelinesServices, workspace: str, provider_id: str) -> bool:
    entry = services.engine.registry.get(workspace, provider_id)
    return bool(entry is not None and entry.record.settings.get("hipaa_baa") is True)


async def prepare(
    services: PipelinesServices,
    principal: Principal,
    headers: Mapping[str, str],
    params: PipelineParams,
    audio_bytes: bytes,
    *,
    audit_event: AuditEvent | None,
) -> Prepared:
    """Check, plan and admit one pipeline (see the module docstring); raises `ApiError`."""
    principal.require("audio")
    template = await find_template(services, principal.workspace_id, params.template)
    template = with_overrides(template, params.overrides, params.context)
    if template.kind == "scribe" and not FILES.installed():  # its PII scan is the files'
        raise not_installed("The scribe template's PII detection", (FILES,))
    await _check_overrides(services, principal, template, params)
    clip = await _clip(services, audio_bytes)
    response_format = scribe.RESPONSE_FORMAT if template.kind == "scribe" else None
    stages = await services.voice.prepare_stages(
        principal, headers, template, clip, response_format=response_format
    )
    facts = new_facts(ENDPOINT, principal, headers)
    with services.engine.usage.refusing(facts, stages.planned_llm_target):
        hold = await services.admission.admit(
            principal,
            ServiceOptions(),
            prompt_tokens=stages.prompt_estimate,
            max_tokens=template.llm.max_tokens,
        )
    event = audit_event if template.kind == "scribe" else None
    return Prepared(facts.request_id, services, facts, template, stages, hold, event)


async def _check_overrides(
    services: PipelinesServices, principal: Principal, template: Template, params: PipelineParams
) -> None:
    """An override naming a model without the stage's capability, or a voice nobody
    knows, is a 400 (the spec's code for a pipeline's bad parameters)."""
    model = params.overrides.llm_model
    if model is not None:
        info = services.catalog.model(model)
        if info is None or "chat" not in info.capabilities:
            raise invalid_request(
                f"'{model}' is not a chat model of the catalog.",
                param="overrides.llm.model",
                value=model,
            )
    voice = params.overrides.tts_voice
    if voice is None or voice_known(load_voices(), voice):
        return
    if await services.voice.voice_mapping(principal.workspace_id, voice) is None:
        raise invalid_request(f"Unknown voice '{voice}'.", param="overrides.tts.voice", value=voice)


async def _clip(services: PipelinesServices, data: bytes) -> AudioClip:
    if not data:
        raise ApiError(400, "invalid_audio", "'audio' is empty.", param="audio")
    try:
        return await trio.to_thread.run_sync(services.voice.measure_clip, data, "audio")
    except ApiError as error:
        if error.code == "invalid_audio":  # the pipeline's field is `audio`, not `file`
            error.extra["param"] = "audio"
        raise


def _runner(prepared: Prepared, *, streamed: bool) -> Any:
    async def run(events: trio.MemorySendChannel[Event]) -> Trace:
        return await run_pipeline(
            prepared.stages,
            events,
            speak=prepared.template.tts is not None,
            finisher=prepared.finisher(),
            shape_transcript=prepared.shape_transcript(),
            encoder=prepared.encoder() if streamed else None,
        )

    return run


async def serve_whole(prepared: Prepared) -> PipelineResult | ScribeResult:
    """Run the pipeline to its end and render the result; a stage that could not be
    served raises its `ApiError`. Cancellation stops every stage."""
    extra: dict[str, Any] = {}
    trace: Trace | None = None
    send, receive = trio.open_memory_channel[Event](EVENT_BUFFER)
    try:
        async with trio.open_nursery() as nursery:

            async def produce() -> None:
                nonlocal trace
                trace = await _runner(prepared, streamed=False)(send)

            nursery.start_soon(produce)
            async with receive:
                async for event in receive:
                    if event["type"] == "done":
                        extra = {
                            k: v for k, v in event.items() if k not in ("type", "usage", "latency")
                        }
    finally:
        prepared.settle()
    assert trace is not None
    if trace.error is not None:
        # The spec's pipeline statuses list 500 for a provider's failure, as for speech
        # and transcriptions (timeouts and unavailability keep 504 and 503).
        raise audio_status(trace.error)
    audio = await _encoded(prepared.template, b"".join(trace.audio))
    usage = prepared.stages.usage()
    return result_body(prepared.id, prepared.template, trace, usage, extra, audio)


async def _encoded(template: Template, pcm: bytes) -> bytes | None:
    """The answer's speech (PCM16 at 24 kHz) as one file in the template's format."""
    if template.tts is None:
        return None
    audio_format = template.tts.format
    if audio_format == "pcm" or not pcm:
        return pcm
    return await trio.to_thread.run_sync(encode, Pcm(pcm, PCM_RATE), audio_format)


def _extra(done: Event) -> dict[str, Any]:
    """What a template's post-processing added to the `done` event."""
    return {k: v for k, v in done.items() if k not in ("type", "usage", "latency")}


def streamed(prepared: Prepared) -> TaskBody[Event]:
    """The NDJSON body: the pipeline runs in the body's nursery, each event one line;
    leaving the body (the end, or the client left) cancels every stage and closes every
    upstream, then settles the key's hold, on every path."""

    async def settle() -> None:
        prepared.settle()

    return TaskBody(
        _runner(prepared, streamed=True),
        event_line,
        content_type="application/x-ndjson",
        buffer=EVENT_BUFFER,
        on_close=settle,
    )
