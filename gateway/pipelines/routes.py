"""Voice pipelines: `POST /v1/audio/pipelines` (multipart or JSON, whole or NDJSON) and the
management API of custom pipeline templates. (The live sessions, `/v1/audio/sessions`, are
the realtime family's: `gateway.realtime.routes`.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.kernels.uploads.spooled import read_upload
from gateway.pipelines import template_admin
from gateway.pipelines.input import (
    BODY_LIMIT,
    MAX_AUDIO_BYTES,
    PipelineBody,
    PipelineParams,
    PipelineParts,
    base64_audio,
    parse_form,
    parse_json,
    too_large,
)
from gateway.pipelines.metered import ENDPOINT
from gateway.pipelines.render import (
    PipelineResult,
    PipelineTemplate,
    ScribeResult,
    TemplateList,
)
from gateway.pipelines.service import prepare, serve_whole, streamed
from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.template_input import TemplateChange, TemplateSpec
from gateway.platform.answers import Deleted
from gateway.platform.apidoc import Content, operation
from gateway.platform.audit import audit_event
from gateway.platform.auth import Principal
from gateway.platform.body import StreamAnswer
from gateway.platform.errors import invalid_request
from gateway.platform.web import json_response, read_object, stream_response
from gateway.upstream.facts import new_facts
from gateway.upstream.refusals import ENGINE, Codes, merged
from store.audit import AuditEvent

TAG = "pipelines"
TEMPLATES_TAG = "pipeline-templates"
NO_TEMPLATE = {404: "template_not_found"}
TEMPLATE_ERRORS: Codes = {409: "template_name_taken", 422: ("invalid_model", "invalid_voice")}
PIPELINE_ERRORS = merged(
    ENGINE,
    {
        400: ("invalid_audio", "invalid_model"),
        404: "template_not_found",
        413: "file_too_large",
        500: "provider_error",
    },
)
CHANGE_ERRORS = merged(NO_TEMPLATE, TEMPLATE_ERRORS, {400: "builtin_template"})
PIPELINES_PATH = "/v1/audio/pipelines"
TEMPLATES = "/v1/management/pipeline-templates"
# The request body a pipeline may send: its audio (base64 in JSON) plus the other fields.
PIPELINE_BODY_LIMIT = BODY_LIMIT
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def pipelines_blueprint(services: PipelinesServices) -> Blueprint:
    bp = Blueprint("pipelines", __name__)

    @bp.post(PIPELINES_PATH)
    @operation(
        "Run a voice pipeline: speech in, the language model, speech out",
        TAG,
        body=(PipelineBody, Content("multipart/form-data", PipelineParts)),
        answer=(
            PipelineResult,
            ScribeResult,
            Content(
                "application/x-ndjson",
                description="With `stream`: one JSON event per line (`transcription.partial`,"
                " `transcription.final`, `llm.token`, `llm.done`, `audio.chunk`, `done`, "
                "`error`)",
            ),
        ),
        errors=PIPELINE_ERRORS,
        description="Streamed `audio.chunk` data of one answer concatenates into one file in "
        "the template's `tts.format` (`done` says `audio_format` and `sample_rate`). A "
        "provider's failure is 500 `provider_error`, as the spec's audio endpoints have it.",
    )
    async def pipelines() -> Response:
        principal = await services.auth.caller()
        headers = cast(Mapping[str, str], request.headers)
        with services.engine.usage.rejecting(new_facts(ENDPOINT, principal, headers)):
            params, audio = await _read_pipeline_request()
            event = _scribe_event(principal)
            prepared = await prepare(services, principal, headers, params, audio, audit_event=event)
        if params.stream:
            body = streamed(prepared)
            return stream_response(StreamAnswer(body, STREAM_HEADERS | _id_header(prepared.id)))
        result = await serve_whole(prepared)
        return json_response(result, headers=_id_header(prepared.id))

    _template_routes(bp, services)
    return bp


def _id_header(pipeline_id: str) -> dict[str, str]:
    return {"X-Request-ID": pipeline_id}


async def _read_pipeline_request() -> tuple[PipelineParams, bytes]:
    content_type = request.headers.get("content-type") or ""
    if content_type.startswith("multipart/form-data"):
        upload = await read_upload(request.body, content_type, field="audio", text_file=True)
        try:
            if upload.as_text:  # the spec's "file or base64 string", in a form too
                text = upload.read_all().decode("ascii", "replace")
                return parse_form(upload.fields), base64_audio(text)
            if upload.size > MAX_AUDIO_BYTES:
                raise too_large()
            return parse_form(upload.fields), upload.read_all()
        finally:
            upload.close()
    if content_type.startswith("application/json") or not content_type:
        return parse_json(await read_object())
    raise invalid_request(
        "Send multipart/form-data with an 'audio' file, or JSON with 'audio' as base64.",
        param="audio",
    )


def _scribe_event(principal: Principal) -> AuditEvent:
    """The audit event of a scribe run, made while the request is at hand (its address);
    the service stores it, with its details, once the note is done."""
    return audit_event(principal, "pipeline.scribe_note", target_type="pipeline", target_id="")


def _template_routes(bp: Blueprint, services: PipelinesServices) -> None:
    """Templates are workspace configuration: reading them needs the role's
    `view_configuration`, changing them `configure_providers` (as voice mappings)."""
    _template_list_routes(bp, services)
    _one_template_routes(bp, services)


def _template_list_routes(bp: Blueprint, services: PipelinesServices) -> None:
    """The built-in templates with the workspace's own, and a custom one created."""

    @bp.get(TEMPLATES)
    @operation(
        "The built-in templates and the workspace's own",
        TEMPLATES_TAG,
        answer=TemplateList,
        permission="view_configuration",
    )
    async def list_templates() -> Response:
        principal = await services.auth.manager("view_configuration")
        return json_response(await template_admin.listing(services, principal))

    @bp.post(TEMPLATES)
    @operation(
        "Create a custom pipeline template",
        TEMPLATES_TAG,
        body=TemplateSpec,
        answer=PipelineTemplate,
        status=201,
        permission="configure_providers",
        errors=TEMPLATE_ERRORS,
    )
    async def create_template() -> Response:
        principal = await services.auth.manager("configure_providers")
        body = await read_object()
        return json_response(await template_admin.create(services, principal, body), 201)


