"""docs/api-reference.md, rendered from the OpenAPI document the gateway serves.

`python -m gateway.app.reference` starts a gateway in a temporary folder, reads its
`GET /openapi.json` over HTTP and writes the page (`--url` reads a running gateway's
instead; `--check` only says whether the committed page is current). The renderer reads
nothing but the document, so the page follows the document wherever the document comes
from; `tests/operator/test_api_reference.py` fails when the committed page is stale.

The page groups operations by tag (alphabetically, then by path and method) and gives each
its parameters, request body fields (nested objects flattened to dotted names), success
bodies and error statuses; the shared schemas (`components.schemas`) close the page.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio

from gateway.operator.pages import slugify

Schema = Mapping[str, Any]
PAGE = Path(__file__).resolve().parents[2] / "docs" / "api-reference.md"
METHODS = ("get", "post", "put", "patch", "delete")
DEPTH = 3  # nested objects are listed field by field down to this depth
HEADER = """\
# API reference

<!-- Generated: `python -m gateway.app.reference`. Do not edit by hand. -->

Rendered from the OpenAPI document the gateway serves (`GET /openapi.json`, {title}
{version}), which Swagger UI shows at `GET /docs`. What a field means beyond its type is in
the pages per subject ([the index](README.md)); every error code is in [Errors](errors.md).

{description}
"""


def render(document: Schema) -> str:
    """The whole page for `document` (OpenAPI 3.1)."""
    info = document.get("info", {})
    parts = [
        HEADER.format(
            title=info.get("title", ""),
            version=info.get("version", ""),
            description=_prose(info.get("description", "")),
        ),
        _authentication(document),
    ]
    by_tag = _operations_by_tag(document)
    parts += [_contents(by_tag), _error_statuses(by_tag)]
    for tag, operations in by_tag.items():
        parts.append(f"## {tag}\n")
        parts.extend(_operation(method, path, op) for method, path, op in operations)
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        parts.append("## Schemas\n")
        parts.extend(_named_schema(name, schema) for name, schema in schemas.items())
    return "\n".join(parts).rstrip() + "\n"


def _authentication(document: Schema) -> str:
    schemes = document.get("components", {}).get("securitySchemes", {})
    described = ", ".join(
        f"`{name}` ({scheme.get('type', '')} {scheme.get('scheme', '')})".replace(" )", ")")
        for name, scheme in schemes.items()
    )
    text = (
        f"Security schemes: {described or 'none'}. Every operation needs "
        "`Authorization: Bearer <key>` unless it says *public*."
    )
    return f"## Authentication\n\n{_prose(text)}\n"


def _prose(text: str) -> str:
    """Paragraphs wrapped at 100 columns (the page is read as Markdown too)."""
    return "\n\n".join(
        textwrap.fill(" ".join(paragraph.split()), width=100, break_on_hyphens=False)
        for paragraph in text.split("\n\n")
    )


def _operations_by_tag(document: Schema) -> dict[str, list[tuple[str, str, Schema]]]:
    grouped: dict[str, list[tuple[str, str, Schema]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["other"])[0]
                grouped.setdefault(tag, []).append((method, path, item[method]))
    return {
        tag: sorted(ops, key=lambda op: (op[1], METHODS.index(op[0])))
        for tag, ops in sorted(grouped.items())
    }


def _contents(by_tag: Mapping[str, Sequence[tuple[str, str, Schema]]]) -> str:
    lines = ["## Contents\n"]
    for tag, operations in by_tag.items():
        lines.append(f"- [{tag}](#{slugify(tag)})")
        lines += [
            f"  - [{method.upper()} `{path}`](#{slugify(_title(method, path))})"
            for method, path, _ in operations
        ]
    return "\n".join(lines) + "\n"


def _title(method: str, path: str) -> str:
    return f"{method.upper()} {path}"


def _operation(method: str, path: str, op: Schema) -> str:
    lines = [f"### `{_title(method, path)}`\n", _prose(op.get("summary", "") + _public(op)) + "\n"]
    if op.get("description"):
        lines.append(_prose(op["description"]) + "\n")
    if op.get("parameters"):
        lines.append(_parameters(op["parameters"]))
    if op.get("requestBody"):
        lines.append(_request_body(op["requestBody"]))
    lines.append(_responses(op.get("responses", {})))
    return "\n".join(lines)


def _public(op: Schema) -> str:
    return " *Public: no key.*" if op.get("security") == [] else ""


def _parameters(parameters: Sequence[Schema]) -> str:
    rows = [
        (
            f"`{p['name']}`",
            p["in"],
            _type(p.get("schema", {})),
            "yes" if p.get("required") else "",
            p.get("description", ""),
        )
        for p in parameters
    ]
    return "Parameters:\n\n" + _table(("name", "in", "type", "required", "description"), rows)


def _request_body(body: Schema) -> str:
    required = "required" if body.get("required") else "optional"
    parts = []
    for media_type, content in body.get("content", {}).items():
        schema = content.get("schema", {})
        parts.append(f"Request body ({required}), `{media_type}`: {_type(schema)}.\n")
        rows = list(_fields(schema))
        if rows:
            parts.append(_table(("field", "type", "required", "description"), rows))
    return "\n".join(parts)


def _responses(responses: Schema) -> str:
    """Successes in a table; the error statuses, whose body is the one envelope, on a line
    (their meanings are listed once, under "Error statuses")."""
    rows = []
    for status, answer in responses.items():
        if not _is_error(status):
            content = answer.get("content", {})
            bodies = "; ".join(
                f"`{media}`: {_type(c.get('schema', {}))}" + _events(c)
                for media, c in content.items()
            )
            rows.append((status, answer.get("description", ""), bodies))
    errors = ", ".join(status for status in responses if _is_error(status))
    text = "Responses:\n\n" + _table(("status", "meaning", "body"), rows)
    return text + (f"\nErrors ([envelope](#error)): {errors}.\n" if errors else "")


def _is_error(status: str) -> bool:
    return status[:1] in ("4", "5")


def _error_statuses(by_tag: Mapping[str, Sequence[tuple[str, str, Schema]]]) -> str:
    """What each error status means, as the operations describe it."""
    meanings: dict[str, list[str]] = {}
    for operations in by_tag.values():
        for _, _, op in operations:
            for status, answer in op.get("responses", {}).items():
                said = meanings.setdefault(status, [])
                description = answer.get("description", "")
                if _is_error(status) and description and description not in said:
                    said.append(description)
    rows = [(status, "; ".join(said)) for status, said in sorted(meanings.items()) if said]
    intro = (
        "Every error answers with the [envelope](#error); its `code` says what happened "
        "([Errors](errors.md) lists them all)."
    )
    return f"## Error statuses\n\n{_prose(intro)}\n\n" + _table(("status", "meaning"), rows)


def _events(content: Schema) -> str:
    event = content.get("x-event-schema")
    return f" (events: {_type(event)})" if event else ""


def _named_schema(name: str, schema: Schema) -> str:
    lines = [f"### {name}\n", f"{_type(schema)}.\n"]
    rows = list(_fields(schema))
    if rows:
        lines.append(_table(("field", "type", "required", "description"), rows))
    return "\n".join(lines)


def _fields(schema: Schema, prefix: str = "", depth: int = 1) -> Iterator[tuple[str, ...]]:
    """One row per property, nested objects' properties under dotted names (`a.b`, arrays
    of objects as `a[].b`), down to `DEPTH`."""
    required = set(schema.get("required", ()))
    for name, field in schema.get("properties", {}).items():
        dotted = f"{prefix}{name}"
        yield (
            f"`{dotted}`",
            _type(field),
            "yes" if name in required else "",
            field.get("description", ""),
        )
        if depth < DEPTH:
            inner, suffix = _object_inside(field)
            if inner is not None:
                yield from _fields(inner, f"{dotted}{suffix}.", depth + 1)


def _object_inside(field: Schema) -> tuple[Schema | None, str]:
    """The object schema with properties that `field` is or holds an array of, if any."""
    if field.get("properties"):
        return field, ""
    items = field.get("items", {})
    if isinstance(items, Mapping) and items.get("properties"):
        return items, "[]"
    return None, ""


def _type(schema: Schema) -> str:
    """A short reading of `schema`: `string`, `integer (1-100)`, `"a" or "b"`, a link to a
    named schema, `array of ...`."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{slugify(name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    for combiner, word in (("anyOf", " or "), ("oneOf", " or "), ("allOf", " and ")):
        if combiner in schema:
            return word.join(_type(part) for part in schema[combiner])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        inner = _type(schema.get("items", {}))
        inner = f"({inner})" if " or " in inner or " and " in inner else inner
        return f"array of {inner}{_bounds(schema)}"
    fmt = f", {schema['format']}" if "format" in schema else ""
    return f"{kind}{fmt}{_bounds(schema)}"


