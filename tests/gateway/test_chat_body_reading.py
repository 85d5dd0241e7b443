"""Chat's body is read field by field only where the body names a field (issue 37): the
fields it leaves out keep their defaults, and the first problem reported does not depend
on the order the client wrote its fields in."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.chat.input import parse_chat_body
from gateway.platform.errors import ApiError
from gateway.upstream.options import ServiceOptions

HELLO = [{"role": "user", "content": "Hello"}]


def _refused(body: dict[str, Any]) -> str | None:
    with pytest.raises(ApiError) as caught:
        parse_chat_body(body)
    param: str | None = caught.value.extra.get("param")
    return param


def test_the_first_problem_reported_follows_the_checks_order_not_the_bodys() -> None:
    wrong = {"user": 5, "seed": "x", "temperature": 9, "max_completion_tokens": 0}
    forwards = {"model": "m", "messages": HELLO, **wrong}
    backwards = {"model": "m", "messages": HELLO, **dict(reversed(wrong.items()))}
    assert _refused(forwards) == _refused(backwards) == "temperature"
    del forwards["temperature"], backwards["temperature"]
    assert _refused(forwards) == _refused(backwards) == "max_completion_tokens"


def test_absent_and_null_fields_keep_their_defaults() -> None:
    plain = parse_chat_body({"model": "m", "messages": HELLO})
    nulls = parse_chat_body(
        {"model": "m", "messages": HELLO, "temperature": None, "stop": None, "service": None}
    )
    assert plain == nulls
    assert plain.request.tools is None and plain.request.max_tokens is None
    assert plain.service == ServiceOptions() and not plain.stream


def test_the_fields_named_are_read_into_the_request() -> None:
    params = parse_chat_body(
        {
            "model": "m",
            "messages": HELLO,
            "max_completion_tokens": 7,
            "stop": "END",
            "top_k": 3,
            "user": "u",
            "service": {"cache": "skip"},
            "stream": True,
        }
    )
    request = params.request
    assert (request.max_tokens, request.stop, request.top_k, request.user) == (7, ("END",), 3, "u")
    assert params.service.cache_skip and params.stream
