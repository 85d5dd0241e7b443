"""The schema builders the families' operations share (`gateway.operator.apidoc`): what
they accept and refuse, checked with a JSON Schema validator as a client would."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator, ValidationError

from gateway.operator.apidoc import BOOL, INT, STR, all_required, deleted, listing, obj


def test_a_listing_holds_its_items_and_requires_its_extra_properties() -> None:
    schema = listing(obj(("id",), id=STR), has_more=BOOL)
    Draft202012Validator(schema).validate(
        {"object": "list", "data": [{"id": "a"}], "has_more": False}
    )
    for wrong in (
        {"object": "list", "data": [{"id": "a"}]},  # has_more missing
        {"object": "page", "data": [], "has_more": False},
        {"object": "list", "data": [{}], "has_more": False},  # an item without its id
    ):
        with pytest.raises(ValidationError):
            Draft202012Validator(schema).validate(wrong)


def test_a_deletion_names_its_object_when_given_a_kind() -> None:
    Draft202012Validator(deleted("file")).validate({"id": "f", "object": "file", "deleted": True})
    Draft202012Validator(deleted()).validate({"id": "k", "deleted": True})
    for schema, wrong in (
        (deleted("file"), {"id": "f", "deleted": True}),
        (deleted("file"), {"id": "f", "object": "agent", "deleted": True}),
        (deleted(), {"id": "k", "deleted": False}),
    ):
        with pytest.raises(ValidationError):
            Draft202012Validator(schema).validate(wrong)


def test_all_required_is_an_open_object_that_needs_every_property() -> None:
    schema = all_required(id=STR, size=INT)
    assert schema == obj(("id", "size"), id=STR, size=INT)
    Draft202012Validator(schema).validate({"id": "a", "size": 1, "more": "allowed"})
    with pytest.raises(ValidationError):
        Draft202012Validator(schema).validate({"id": "a"})
