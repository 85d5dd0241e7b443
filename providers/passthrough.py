"""Model ids the catalog does not list but the operator allows (pure).

The operator names them with `provider/pattern` entries (`GATEWAY_PASSTHROUGH_MODELS`,
shell-style patterns: `openai/gpt-6*`, `mistral/*`). A matching id is sent to that
provider as is. Its price and size are unknown to the gateway, so it is described by its
provider's dearest catalog model of the same kind: billed at that price (a ceiling, so
that budgets and cost limits are never undercut) and sized like it for the energy
estimate. Its context window and output limit are unknown (0: no planning bound), and
its `passthrough` flag leaves every parameter to the vendor.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterable

import attrs

# The catalog's model type of each capability a pass-through model may be asked for.
VENDOR_ID = re.compile(r"[!-~]+")
CAPABILITY_TYPES = {
    "chat": "chat",
    "embeddings": "embedding",
    "rerank": "rerank",
    "speech": "speech",
    "transcription": "transcription",
    "ocr": "ocr",
}


class PassthroughError(ValueError):
    """A pass-through entry the gateway cannot use; the message names it."""


@attrs.frozen(slots=True)
class PassthroughRule:
    """One allowed pattern: ids matching `pattern` go to `provider` as they are."""

    provider: str
    pattern: str

    def matches(self, model_id: str) -> bool:
        return fnmatch.fnmatchcase(model_id, self.pattern)


def parse_passthrough(spec: str, providers: Collection[str]) -> tuple[PassthroughRule, ...]:
    """The rules of a comma-separated `provider/pattern` list; `PassthroughError` names
    an entry without a known provider or without a pattern."""
    rules = []
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        provider, slash, pattern = entry.partition("/")
        if not slash or not pattern or provider not in providers:
            raise PassthroughError(
                f"pass-through entry {entry!r} must be provider/pattern with a provider "
                f"among {', '.join(sorted(providers))}"
            )
        rules.append(PassthroughRule(provider, pattern))
    return tuple(rules)


def allowed(
    rules: Iterable[PassthroughRule], name: str, providers: Collection[str]
) -> tuple[str, str] | None:
    """(provider, vendor model id) for `name` when a rule allows it: `provider/id` is
    checked against that provider's rules, a bare id against every rule in order. Only
    printable ASCII without spaces can be a vendor's model id (and it goes back to the
    client in a header): any other name is no model, whatever the rules say."""
    if not VENDOR_ID.fullmatch(name):
        return None
    provider, slash, rest = name.partition("/")
    if slash and provider in providers:
        found = any(r.provider == provider and r.matches(rest) for r in rules)
        return (provider, rest) if found else None
    for rule in rules:
        if rule.matches(name):
            return rule.provider, name
    return None


def price_rank(pricing_input: float, pricing_output: float, unit_price: float | None) -> float:
    """How dear a model is, to find a provider's ceiling: its unit price for models billed
    by unit, else what a typical 3:1 input:output token mix costs."""
    if unit_price is not None:
        return unit_price
    return (3 * pricing_input + pricing_output) / 4
