"""The catalog against the vendors' own lists: every chat model id the installed `openai`
and `anthropic` SDKs name is a catalog model, an alias of one, or a retired id whose 404
says when it went (issue 36 point 4). The shutdown dates are read from the SDKs' own
deprecation notes, so a newer SDK that moves or adds one fails here until the catalog
follows."""

from __future__ import annotations

import inspect
import re
from datetime import datetime
from typing import Any, get_args

import pytest
from anthropic._data import DEPRECATED_MODELS
from anthropic.types import model_param
from openai.types.shared import chat_model, responses_model

from providers.catalog import Catalog, load_catalog

# The day the catalog was last brought up to the vendors' lists (SOURCES.md). Fixed, not
# today: a shutdown date passing later is the next review's finding, not a flaky test.
REVIEWED = "2026-11-27"
# Audio-output chat models are the audio family's (gateway/audio), listed there.
AUDIO = re.compile(r"^gpt-(4o-(mini-)?)?audio")
NOT_SERVED = "Not a supported model ID"


def literal_ids(alias: Any) -> list[str]:
    """The string literals of a `Literal[...]` or `Union[Literal[...], str]` type alias."""
    found: list[str] = []
    for arg in get_args(alias):
        if isinstance(arg, str):
            found.append(arg)
        else:
            found.extend(literal_ids(arg))
    return found


def openai_shutdowns() -> dict[str, str | None]:
    """The ChatModel docstring's "Deprecated values" entries: id -> shutdown date, None
    for an id OpenAI says it does not serve."""
    text = inspect.getsource(chat_model).split('"""Deprecated values:', 1)[1]
    shutdowns: dict[str, str | None] = {}
    for entry in re.split(r"\n- ", text):
        names, _, rest = entry.partition(":")
        flat = " ".join(rest.split())
        date = re.search(r"Announced shutdown date: (\d{4}-\d{2}-\d{2})", flat)
        if date is None and NOT_SERVED not in flat:
            continue
        for name in re.findall(r'"([^"]+)"', names):
            shutdowns[name] = date.group(1) if date else None
    return shutdowns


def anthropic_shutdowns() -> dict[str, str]:
    """`anthropic._data.DEPRECATED_MODELS` ("June 30th, 2026") as ISO dates."""
    return {
        name: datetime.strptime(re.sub(r"(\d)(st|nd|rd|th)", r"\1", day), "%B %d, %Y")
        .date()
        .isoformat()
        for name, day in DEPRECATED_MODELS.items()
    }


OPENAI_IDS = [m for m in literal_ids(chat_model.ChatModel) if not AUDIO.match(m)]
# The ids OpenAI serves only through /v1/responses (`ResponsesModel` less `ChatModel`).
RESPONSES_IDS = [
    m
    for m in literal_ids(responses_model.ResponsesModel)
    if m not in set(literal_ids(chat_model.ChatModel))
]
# Their shutdowns, which the SDK does not note: OpenAI's deprecations page (SOURCES.md,
# "OpenAI's Responses-only models"): the 2026-04-22 notice (shut down 2026-07-23) and
# the 2026-06-11 one (the o3-pro and gpt-5-pro snapshots, 2026-12-11).
RESPONSES_SHUTDOWNS = {
    **dict.fromkeys(
        (
            "computer-use-preview",
            "computer-use-preview-2025-03-11",
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "o3-deep-research",
            "o3-deep-research-2025-06-26",
            "o4-mini-deep-research",
            "o4-mini-deep-research-2025-06-26",
        ),
        "2026-07-23",
    ),
    **dict.fromkeys(
        ("o3-pro", "o3-pro-2025-06-10", "gpt-5-pro", "gpt-5-pro-2025-10-06"), "2026-12-11"
    ),
}
ANTHROPIC_IDS = literal_ids(model_param.ModelParam)
SHUTDOWNS: dict[str, str | None] = {**openai_shutdowns(), **anthropic_shutdowns()}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_the_sdk_lists_are_read() -> None:
    """The parsing above found what the SDKs hold (a format change must not pass as 'no
    ids')."""
    assert len(OPENAI_IDS) >= 80 and "gpt-6-astra" in OPENAI_IDS
    assert len(ANTHROPIC_IDS) >= 20 and "claude-opus-5" in ANTHROPIC_IDS
    assert SHUTDOWNS["gpt-3.5-turbo"] == "2026-10-23"
    assert SHUTDOWNS["gpt-5.1-mini"] is None
    assert SHUTDOWNS["claude-mythos-preview"] == "2026-06-30"


