"""A chat request's plan is made once per shape of request (`gateway.chat.plan_cache`,
issue 37): what the routed chain narrows to is kept, but a request whose size would
narrow it, a change of the key's models or of the providers, and every refusal are
planned again."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.chat.model_fit import fitted
from gateway.chat.plan_cache import PlanCache
from gateway.platform.errors import ApiError
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan, plan_of
from gateway.upstream.resolve import Resolution, target_of
from providers.catalog import load_catalog
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY

KEYS = "/v1/management/api-keys"
PROVIDERS = "/v1/management/providers"
HELLO = [{"role": "user", "content": "Hello there"}]


def _resolution(*models: str) -> Resolution:
    catalog = load_catalog()
    targets = [target_of(info) for m in models if (info := catalog.model(m)) is not None]
    return Resolution(targets[0], tuple(targets[1:]), "balanced", "test")


class Narrowing:
    """`fitted` for one prompt, counting its calls."""

    def __init__(self, prompt: int, max_tokens: int | None = None) -> None:
        self.prompt, self.max_tokens, self.calls = prompt, max_tokens, 0

    def __call__(self, resolution: Resolution) -> Resolution:
        self.calls += 1
        return fitted(resolution, prompt=self.prompt, max_tokens=self.max_tokens, flexible=False)


def _planned(cache: PlanCache, base: Resolution, narrowing: Narrowing) -> Resolution:
    return cache.planned(base, ("shape",), narrowing.prompt, narrowing.max_tokens, narrowing)


def test_a_shape_within_every_candidates_window_is_planned_once() -> None:
    cache, base = PlanCache(), _resolution("gpt-4.1", "gpt-4o-mini", "claude-haiku-4-5")
    first = _planned(cache, base, Narrowing(prompt=10))
    again = Narrowing(prompt=20, max_tokens=1_000)
    assert _planned(cache, base, again) is first
    assert again.calls == 0
    assert cache.planned(base, ("another",), 10, None, again) is not None
    assert again.calls == 1  # another shape: planned for itself


def test_a_request_over_a_fallbacks_window_is_narrowed_for_itself_and_not_kept() -> None:
    cache, base = PlanCache(), _resolution("gpt-4.1", "gpt-4o-mini", "claude-haiku-4-5")
    _planned(cache, base, Narrowing(prompt=10))
    large = Narrowing(prompt=150_000)  # over gpt-4o-mini's 128,000, within the others'
    narrowed = _planned(cache, base, large)
    assert [t.model_id for t in narrowed.alternatives] == ["claude-haiku-4-5"]
    assert large.calls == 1
    too_long = Narrowing(prompt=10, max_tokens=20_000)  # over gpt-4o-mini's answer bound
    assert [t.model_id for t in _planned(cache, base, too_long).alternatives] == [
        "claude-haiku-4-5"
    ]
    small = Narrowing(prompt=10)
    assert [t.model_id for t in _planned(cache, base, small).alternatives] == [
        "gpt-4o-mini",
        "claude-haiku-4-5",
    ]
    assert small.calls == 0  # the shape's plan was kept, not the large requests'


def test_a_refusal_is_raised_every_time_and_a_new_routing_is_planned_again() -> None:
    cache = PlanCache()
    base = _resolution("gpt-4o-mini")
    over = Narrowing(prompt=10, max_tokens=20_000)
    for _ in range(2):
        with pytest.raises(ApiError):
            _planned(cache, base, over)
    assert over.calls == 2 and len(cache) == 0
    _planned(cache, base, Narrowing(prompt=10))
    rerouted = Narrowing(prompt=10)
    _planned(cache, _resolution("gpt-4o-mini"), rerouted)  # another routed resolution
    assert rerouted.calls == 1


async def _chat(gateway: RunningGateway, key: str, **extra: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        body = {"model": "gpt-4o-mini", "messages": HELLO, "service": {"cache": "skip"}}
        headers = {"authorization": f"Bearer {key}"}
        return await raw.post("/v1/chat/completions", json=body | extra, headers=headers)


async def test_a_kept_plan_follows_the_keys_models_and_the_prompts_size(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = (await http.post(KEYS, json={"name": "t", "allowed_models": ["gpt-4o*"]})).json()
    assert (await _chat(gateway, created["key"])).status_code == 200
    assert (await _chat(gateway, created["key"], user="someone")).status_code == 200
    plans = gateway.state.chat.plans
    kept = len(plans)
    assert kept >= 1
    assert (await _chat(gateway, created["key"])).status_code == 200
    assert len(plans) == kept  # the same shape: the plan was reused
    huge = [{"role": "user", "content": "word " * 110_000}]
    refused = await _chat(gateway, created["key"], messages=huge)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "context_length_exceeded"
    changed = await http.patch(f"{KEYS}/{created['id']}", json={"allowed_models": ["gpt-4.1"]})
    assert changed.status_code == 200, changed.text
    refused = await _chat(gateway, created["key"])
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "model_not_allowed"


async def test_a_kept_plan_follows_the_workspaces_providers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    served = await _chat(gateway, ADMIN_KEY)
    assert served.headers["x-service-model-used"] == "openai/gpt-4o-mini"
    assert (await http.post(f"{PROVIDERS}/openai/disable")).status_code == 200
    moved = await _chat(gateway, ADMIN_KEY)
    assert moved.status_code == 200, moved.text
    assert not moved.headers["x-service-model-used"].startswith("openai/")


def test_the_race_plan_of_a_kept_plan_is_made_once_and_only_for_it() -> None:
    cache, base = PlanCache(), _resolution("gpt-4.1", "gpt-4o-mini")
    planned = _planned(cache, base, Narrowing(prompt=10))
    made: list[Resolution] = []

    def make(resolution: Resolution) -> Plan:
        made.append(resolution)
        return plan_of([resolution.target], capability="chat", service=ServiceOptions())

    first = cache.chain(planned, lambda: make(planned))
    assert cache.chain(planned, lambda: make(planned)) is first
    other = _resolution("gpt-4.1", "gpt-4o-mini")  # equal, but not the kept object
    assert cache.chain(other, lambda: make(other)) is not first
    assert made == [planned, other]


async def test_a_requests_own_fallbacks_are_raced_beside_a_kept_plan(
    gateway: RunningGateway,
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    kept = await _chat(gateway, ADMIN_KEY)  # the kept plan's chain: the catalog's fallback
    assert kept.status_code == 200, kept.text
    named = await _chat(gateway, ADMIN_KEY, service={"cache": "skip", "fallbacks": ["gpt-4.1"]})
    assert named.status_code == 200, named.text
    assert named.headers["x-service-model-used"] == "openai/gpt-4.1"
