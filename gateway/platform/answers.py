"""Answer shapes every family uses: a list, a deletion."""

from __future__ import annotations

from typing import Annotated, Generic, Literal, NotRequired, TypedDict, TypeVar

from gateway.platform.shapes.markers import Format

T = TypeVar("T")
# A moment as the management objects carry it: ISO 8601 UTC with a trailing Z
# (`gateway.platform.web.iso`).
Time = Annotated[str, Format("date-time")]


class ListOf(TypedDict, Generic[T]):
    """A list: the items in `data`."""

    object: Literal["list"]
    data: list[T]


class Deleted(TypedDict):
    """What a DELETE answers: the id, and `deleted: true`."""

    id: str
    object: NotRequired[str]
    deleted: Literal[True]


def listing(items: list[T]) -> ListOf[T]:
    return {"object": "list", "data": items}
