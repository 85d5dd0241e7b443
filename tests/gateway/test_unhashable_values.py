"""A JSON object where the API takes a name is a 400, not a 500 (found by the schemathesis
run, issue 31 point 13): a membership test against a set or a dict hashes the value, and
a dict cannot be hashed, so `{} in frozenset(...)` raised TypeError."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

HELLO = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        (
            "/v1/management/routing-rules/test",
            {"model": "gpt-4o-mini", "messages": [{"role": {}, "content": "Hi"}]},
            "messages[0].role",
        ),
        (
            "/v1/chat/completions",
            {"model": "gpt-4o-mini", "messages": HELLO, "routing_mode": {}},
            "routing_mode",
        ),
        (
            "/v1/messages",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 10,
                "messages": HELLO,
                "output_config": {"effort": {}},
            },
            "output_config.effort",
        ),
    ],
)
async def test_an_object_where_a_name_belongs_is_a_400(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], param: str
) -> None:
    answer = await http.post(path, json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_request", param)
