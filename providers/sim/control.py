"""The simulator's own control API, mounted under `/_sim` for every vendor alike.

Tests and benchmarks drive a running simulator over HTTP (it may live in another
process): switch faults on and off, read and reset the counters, change the pacing, read
the last vendor requests received (their bodies as sent: the wire form of a parameter).
"""

from __future__ import annotations

import json
from collections import deque
from typing import TYPE_CHECKING, Any

import attrs

from providers.sim.core import Route, SimContext, SimRequest, SimResponse
from providers.sim.faults import FaultError, fault_from_json, fault_to_json

if TYPE_CHECKING:
    from providers.sim.server import SimServer

_CONFIG_FIELDS = {"ttft_ms": float, "tokens_per_second": float, "default_max_tokens": int}


def control_routes(server: SimServer) -> list[Route]:
    """The `/_sim` routes acting on `server`."""

    async def add_fault(request: SimRequest, _: SimContext) -> SimResponse:
        try:
            fault = fault_from_json(_json_body(request))
        except FaultError as exc:
            return _bad_request(str(exc))
        server.faults.add(fault)
        return SimResponse.of_json(fault_to_json(fault), status=201)

    async def list_faults(_: SimRequest, __: SimContext) -> SimResponse:
        return SimResponse.of_json({"faults": [fault_to_json(f) for f in server.faults.active()]})

    async def clear_faults(_: SimRequest, __: SimContext) -> SimResponse:
        cleared = len(server.faults.active())
        server.faults.clear()
        return SimResponse.of_json({"cleared": cleared})

    async def get_stats(_: SimRequest, __: SimContext) -> SimResponse:
        return SimResponse.of_json(server.stats.to_json())

    async def reset_stats(_: SimRequest, __: SimContext) -> SimResponse:
        server.stats.reset()
        return SimResponse.of_json(server.stats.to_json())

    async def get_requests(_: SimRequest, __: SimContext) -> SimResponse:
        return SimResponse.of_json({"requests": [r.to_json() for r in server.requests]})

    async def clear_requests(_: SimRequest, __: SimContext) -> SimResponse:
        cleared = len(server.requests)
        server.requests.clear()
        return SimResponse.of_json({"cleared": cleared})

    async def get_config(_: SimRequest, __: SimContext) -> SimResponse:
        return SimResponse.of_json(attrs.asdict(server.config))

    async def set_config(request: SimRequest, _: SimContext) -> SimResponse:
        try:
            changes = _config_changes(_json_body(request))
        except FaultError as exc:
            return _bad_request(str(exc))
        server.config = attrs.evolve(server.config, **changes)
        return SimResponse.of_json(attrs.asdict(server.config))

    return [
        *_script_routes("/replies", server.replies),
        *_script_routes("/transcripts", server.transcripts),
        Route("POST", "/faults", add_fault),
        Route("GET", "/faults", list_faults),
        Route("DELETE", "/faults", clear_faults),
        Route("GET", "/stats", get_stats),
        Route("DELETE", "/stats", reset_stats),
        Route("GET", "/requests", get_requests),
        Route("DELETE", "/requests", clear_requests),
        Route("GET", "/config", get_config),
        Route("POST", "/config", set_config),
    ]


def _script_routes(path: str, script: deque[str]) -> list[Route]:
    """POST `path` queues texts for the next answers to say (`texts`), DELETE forgets
    those not said yet: what scripted replies and scripted transcripts share."""

    async def add(request: SimRequest, _: SimContext) -> SimResponse:
        try:
            texts = _texts(_json_body(request))
        except FaultError as exc:
            return _bad_request(str(exc))
        script.extend(texts)
        return SimResponse.of_json({"queued": len(script)}, status=201)

    async def clear(_: SimRequest, __: SimContext) -> SimResponse:
        cleared = len(script)
        script.clear()
        return SimResponse.of_json({"cleared": cleared})

    return [Route("POST", path, add), Route("DELETE", path, clear)]


def _json_body(request: SimRequest) -> Any:
    try:
        return request.json()
    except ValueError as exc:
        raise FaultError(f"body is not JSON: {exc}") from None


def _texts(payload: Any) -> list[str]:
    """`{"texts": [...]}`: what the next transcriptions hear, in order."""
    texts = payload.get("texts") if isinstance(payload, dict) else None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise FaultError("'texts' is an array of strings")
    return texts


def _config_changes(payload: Any) -> dict[str, Any]:
    """The config fields to change, checked: known names, numbers, not negative."""
    if not isinstance(payload, dict):
        raise FaultError("config is a JSON object")
    changes: dict[str, Any] = {}
    for name, value in payload.items():
        kind = _CONFIG_FIELDS.get(name)
        if kind is None:
            raise FaultError(f"unknown config field: {name}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise FaultError(f"'{name}' must be a number >= 0")
        changes[name] = kind(value)
    return changes


def _bad_request(message: str) -> SimResponse:
    body = {"error": {"message": message, "type": "invalid_request_error"}}
    return SimResponse(400, json.dumps(body).encode())
