"""Whether a chat request fits the model it is routed to: its `max_tokens` within the
model's `max_output_tokens`, its prompt and answer within the context window (pure).

Vendors refuse such requests with a 400, but only after the request has waited its turn
and often after minutes; the catalog knows both bounds, so planning refuses them at once
with the spec's errors. Fallbacks that would not fit are dropped from the chain, and
`auto` takes the best candidate that fits.

The prompt is estimated (about four characters a token); an image counts as a fixed
allowance rather than as the size of its encoded bytes, which say nothing of its tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from gateway.platform.errors import ApiError, invalid_request
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.resolve import Resolution, Target, unsupported_parameter
from providers.catalog import ModelInfo
from providers.chat_support import Asked, Refusal, asked_parameters, refusal
from providers.types import ChatRequest

IMAGE_TOKENS = 1_000  # above a high-detail 1024x1024 image on the vendors' own scales
MESSAGE_OVERHEAD_TOKENS = 4


def prompt_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> int:
    """The estimated prompt: text, tool calls and tool schemas, and each image's allowance."""
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + _content_tokens(message.get("content"))
        for call in message.get("tool_calls") or ():
            total += estimate_tokens(json.dumps(call))
    if tools:
        total += estimate_tokens(json.dumps(list(tools)))
    return total


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_tokens(content)
    total = 0
    for part in content if isinstance(content, list) else ():
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            total += estimate_tokens(str(part.get("text") or ""))
        elif kind is not None:
            total += IMAGE_TOKENS  # images, audio, files: a fixed allowance each
    return total


PART_NEEDS: Mapping[str, str] = {
    "image_url": "vision",
    "file": "file_input",
    "input_audio": "audio_input",
}
"""The capability a model needs to read each kind of content part."""


