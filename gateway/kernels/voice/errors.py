"""The audio endpoints' status for a vendor's failure.

The spec lists `500 provider error` for speech and transcriptions, where other families
answer `provider_error` with 502; the code, type and fields stay the same (timeouts,
unavailability and overload keep their 504 and 503).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gateway.platform.errors import ApiError

AUDIO_PROVIDER_ERROR_STATUS = 500


def audio_status(error: ApiError) -> ApiError:
    """`error` with the audio endpoints' status (the same object when nothing changes)."""
    if error.code == "provider_error" and error.status == 502:
        error.status = AUDIO_PROVIDER_ERROR_STATUS
    return error


@contextmanager
def audio_errors() -> Iterator[None]:
    """Raise the upstream failures of the block with the audio endpoints' status."""
    try:
        yield
    except ApiError as error:
        raise audio_status(error) from error.__cause__
