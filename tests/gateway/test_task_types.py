"""The task type of a chat request, from its last user message (`gateway.chat.tasks`).

`classify` first asks whether any rule fits at all, in one scan, and only then tries the
rules in order: the first rule that fits must still decide, and a prompt that fits none
is "chat".
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.chat.tasks import classify


@pytest.mark.parametrize(
    ("prompt", "task"),
    [
        ("Say something about benchmarks.", "chat"),
        ("hello there", "chat"),
        ("Write a poem about the sea", "creative"),
        ("Please SUMMARIZE this article", "summarization"),
        ("def f(): pass -- why does it fail?", "code"),  # code comes before reasoning
        ("Translate this JSON into French", "translation"),  # translation before extraction
        ("Extract the fields", "extraction"),
        ("Why is the sky blue?", "reasoning"),
        ("Classify the sentiment of this review", "classification"),
    ],
)
def test_the_first_rule_that_fits_decides(prompt: str, task: str) -> None:
    assert classify([{"role": "user", "content": prompt}]) == task


def test_the_last_user_message_is_read_and_the_header_wins() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "write a story"},
        {"role": "assistant", "content": "Once upon a time"},
        {"role": "user", "content": [{"type": "text", "text": "now translate it"}]},
    ]
    assert classify(messages) == "translation"
    assert classify(messages, " Legal-Review ") == "legal-review"
