"""Query and form numbers of the files and OCR endpoints: what `int` refuses is a 400,
never a 500, and a page range is not expanded before the document is read (found
reading the input code while documenting these endpoints)."""

from __future__ import annotations

import pytest

from gateway.files.input import list_query, page_window, service
from gateway.ocr.input import parse_fields, select_pages
from gateway.platform.errors import ApiError


@pytest.mark.parametrize("value", ["²", "٣", "1²", "-1", "", " 5"])
def test_a_limit_that_is_not_ascii_digits_is_a_400(value: str) -> None:
    with pytest.raises(ApiError) as raised:
        list_query("ws", {"limit": value})
    assert raised.value.status == 400
    with pytest.raises(ApiError):
        page_window({"limit": value})


@pytest.mark.parametrize("value", ["²", "٣", "-1", "x"])
def test_an_offset_that_is_not_ascii_digits_is_a_400(value: str) -> None:
    with pytest.raises(ApiError) as raised:
        page_window({"offset": value})
    assert raised.value.status == 400


def test_ascii_digits_are_still_read() -> None:
    assert page_window({"limit": "7", "offset": "3"}) == (7, 3)
    assert list_query("ws", {"limit": "100"}).limit == 100


def test_a_chunk_size_in_other_digits_is_a_400() -> None:
    with pytest.raises(ApiError) as raised:
        service({"chunk_size": "²"})
    assert raised.value.status == 400
    assert service({"chunk_size": "256"}).chunk_size == 256


@pytest.mark.parametrize("pages", ["²", "1-²", "٣", "1-x"])
def test_ocr_pages_in_other_digits_are_a_400(pages: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse_fields({"pages": pages})
    assert raised.value.status == 400


def test_a_huge_page_range_is_checked_without_being_expanded() -> None:
    params = parse_fields({"pages": "1-999999999999"})  # answered at once, no huge list
    assert params.pages == "1-999999999999"
    with pytest.raises(ApiError):
        select_pages(params.pages, 3)  # beyond the document once its length is known
    assert select_pages("2-3,1", 3) == (2, 3, 1)


def test_ocr_pages_read_as_written_by_people() -> None:
    """'ALL' and spaces around a dash or comma name the same pages (they were 400s)."""
    assert parse_fields({"pages": "ALL"}).pages == "all"
    assert select_pages(parse_fields({"pages": " 1 - 2 , 3 "}).pages, 3) == (1, 2, 3)
    with pytest.raises(ApiError):
        parse_fields({"pages": "1 2"})