def _one_template_routes(bp: Blueprint, services: PipelinesServices) -> None:
    """One template: read (built-in or custom), changed, replaced, deleted (custom only)."""

    @bp.get(f"{TEMPLATES}/<template_id>")
    @operation(
        "One pipeline template (built-in or custom)",
        TEMPLATES_TAG,
        answer=PipelineTemplate,
        permission="view_configuration",
        errors=NO_TEMPLATE,
    )
    async def get_template(template_id: str) -> Response:
        principal = await services.auth.manager("view_configuration")
        return json_response(await template_admin.read(services, principal, template_id))

    @bp.patch(f"{TEMPLATES}/<template_id>")
    @operation(
        "Change a custom template: the fields given",
        TEMPLATES_TAG,
        body=TemplateChange,
        answer=PipelineTemplate,
        permission="configure_providers",
        errors=CHANGE_ERRORS,
    )
    async def update_template(template_id: str) -> Response:
        return await _change(services, template_id, partial=True)

    @bp.put(f"{TEMPLATES}/<template_id>")
    @operation(
        "Replace a custom template: every field",
        TEMPLATES_TAG,
        body=TemplateSpec,
        answer=PipelineTemplate,
        permission="configure_providers",
        errors=CHANGE_ERRORS,
    )
    async def replace_template(template_id: str) -> Response:
        return await _change(services, template_id, partial=False)

    @bp.delete(f"{TEMPLATES}/<template_id>")
    @operation(
        "Delete a custom template",
        TEMPLATES_TAG,
        answer=Deleted,
        permission="configure_providers",
        errors=NO_TEMPLATE | {400: "builtin_template"},
    )
    async def delete_template(template_id: str) -> Response:
        principal = await services.auth.manager("configure_providers")
        return json_response(await template_admin.delete(services, principal, template_id))


async def _change(services: PipelinesServices, template_id: str, *, partial: bool) -> Response:
    """A PATCH (`partial`) or a PUT of a custom template."""
    principal = await services.auth.manager("configure_providers")
    changed = await template_admin.change(
        services, principal, template_id, read_object, partial=partial
    )
    return json_response(changed)
