"""What the OpenAPI document says about a route, declared on the route itself.

A Quart view carries its `Operation` through the `@operation(...)` decorator; a route of
the plain-ASGI fast path carries it in its `Route`. The operation names the *types* the
route reads and answers, the same types its family's `input.py` parses into and its
`render.py` builds, so the document (`gateway.operator.openapi`, which walks the app's
route table) is written from the declarations the server runs on. What no type says
(a summary, the error codes a route answers beyond the generic ones, a permission) is
declared here next to the route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__operation__"


class _Undeclared:
    def __repr__(self) -> str:
        return "UNDECLARED"


UNDECLARED: Any = _Undeclared()  # a route that has not said what it reads or answers


@attrs.frozen
class Content:
    """A body that is not a JSON shape, or one under another media type: audio, text,
    a multipart form (`shape`: an attrs class whose fields are the form's parts), a
    stream of server-sent events (`shape`: one event's JSON)."""

    media_type: str
    shape: Any = None  # a declared type, or None for bytes/text
    description: str = ""


Body = type | Content | None
Answer = type | Content | tuple[type | Content, ...] | None


@attrs.frozen
class Header:
    """A request header the route reads (besides `Authorization`)."""

    name: str
    description: str
    required: bool = False
    values: tuple[str, ...] = ()  # the only values it takes, where it has a few


WORKSPACE_HEADER = Header(
    "X-Workspace-ID",
    "The workspace to act in (one the caller may reach); without it, the caller's own",
)


@attrs.frozen(kw_only=True)
class Operation:
    """One route's entry in the document.

    `body`: the request body's type (an attrs class of the family's `input.py`), a
    `Content` (a form, raw bytes), or None for a route that reads no body. `answer`:
    the success body's type (a TypedDict of the family's `render.py`), `Content`s for
    other media, a tuple of alternatives, or None for an empty answer. `errors`: the
    error codes the route answers besides the generic ones (authentication, a malformed
    body or query, a rate limit, an internal error), by HTTP status.
    """

    summary: str
    tag: str
    body: Any = UNDECLARED
    answer: Any = UNDECLARED
    status: int = 200
    query: type | None = None  # an attrs class: one field per query parameter
    headers: tuple[Header, ...] = ()
    errors: Mapping[int, str | tuple[str, ...]] = attrs.field(factory=dict)
    public: bool = False  # no key needed
    # The role action a management route needs: such a route acts in the workspace that
    # `X-Workspace-ID` names (`WORKSPACE_HEADER`, listed for it).
    permission: str | None = None
    body_required: bool = True
    description: str = ""


def operation(summary: str, tag: str, **declared: Any) -> Callable[[F], F]:
    """Declare a Quart view's operation (see `Operation` for the fields)."""
    declared_operation = Operation(summary=summary, tag=tag, **declared)

    def mark(view: F) -> F:
        setattr(view, MARK, declared_operation)
        return view

    return mark


def operation_of(view: Any) -> Operation | None:
    """The operation a view declared (through a bound method too), or None."""
    found = getattr(view, MARK, None)
    return found if isinstance(found, Operation) else None