def _bounds(schema: Schema) -> str:
    """`(0 to 2)`, `(≥ 1)`, `(length 1 to 200)`, `(items ≤ 100)`."""
    for low, high, what in (
        ("minimum", "maximum", ""),
        ("minLength", "maxLength", "length "),
        ("minItems", "maxItems", "items "),
    ):
        if low in schema and high in schema:
            return f" ({what}{schema[low]} to {schema[high]})"
        if low in schema:
            return f" ({what}≥ {schema[low]})"
        if high in schema:
            return f" ({what}≤ {schema[high]})"
    if "exclusiveMinimum" in schema:
        return f" (> {schema['exclusiveMinimum']})"
    return ""


def _cell(text: str) -> str:
    """Text fit for a table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


async def served_document(url: str | None = None) -> dict[str, Any]:
    """The document at `url` (a running gateway), else that of a gateway started here in a
    temporary folder (no demo upstreams, no background probes), stopped once read."""
    if url is not None:
        return await _fetch(url)
    from gateway.app.server import run_gateway
    from gateway.platform.config import Settings

    with tempfile.TemporaryDirectory(prefix="gateway-reference-") as data:
        settings = Settings(
            port=0, data_dir=Path(data), usage_writer="thread", health_probe_interval_s=0
        )
        async with trio.open_nursery() as nursery:
            running = await nursery.start(partial(run_gateway, settings, env={}))
            document = await _fetch(running.url)
            nursery.cancel_scope.cancel()
    return document


async def _fetch(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        answer = await client.get("/openapi.json")
    answer.raise_for_status()
    document: dict[str, Any] = answer.json()
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.app.reference")
    parser.add_argument("--url", help="read this running gateway's document instead")
    parser.add_argument("--output", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    page = render(trio.run(served_document, args.url))
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        print("current" if current == page else f"stale: {args.output}")
        return 0 if current == page else 1
    args.output.write_text(page)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
