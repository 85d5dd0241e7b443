"""The session's answer lifecycle as tables, pure and I/O-free (h11's style).

A session is `idle` or `responding` (at most one response at a time, as OpenAI's). What
each client event or server happening does in each state is a row of `SESSION`; a
missing row is refused with the `error` code clients tolerate
(`conversation_already_has_active_response`, `response_cancel_not_active`). A response
ends in one of the protocol's statuses by `RESPONSE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from gateway.realtime.events import RealtimeError

SessionState = Literal["idle", "responding"]
SessionEvent = Literal["create", "cancel", "barge_in", "ended"]

# (state, event) -> next state
SESSION: Mapping[tuple[SessionState, SessionEvent], SessionState] = {
    ("idle", "create"): "responding",
    ("idle", "barge_in"): "idle",  # speech with nothing to interrupt
    ("responding", "cancel"): "responding",  # until the response has ended
    ("responding", "barge_in"): "responding",
    ("responding", "ended"): "idle",
}

# (state, event) -> (error code, message) of the refusal
REFUSALS: Mapping[tuple[SessionState, SessionEvent], tuple[str, str]] = {
    ("responding", "create"): (
        "conversation_already_has_active_response",
        "Conversation already has an active response in progress.",
    ),
    ("idle", "cancel"): (
        "response_cancel_not_active",
        "Cancellation failed: no active response found.",
    ),
}

ResponseStatus = Literal["in_progress", "completed", "cancelled", "failed", "incomplete"]
ResponseEnd = Literal["finished", "cancelled", "failed", "length"]

# (status, how it ended) -> status
RESPONSE: Mapping[tuple[ResponseStatus, ResponseEnd], ResponseStatus] = {
    ("in_progress", "finished"): "completed",
    ("in_progress", "cancelled"): "cancelled",
    ("in_progress", "failed"): "failed",
    ("in_progress", "length"): "incomplete",
}


def next_state(state: SessionState, event: SessionEvent) -> SessionState:
    """The session's state after `event` (the refusal's `RealtimeError` when the event is
    not allowed in `state`)."""
    found = SESSION.get((state, event))
    if found is None:
        code, message = REFUSALS[(state, event)]
        raise RealtimeError(code, message)
    return found


def ended(status: ResponseStatus, how: ResponseEnd) -> ResponseStatus:
    return RESPONSE[(status, how)]
