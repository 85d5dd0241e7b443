"""Simulated ElevenLabs API: the catalogue and account routes, with ElevenLabs' shapes.

`GET /v1/models` (a bare JSON array), `GET /v1/voices`, `GET /v2/voices` (the paged
search the official SDK's `voices.search` calls) and `GET /v1/user`. Speech synthesis
is not simulated yet. Requests authenticate with `xi-api-key`; errors are
`{"detail": {"status", "message"}}` bodies. These routes name no model, so only faults
set for model `*` (scoped with vendor `elevenlabs`) or sent with `x-sim-fault` apply.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from providers.sim.core import Route, SimContext, SimRequest, SimResponse
from providers.sim.faults import ANY_MODEL, MODEL_LIST, apply_fault

VENDOR = "elevenlabs"
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100
_CREATED_UNIX = 1_700_000_000

# ElevenLabs' `detail.status` code and message for each status the simulator answers.
_STATUS_DETAILS: dict[int, tuple[str, str]] = {
    400: ("invalid_request", "The request is invalid."),
    401: ("invalid_api_key", "Invalid API key"),
    403: ("missing_permissions", "The API key you used is missing the required permission."),
    404: ("not_found", "The requested resource was not found."),
    422: ("invalid_parameters", "One or more parameters are invalid."),
    429: (
        "too_many_concurrent_requests",
        "Too many concurrent requests for your subscription. Please upgrade your plan.",
    ),
    500: ("internal_server_error", "An internal server error occurred."),
    503: ("system_busy", "We are experiencing high traffic. Please try again later."),
}

_MULTILINGUAL = (
    ("en", "English"), ("ja", "Japanese"), ("zh", "Chinese"), ("de", "German"),
    ("hi", "Hindi"), ("fr", "French"), ("ko", "Korean"), ("pt", "Portuguese"),
    ("it", "Italian"), ("es", "Spanish"), ("id", "Indonesian"), ("nl", "Dutch"),
    ("tr", "Turkish"), ("fil", "Filipino"), ("pl", "Polish"), ("sv", "Swedish"),
    ("bg", "Bulgarian"), ("ro", "Romanian"), ("ar", "Arabic"), ("cs", "Czech"),
    ("el", "Greek"), ("fi", "Finnish"), ("hr", "Croatian"), ("ms", "Malay"),
    ("sk", "Slovak"), ("da", "Danish"), ("ta", "Tamil"), ("uk", "Ukrainian"),
    ("ru", "Russian"),
)  # fmt: skip
_V25_EXTRA = (("hu", "Hungarian"), ("no", "Norwegian"), ("vi", "Vietnamese"))

# (model_id, name, description, languages, cost factor, max characters per request):
# the eleven_* models of the gateway's catalogue, with the figures ElevenLabs publishes.
MODELS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...], float, int], ...] = (
    (
        "eleven_multilingual_v2",
        "Eleven Multilingual v2",
        "Our most life-like, emotionally rich mode in 29 languages. Best for voice overs, "
        "audiobooks, post-production, or any other content creation needs.",
        _MULTILINGUAL,
        1.0,
        10_000,
    ),
    (
        "eleven_flash_v2_5",
        "Eleven Flash v2.5",
        "Our ultra low latency model in 32 languages. Ideal for conversational use cases.",
        _MULTILINGUAL + _V25_EXTRA,
        0.5,
        40_000,
    ),
    (
        "eleven_turbo_v2_5",
        "Eleven Turbo v2.5",
        "Our high quality, low latency model in 32 languages. Best for developer use cases "
        "where speed matters and you need non-English languages.",
        _MULTILINGUAL + _V25_EXTRA,
        0.5,
        40_000,
    ),
)

# (voice_id, name, labels, description): premade voices with ElevenLabs' own ids.
VOICES: tuple[tuple[str, str, dict[str, str], str], ...] = (
    (
        "21m00Tcm4TlvDq8ikWAM",
        "Rachel",
        {"accent": "american", "descriptive": "calm", "age": "young", "gender": "female",
         "language": "en", "use_case": "narrative_story"},
        "Matter-of-fact, personable woman. Great for narration.",
    ),
    (
        "EXAVITQu4vr4xnSDxMaL",
        "Sarah",
        {"accent": "american", "descriptive": "professional", "age": "young",
         "gender": "female", "language": "en", "use_case": "entertainment_tv"},
        "Young adult woman with a confident and warm, mature quality.",
    ),
    (
        "JBFqnCBsd6RMkjVDRZzb",
        "George",
        {"accent": "british", "descriptive": "mature", "age": "middle_aged", "gender": "male",
         "language": "en", "use_case": "narrative_story"},
        "Warm resonance that instantly captivates listeners.",
    ),
    (
        "TX3LPaxmHKxFdv7VOQHJ",
        "Liam",
        {"accent": "american", "descriptive": "confident", "age": "young", "gender": "male",
         "language": "en", "use_case": "social_media"},
        "A young adult with energy and warmth.",
    ),
    (
        "pNInz6obpgDQGcFmaJgB",
        "Adam",
        {"accent": "american", "descriptive": "deep", "age": "middle_aged", "gender": "male",
         "language": "en", "use_case": "social_media"},
        "A deep, dominant and firm voice.",
    ),
)  # fmt: skip


class _Refusal(Exception):
    """A request the simulated ElevenLabs refuses; becomes a `{"detail"}` answer."""

    def __init__(self, status: int, message: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def error_response(status: int, message: str | None = None, code: str | None = None) -> SimResponse:
    default_code, default_message = _STATUS_DETAILS.get(status, ("error", f"error {status}"))
    detail = {"status": code or default_code, "message": message or default_message}
    return SimResponse.of_json({"detail": detail}, status=status)


async def _guard(request: SimRequest, context: SimContext, model: str = ANY_MODEL) -> None:
    """Refuse a request without a key, then apply any fault for `model` (its delay, then
    its status); ElevenLabs' calls name no model in the path, so `*` faults cover them."""
    if not request.headers.get("xi-api-key", "").strip():
        raise _Refusal(
            401,
            "Neither authorization header nor xi-api-key received, please provide one.",
            "needs_authorization",
        )
    fault = context.fault(model, VENDOR)
    await apply_fault(fault, lambda f, status: _Refusal(status, f.message, f.code))


