"""Alert emails through the operator's SMTP server (stdlib `smtplib`, in a worker thread).

`smtplib` is blocking, so each message is sent by `trio.to_thread.run_sync` under a
limiter, with the socket timeout as the deadline the thread itself respects (a thread
cannot be cancelled; trio abandons waiting for it on cancellation and the socket timeout
ends it). Without an SMTP host configured nothing is sent and the outcome is
`undeliverable`, recorded with the alert event.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

import attrs
import trio

SENT = "sent"
FAILED = "failed"
UNDELIVERABLE = "undeliverable"
NO_RECIPIENTS = "none"


@attrs.frozen
class SmtpSettings:
    host: str | None
    port: int
    sender: str
    timeout_s: float


def message(sender: str, recipients: tuple[str, ...], subject: str, text: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    mail["Subject"] = subject
    mail.set_content(text)
    return mail


def _send(settings: SmtpSettings, mail: EmailMessage) -> None:
    assert settings.host is not None
    with smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_s) as smtp:
        smtp.send_message(mail)


async def send(
    settings: SmtpSettings,
    recipients: tuple[str, ...],
    subject: str,
    text: str,
    limiter: trio.CapacityLimiter,
) -> str:
    """Send one message; returns `sent`, `failed`, `undeliverable` (no SMTP server
    configured) or `none` (no recipients)."""
    if not recipients:
        return NO_RECIPIENTS
    if settings.host is None:
        return UNDELIVERABLE
    letter = message(settings.sender, recipients, subject, text)
    try:
        await trio.to_thread.run_sync(
            _send, settings, letter, limiter=limiter, abandon_on_cancel=True
        )
    except (OSError, smtplib.SMTPException):
        return FAILED
    return SENT