def needed_capabilities(messages: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """What the model must be able to do beyond chat: `vision` for an image part,
    `file_input` for a document, `audio_input` for audio."""
    needs: set[str] = set()
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            needs.update(
                PART_NEEDS[part["type"]]
                for part in content
                if isinstance(part, Mapping) and part.get("type") in PART_NEEDS
            )
    return frozenset(needs) if needs else NOTHING


def first_part_needing(
    messages: Sequence[Mapping[str, Any]], capability: str
) -> tuple[str, str] | None:
    """(path, type) of the first content part that needs `capability`, as the client
    wrote it (`messages[0].content[1]`), or None."""
    for i, message in enumerate(messages):
        content = message.get("content")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind is not None and PART_NEEDS.get(kind) == capability:
                return f"messages[{i}].content[{j}]", kind
    return None


VISION = frozenset({"vision"})
PART_CAPABILITIES = frozenset({"file_input", "audio_input"})
JSON_MODE = frozenset({"json_mode"})
NOTHING: frozenset[str] = frozenset()


def json_needs(response_format: Mapping[str, Any] | None) -> frozenset[str]:
    """`json_mode` when the request asks for JSON (`json_object` or `json_schema`)."""
    kind = (response_format or {}).get("type")
    return JSON_MODE if kind in ("json_object", "json_schema") else NOTHING


def fallbacks_with(resolution: Resolution, needs: frozenset[str]) -> Resolution:
    """The resolution with only the fallbacks whose model can do what `needs` names (a
    model without JSON mode would answer a JSON request in prose); its target is kept
    as named (an adapter with no JSON mode drops the format, as its docs say)."""
    kept = tuple(t for t in resolution.alternatives if fits(t.info, 0, None, needs))
    if kept == resolution.alternatives:
        return resolution
    return attrs.evolve(resolution, alternatives=kept)


def fits(
    info: ModelInfo | None, prompt: int, max_tokens: int | None, needs: frozenset[str] = NOTHING
) -> bool:
    """Whether the model can take this prompt (and see its images) and write `max_tokens`;
    a model the catalog does not know (a pass-through id) is given the benefit of the
    doubt."""
    if info is None:
        return True
    if needs and not needs <= set(info.capabilities):
        return False
    if max_tokens is not None and 0 < info.max_output_tokens < max_tokens:
        return False
    return not 0 < info.context_window < prompt + (max_tokens or 0)


def fitted(
    resolution: Resolution,
    *,
    prompt: int,
    max_tokens: int | None,
    flexible: bool,
    needs: frozenset[str] = NOTHING,
    messages: Sequence[Mapping[str, Any]] = (),
) -> Resolution:
    """The resolution with only the targets that fit; 400 when its target does not.

    With `flexible` (the client asked for `auto`), the first candidate that fits becomes
    the target instead; the error names the routed target when none does. A model
    without a capability the request `needs` (an image for one that cannot see) does not
    fit: `auto` chose text-only models for images, and fallbacks would fail on them.
    """
    return narrowed(
        resolution,
        lambda t: fits(t.info, prompt, max_tokens, needs),
        flexible=flexible,
        refusal=lambda: misfit(resolution.target, prompt, max_tokens, needs, messages),
        why="the request does not fit the others",
    )


def narrowed(
    resolution: Resolution,
    keep: Callable[[Target], bool],
    *,
    flexible: bool,
    refusal: Callable[[], ApiError],
    why: str,
) -> Resolution:
    """The resolution with only the targets `keep` accepts. Its target must be kept,
    unless `flexible` (`auto`): then the first kept candidate becomes the target and the
    reasoning says `why`. Nothing kept, or an inflexible target dropped: `refusal()`."""
    chain = [resolution.target, *resolution.alternatives]
    kept = [t for t in chain if keep(t)]
    # `kept` holds the very objects of `chain`, in order: identity and length say what
    # equality said, without comparing the targets' catalog entries field by field.
    if not kept or (kept[0] is not resolution.target and not flexible):
        raise refusal()
    if len(kept) == len(chain):
        return resolution
    reasoning = resolution.reasoning
    if kept[0] is not resolution.target:
        reasoning += f"; {kept[0].model_id} instead, as {why}"
    return attrs.evolve(
        resolution, target=kept[0], alternatives=tuple(kept[1:]), reasoning=reasoning
    )


def misfit(
    target: Target,
    prompt: int,
    max_tokens: int | None,
    needs: frozenset[str] = NOTHING,
    messages: Sequence[Mapping[str, Any]] = (),
) -> ApiError:
    """The error for a request `target`'s model cannot take."""
    info = target.info
    assert info is not None  # a target without catalog facts always fits
    if not VISION & needs <= set(info.capabilities):
        return invalid_request(
            f"The model '{info.id}' cannot read images; name a model with 'vision' (see "
            "/v1/models?capability=vision) or use 'auto'.",
            param="messages",
            value=None,
        )
    unread = sorted(needs & PART_CAPABILITIES - set(info.capabilities))
    if unread:
        return _unreadable_part(target, unread[0], messages)
    if not needs <= set(info.capabilities):
        return invalid_request(
            f"No model that can be routed to has JSON mode for this request (the routed "
            f"'{info.id}' has none); see /v1/models?capability=json_mode.",
            param="response_format",
            value=None,
        )
    if max_tokens is not None and 0 < info.max_output_tokens < max_tokens:
        return invalid_request(
            f"'max_tokens' is {max_tokens}, but '{info.id}' writes at most "
            f"{info.max_output_tokens} tokens in one answer.",
            param="max_tokens",
            value=max_tokens,
        )
    requested = prompt + (max_tokens or 0)
    return ApiError(
        400,
        "context_length_exceeded",
        f"The model '{info.id}' takes at most {info.context_window} tokens, prompt and "
        f"answer together; this request needs about {requested} ({prompt} in the messages"
        f" and tools, {max_tokens or 0} for the answer). Shorten the messages or lower "
        "'max_tokens'.",
        provider=info.provider,
        model=info.id,
        max_tokens=info.context_window,
        requested_tokens=requested,
    )


def _unreadable_part(
    target: Target, capability: str, messages: Sequence[Mapping[str, Any]]
) -> ApiError:
    """`unsupported_parameter` naming the first part the model cannot read (a document
    or audio): its path, its type and where to find a model that reads it."""
    path, kind = first_part_needing(messages, capability) or ("messages", capability)
    what = "cannot read documents ('file' parts)"
    if capability == "audio_input":
        what = "cannot hear audio ('input_audio' parts)"
    return ApiError(
        400,
        "unsupported_parameter",
        f"'{path}' cannot be honoured by the model '{target.model_id}': it {what}; name a "
        f"model with '{capability}' (see /v1/models?capability={capability}) or use 'auto'.",
        provider=target.provider_id,
        model=target.model_id,
        param=path,
        value=kind,
    )


# -- parameters ----------------------------------------------------------------------------


def parameter_refusal(
    target: Target, request: ChatRequest, asking: Asked | None = None
) -> Refusal | None:
    """What `request` asks that `target`'s model cannot honour (None: everything). A model
    the catalog does not describe (a pass-through id) is left to its vendor. `asking`:
    the request's `asked_parameters`, read once for all the targets."""
    info = target.info
    model = None if info is None or info.passthrough else info
    return refusal(target.provider_id, request, model, asking)


def honoured(
    resolution: Resolution, request: ChatRequest, *, flexible: bool, asking: Asked | None = None
) -> Resolution:
    """The resolution with only the targets that can honour every parameter asked.

    A fallback that cannot is skipped (a request for log-probabilities must not fall back
    to a vendor that drops them); `auto` takes the first candidate that can; the model
    the client named, when it cannot, is a 400 naming the parameter and the reason.
    `asking`: the request's `asked_parameters`, when the caller has read them.
    """
    if asking is None:
        asking = asked_parameters(request)
    if not asking:  # nothing any model could refuse (most requests)
        return resolution
    return narrowed(
        resolution,
        lambda t: parameter_refusal(t, request, asking) is None,
        flexible=flexible,
        refusal=lambda: refused_parameter(resolution.target, request),
        why="the others cannot honour the request's parameters",
    )


def honouring(targets: Sequence[Target], request: ChatRequest) -> list[Target]:
    """`targets` without those that cannot honour the request's parameters."""
    asking = asked_parameters(request)
    if not asking:
        return list(targets)
    return [t for t in targets if parameter_refusal(t, request, asking) is None]


def refused_parameter(target: Target, request: ChatRequest) -> ApiError:
    found = parameter_refusal(target, request)
    assert found is not None  # only called for a target that refuses
    return unsupported_parameter(target, found)