@pytest.mark.parametrize(
    ("name", "provider"),
    [(m, "openai") for m in OPENAI_IDS] + [(m, "anthropic") for m in ANTHROPIC_IDS],
)
def test_every_sdk_id_is_served_aliased_or_retired(
    catalog: Catalog, name: str, provider: str
) -> None:
    served, retired = catalog.model(name), catalog.retired(name)
    assert (served is None) != (retired is None), name
    shutdown = SHUTDOWNS.get(name, "")
    if shutdown is None or (shutdown and shutdown < REVIEWED):  # gone: a 404 with the date
        assert retired is not None and retired.provider == provider, name
        assert retired.retired_on == shutdown
        assert catalog.model(retired.replacement) is not None
        return
    assert served is not None and served.provider == provider, name
    assert catalog.model(f"{provider}/{name}") is served
    if shutdown:  # a future shutdown: deprecated, with that date
        assert served.deprecation is not None, name
        assert served.deprecation.sunset_date == shutdown
    else:
        assert served.status in ("available", "beta"), name


def test_the_responses_list_is_read() -> None:
    assert len(RESPONSES_IDS) == 23 and "o3-pro" in RESPONSES_IDS and "gpt-4o" not in RESPONSES_IDS


@pytest.mark.parametrize("name", RESPONSES_IDS)
def test_every_responses_only_id_is_served_there_or_retired(catalog: Catalog, name: str) -> None:
    """Served through `/v1/responses` only (OpenAI refuses them on chat completions),
    deprecated with OpenAI's date, or retired with it."""
    served, retired = catalog.model(name), catalog.retired(name)
    assert (served is None) != (retired is None), name
    shutdown = RESPONSES_SHUTDOWNS.get(name)
    if shutdown is not None and shutdown < REVIEWED:
        assert retired is not None and retired.provider == "openai"
        assert retired.retired_on == shutdown
        assert catalog.model(retired.replacement) is not None
        return
    assert served is not None and served.provider == "openai", name
    assert catalog.model(f"openai/{name}") is served
    assert served.endpoints == ("responses",)
    assert served.served_on("responses") and not served.served_on("chat_completions")
    if shutdown:
        assert served.deprecation is not None and served.deprecation.sunset_date == shutdown
    else:
        assert served.status in ("available", "beta"), name


def test_a_dated_snapshot_is_its_models_alias(catalog: Catalog) -> None:
    for name, model_id in [
        ("gpt-4o-2024-11-20", "gpt-4o"),
        ("gpt-5.2-2025-12-11", "gpt-5.2"),
        ("gpt-5.2-pro-2025-12-11", "gpt-5.2-pro"),
        ("gpt-5.1-2025-11-13", "gpt-5.1"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
    ]:
        found = catalog.model(name)
        assert found is not None and found.id == model_id and name in found.aliases


def test_retired_ids_leave_no_trace_in_routing(catalog: Catalog) -> None:
    """No fallback chain points at a retired, deprecated or limited-release model (a
    fallback must outlive the model it stands in for), every deprecation names a served
    replacement, and auto routing (which takes `available` models only) never sees the
    limited-release Mythos models."""
    for m in catalog.models():
        for target in m.fallback_chain:
            found = catalog.model(target)
            assert found is not None and found.status == "available", (m.id, target)
        if m.deprecation is not None:
            assert catalog.model(m.deprecation.replacement) is not None
    restricted = {m.id for m in catalog.models(status="beta", capability="chat")}
    assert {"claude-mythos-5", "claude-mythos-5-1", "claude-mythos-5-2"} <= restricted


def test_a_retired_id_is_not_passed_through(catalog: Catalog) -> None:
    """An operator allowing `openai/*` does not revive a shut-down id as a pass-through."""
    allowing = catalog.with_passthrough("openai/*")
    assert allowing.passthrough("gpt-4-32k", "chat") is None
    assert allowing.passthrough("gpt-9-preview", "chat") is not None


def test_a_retirement_message_names_the_date_and_the_replacement(catalog: Catalog) -> None:
    gone = catalog.retired("openai/gpt-4-32k")
    assert gone is not None
    assert gone.message() == (
        "The model 'gpt-4-32k' was retired by its provider on 2025-06-06; "
        "use 'gpt-6.1-sol' instead."
    )
    assert catalog.retired("anthropic/gpt-4-32k") is None  # another provider's prefix
