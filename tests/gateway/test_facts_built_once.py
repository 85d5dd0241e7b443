"""The request's facts and the chat trip are rebuilt by hand (`RequestFacts.planned`,
`Trip.decided`), not by `attrs.evolve`: every field not named must survive, including
one added to the class later."""

from __future__ import annotations

from typing import Any

import attrs

from gateway.chat.trip import Trip
from gateway.upstream.facts import RequestFacts


def _with_markers(cls: type[Any]) -> Any:
    """An instance whose every field holds a distinct marker object."""
    return cls(**{field.name: object() for field in attrs.fields(cls)})


def _unchanged(before: Any, after: Any, changed: set[str]) -> list[str]:
    return [
        field.name
        for field in attrs.fields(type(before))
        if field.name not in changed
        and getattr(after, field.name) is not getattr(before, field.name)
    ]


def test_planned_facts_keep_every_other_field() -> None:
    facts = _with_markers(RequestFacts)
    planned = facts.planned("coding", "hash")
    assert (planned.task_type, planned.prompt_hash) == ("coding", "hash")
    assert _unchanged(facts, planned, {"task_type", "prompt_hash"}) == []


def test_a_decided_trip_keeps_every_other_field() -> None:
    trip = _with_markers(Trip)
    served, attempts = object(), ({"provider": "p"},)
    decided = trip.decided(served, attempts, 2)  # type: ignore[arg-type]
    assert (decided.served, decided.attempts, decided.retries) == (served, attempts, 2)
    assert _unchanged(trip, decided, {"served", "attempts", "retries"}) == []
