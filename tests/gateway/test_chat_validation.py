"""What `service` may ask of the gateway's patience: every request ends in bounded time."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.chat.input import parse_chat_body
from gateway.platform.errors import ApiError
from gateway.upstream.options import MAX_QUEUE_WAIT_MS, MAX_RETRY_ATTEMPTS


def service_of(service: dict[str, Any]) -> Any:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    return parse_chat_body(body | {"service": service}).service


def test_a_queue_wait_is_taken_as_asked_up_to_the_ceiling() -> None:
    asked = {"strategy": "queue", "max_wait_ms": 5_000}
    assert service_of({"rate_limit_handling": asked}).max_wait_ms == 5_000
    longer = asked | {"max_wait_ms": 10**9}
    assert service_of({"rate_limit_handling": longer}).max_wait_ms == MAX_QUEUE_WAIT_MS


def test_a_whole_number_written_with_a_point_is_an_integer() -> None:
    """JSON, and the document's schema, count 5000.0 as an integer: it was a 400."""
    asked = {"strategy": "queue", "max_wait_ms": 5_000.0}
    assert service_of({"rate_limit_handling": asked}).max_wait_ms == 5_000


def test_retries_are_taken_as_asked_up_to_the_ceiling() -> None:
    assert service_of({"retry": {"max_attempts": 3}}).retry_max_attempts == 3
    many = {"retry": {"max_attempts": 1_000_000}}
    assert service_of(many).retry_max_attempts == MAX_RETRY_ATTEMPTS


@pytest.mark.parametrize("value", [-1, 1.5, "10", True])
def test_a_bad_wait_is_still_a_400(value: Any) -> None:
    with pytest.raises(ApiError) as caught:
        service_of({"rate_limit_handling": {"strategy": "queue", "max_wait_ms": value}})
    assert caught.value.status == 400


@pytest.mark.parametrize("field", ["n", "top_logprobs"])
def test_an_integral_number_is_an_integer_as_the_document_says(field: str) -> None:
    """JSON Schema's `integer` (the document's, and the declared shape's) takes 2.0; the
    chat parser refused it with a shape code (found by the schemathesis run over the
    routing rules' test body, which is a chat body)."""
    extra = {"logprobs": True} if field == "top_logprobs" else {}
    params = parse_chat_body(
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], field: 2.0} | extra
    )
    assert getattr(params.request, field) == 2
