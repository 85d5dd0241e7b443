"""A Gemini `generateContent` request's tools, tool choice and answer schema in the
chat-completions terms `providers.sim.content` uses, so every simulated vendor plans the
same call and the same structured answer for the same question. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.sim import content


def declarations(tools: Any) -> list[dict[str, Any]]:
    """The function declarations of `tools`, schemas in lower-case JSON-schema types
    (the SDK sends OpenAPI's `OBJECT`/`STRING`), as `content` expects them."""
    functions: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else ():
        for declaration in (
            (tool.get("functionDeclarations") or ()) if isinstance(tool, dict) else ()
        ):
            schema = declaration.get("parameters") or declaration.get("parametersJsonSchema") or {}
            functions.append(
                {"name": declaration.get("name", ""), "parameters": lower_types(schema)}
            )
    return functions


def lower_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else lower_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [lower_types(item) for item in schema]
    return schema


def tool_choice(tool_config: Any) -> str | dict[str, Any] | None:
    """Gemini's `functionCallingConfig` in the chat-completions terms `content` uses."""
    config = (
        (tool_config or {}).get("functionCallingConfig") if isinstance(tool_config, dict) else None
    )
    mode = str((config or {}).get("mode") or "AUTO").upper()
    if mode == "NONE":
        return "none"
    if mode in ("ANY", "VALIDATED"):
        names: list[str] = list((config or {}).get("allowedFunctionNames") or ())
        return {"function": {"name": names[0]}} if len(names) == 1 else "required"
    return "auto"


def answer_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What `generationConfig` asks the answer to be: JSON satisfying `responseSchema`
    (or `responseJsonSchema`) under `responseMimeType: application/json`, any object with
    no schema; None (prose) otherwise."""
    config = body.get("generationConfig")
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return None
    schema = config.get("responseSchema") or config.get("responseJsonSchema")
    return lower_types(schema) if isinstance(schema, dict) else content.JSON_OBJECT_SCHEMA
