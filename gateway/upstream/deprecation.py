"""What an answer of a deprecated model says about it: one helper for every family that
answers with a model of the catalog (chat, speech, transcription, translation), so a
client learns it from the answers it already reads, whatever the route.

The headers: `Deprecation: true`, `Sunset` (the catalog's `sunset_date`, RFC 8594),
`Link` to the migration guide (`rel="deprecation"`, RFC 9745) and
`X-Service-Deprecation-Warning` naming the sunset date and the replacement (appended to a
warning already there, such as chat's for the legacy `functions`).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from email.utils import format_datetime

import attrs

from providers.catalog import Deprecation, ModelInfo

WARNING = "X-Service-Deprecation-Warning"


def warn_if_deprecated(headers: dict[str, str], info: ModelInfo | None) -> None:
    """Add the deprecation headers to `headers` when `info` (the model answering, or the
    one named) is deprecated; nothing otherwise."""
    if info is None or info.deprecation is None:
        return
    notice = _notice(info.id, info.deprecation)
    previous = headers.get(WARNING)
    headers["Deprecation"] = "true"
    headers[WARNING] = f"{previous} {notice.warning}" if previous else notice.warning
    if notice.sunset is not None:
        headers["Sunset"] = notice.sunset
    if notice.link is not None:
        headers["Link"] = notice.link


@attrs.frozen
class _Notice:
    warning: str
    sunset: str | None
    link: str | None


@functools.lru_cache(maxsize=256)
def _notice(model: str, facts: Deprecation) -> _Notice:
    """The warning, `Sunset` date and `Link` of a deprecated model: the same for every
    answer it gives, so made once (parsing and formatting the date took ~40 us of each)."""
    warning = (
        f"The model '{model}' is deprecated (sunset {facts.sunset_date}); use "
        f"'{facts.replacement}' ({facts.migration_guide})."
    )
    guide = facts.migration_guide
    link = f'<{guide}>; rel="deprecation"; type="text/html"' if guide else None
    return _Notice(warning, _http_date(facts.sunset_date), link)


def _http_date(day: str) -> str | None:
    try:
        moment = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    return format_datetime(moment, usegmt=True)
