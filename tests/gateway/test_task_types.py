"""The task type of a chat request, from its last user message (`gateway.chat.tasks`).

`classify` first asks whether any rule fits at all, in one scan, and only then tries the
rules in order: the first rule that fits must still decide, and a prompt that fits none
is "chat".
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gateway.chat.tasks import _ANY_RULE, _RULES, classify


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


# The rules' own words, near misses and letters whose case folds oddly (Kelvin sign, dotted I).
RULE_WORDS = (
    "def function class code python sql bug summary tl;dr tldr key points translate"
    " extract parse json field fields classify categorise categorize sentiment label"
    " prove step by step calculate solve why poem story write a slogan lyrics ``` ``"
    " codes classes undef xcode \u00dcber \u0130stanbul \u212aey \u00df"
)


def test_the_one_scan_fits_exactly_where_some_rule_fits() -> None:
    """The one-scan pattern is built from the rules (the word-start alternatives behind
    one `\\b` and a look at the first letter): on prompts made of the rules' own words,
    their near misses, cases and joints, it fits exactly where one of the rules fits."""
    pieces = RULE_WORDS.split(" ")
    rng = random.Random(37)
    for _ in range(5000):
        joint = rng.choice(["", " ", "_", "-", "\n", "."])
        prompt = joint.join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        prompt = prompt.upper() if rng.random() < 0.3 else prompt
        expected = any(pattern.search(prompt) for _, pattern in _RULES)
        assert bool(_ANY_RULE.search(prompt)) is expected, prompt