def _refused(refusal: _Refusal) -> SimResponse:
    return error_response(refusal.status, refusal.message, refusal.code)


# -- models ---------------------------------------------------------------------------------


def model_object(
    model_id: str,
    name: str,
    description: str,
    languages: Sequence[tuple[str, str]],
    cost_factor: float,
    max_characters: int,
) -> dict[str, Any]:
    return {
        "model_id": model_id,
        "name": name,
        "can_be_finetuned": True,
        "can_do_text_to_speech": True,
        "can_do_voice_conversion": False,
        "can_use_style": model_id == "eleven_multilingual_v2",
        "can_use_speaker_boost": True,
        "serves_pro_voices": False,
        "token_cost_factor": cost_factor,
        "description": description,
        "requires_alpha_access": False,
        "max_characters_request_free_user": max_characters // 4,
        "max_characters_request_subscribed_user": max_characters,
        "maximum_text_length_per_request": max_characters,
        "languages": [{"language_id": code, "name": lang} for code, lang in languages],
        "model_rates": {"character_cost_multiplier": cost_factor},
        "concurrency_group": "standard",
    }


async def list_models(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/models`: a bare JSON array; obeys the faults naming `MODEL_LIST` (the
    gateway's probes) as well as `*`."""
    try:
        await _guard(request, context, MODEL_LIST)
    except _Refusal as refusal:
        return _refused(refusal)
    return SimResponse.of_json([model_object(*model) for model in MODELS])


# -- voices ---------------------------------------------------------------------------------


def voice_object(
    voice_id: str, name: str, labels: dict[str, str], description: str
) -> dict[str, Any]:
    """A premade voice as ElevenLabs describes it; the preview URL is stable per voice."""
    preview = uuid.UUID(bytes=hashlib.sha256(voice_id.encode()).digest()[:16])
    return {
        "voice_id": voice_id,
        "name": name,
        "samples": None,
        "category": "premade",
        "fine_tuning": {"is_allowed_to_fine_tune": True, "state": {}},
        "labels": dict(labels),
        "description": description,
        "preview_url": (
            f"https://storage.googleapis.com/eleven-public-prod/premade/voices/"
            f"{voice_id}/{preview}.mp3"
        ),
        "available_for_tiers": [],
        "settings": None,
        "sharing": None,
        "high_quality_base_model_ids": [model[0] for model in MODELS],
        "verified_languages": [],
        "is_owner": False,
        "is_legacy": False,
        "is_mixed": False,
        "created_at_unix": None,
    }


def all_voices() -> list[dict[str, Any]]:
    return [voice_object(*voice) for voice in VOICES]


async def list_voices(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/voices`: every voice at once."""
    try:
        await _guard(request, context)
    except _Refusal as refusal:
        return _refused(refusal)
    return SimResponse.of_json({"voices": all_voices()})


def matches(voice: dict[str, Any], search: str) -> bool:
    """ElevenLabs searches name, description and labels, ignoring case."""
    text = " ".join([voice["name"], voice["description"], *voice["labels"].values()])
    return search.lower() in text.lower()


def _page_size(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise _Refusal(422, "page_size must be an integer") from None
    if not 0 < size <= MAX_PAGE_SIZE:
        raise _Refusal(422, f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    return size


def _offset(token: str | None) -> int:
    """Page tokens are the offset of the next voice, opaque to clients."""
    if not token:
        return 0
    if not token.isdigit():
        raise _Refusal(422, "next_page_token is invalid")
    return int(token)


async def search_voices(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v2/voices`: filtered by `search` (and `category`), paged."""
    try:
        await _guard(request, context)
        size = _page_size(request.query.get("page_size"))
        start = _offset(request.query.get("next_page_token"))
    except _Refusal as refusal:
        return _refused(refusal)
    search = request.query.get("search", "")
    category = request.query.get("category")
    found = [
        voice
        for voice in all_voices()
        if matches(voice, search) and category in (None, voice["category"])
    ]
    page = found[start : start + size]
    more = start + size < len(found)
    return SimResponse.of_json(
        {
            "voices": page,
            "has_more": more,
            "total_count": len(found),
            "next_page_token": str(start + size) if more else None,
        }
    )


# -- account --------------------------------------------------------------------------------


def subscription() -> dict[str, Any]:
    return {
        "tier": "creator",
        "character_count": 1234,
        "character_limit": 100_000,
        "max_character_limit_extension": 0,
        "max_credit_limit_extension": 0,
        "can_extend_character_limit": True,
        "allowed_to_extend_character_limit": True,
        "next_character_count_reset_unix": _CREATED_UNIX + 30 * 86_400,
        "voice_slots_used": 0,
        "professional_voice_slots_used": 0,
        "professional_voice_slots_used_in_workspace": 0,
        "voice_limit": 30,
        "max_voice_add_edits": 95,
        "voice_add_edit_counter": 0,
        "professional_voice_limit": 1,
        "can_extend_voice_limit": False,
        "can_use_instant_voice_cloning": True,
        "can_use_professional_voice_cloning": True,
        "currency": "usd",
        "current_overage": {"amount": 0, "currency": "usd"},
        "status": "active",
        "billing_period": "monthly_period",
        "character_refresh_period": "monthly_period",
    }


async def get_user(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/user`: the account and its subscription; ids derive from the key."""
    try:
        await _guard(request, context)
    except _Refusal as refusal:
        return _refused(refusal)
    key = request.headers["xi-api-key"].encode()
    user_id = hashlib.sha256(b"user\x00" + key).hexdigest()[:28]
    return SimResponse.of_json(
        {
            "user_id": user_id,
            "workspace_id": hashlib.sha256(b"workspace\x00" + key).hexdigest()[:32],
            "subscription": subscription(),
            "is_new_user": False,
            "xi_api_key": None,
            "can_use_delayed_payment_methods": False,
            "is_onboarding_completed": True,
            "is_onboarding_checklist_completed": True,
            "first_name": "Sim",
            "is_api_key_hashed": True,
            "created_at": _CREATED_UNIX,
            "seat_type": "workspace_admin",
        }
    )


ROUTES: list[Route] = [
    Route("GET", "/v1/models", list_models),
    Route("GET", "/v1/voices", list_voices),
    Route("GET", "/v2/voices", search_voices),
    Route("GET", "/v1/user", get_user),
]
