"""The sentence splitter that feeds speech: sentences leave as soon as they are complete."""

from __future__ import annotations

import pytest

from streams.sentences import SentenceSplitter, split_sentences


def test_a_sentence_leaves_when_the_space_after_its_end_arrives() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("Hello") == []
    assert splitter.feed(" there.") == []  # could still be "there.5" or an abbreviation
    assert splitter.feed(" How") == ["Hello there."]
    assert splitter.feed(" are you?\n") == ["How are you?"]
    assert splitter.flush() == []


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("It costs 3.5 dollars. Pay now!", ["It costs 3.5 dollars.", "Pay now!"]),
        ("Dr. Smith is in. Come by.", ["Dr. Smith is in.", "Come by."]),
        ("Ok. Yes indeed. Fine", ["Ok. Yes indeed.", "Fine"]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Line one\nLine two", ["Line one", "Line two"]),
        ("", []),
    ],
)
def test_split(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_tokens_of_any_size_give_the_same_sentences() -> None:
    text = "The first one is here. The second, e.g. this, follows! And a third?"
    whole = split_sentences(text)
    splitter = SentenceSplitter()
    pieces = [s for ch in text for s in splitter.feed(ch)] + splitter.flush()
    assert (
        pieces
        == whole
        == [
            "The first one is here.",
            "The second, e.g. this, follows!",
            "And a third?",
        ]
    )
