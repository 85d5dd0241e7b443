"""Chat's optional parameters (`gateway.chat.options_input`) are read only when the body
names one: most bodies name none, and the parse passes them over at once."""

from __future__ import annotations

import pytest

from gateway.chat.options_input import OPTION_NAMES, parse_options
from gateway.platform.errors import ApiError

PLAIN = {"model": "gpt-4o-mini", "messages": [], "temperature": 0.5, "user": "u"}


def test_a_body_without_options_has_none() -> None:
    assert parse_options(PLAIN) == {}


@pytest.mark.parametrize("name", sorted(OPTION_NAMES))
def test_each_option_named_alone_is_still_validated(name: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_options(PLAIN | {name: object()})
    assert refused.value.status == 400


def test_the_options_named_are_kept() -> None:
    assert parse_options(PLAIN | {"n": 2, "store": False}) == {"n": 2, "store": False}
    with pytest.raises(ApiError):  # the cross-field check still runs
        parse_options(PLAIN | {"modalities": ["text", "audio"]})
