"""The usage writer's sealing step on its own: bodies redacted and encrypted, or dropped,
never passed on clear, within the batch's budget (exact virtual times)."""

from __future__ import annotations

import orjson
import trio
import trio.testing
from cryptography.fernet import Fernet

from gateway.requestlog.bodies import BodySealer, opened
from store.secrets import CredentialCipher
from tests.store.test_usage import make_usage

BODY = orjson.dumps({"request": {"q": "jane@example.com"}, "response": None}).decode()


async def redacting(text: str) -> str:
    return text.replace("jane@example.com", "[EMAIL]")


async def test_bodies_are_redacted_then_encrypted_and_others_pass() -> None:
    cipher = CredentialCipher(Fernet.generate_key())
    sealer = BodySealer(cipher, redacting)
    plain, none = make_usage(1, body=BODY), make_usage(2)
    sealed, untouched = await sealer.seal([plain, none])
    assert untouched is none
    assert sealed.body_sealed and sealed.body is not None
    assert "jane" not in sealed.body and "EMAIL" not in sealed.body  # cipher text
    assert opened(cipher, sealed.body) == {"request": {"q": "[EMAIL]"}, "response": None}
    assert opened(CredentialCipher(Fernet.generate_key()), sealed.body) is None  # other key
    assert (sealer.sealed, sealer.dropped) == (1, 0)


async def test_a_body_past_the_budget_or_failing_is_dropped_not_kept_clear(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def stuck(text: str) -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def broken(text: str) -> str:
        raise RuntimeError("the detector's process died")

    cipher = CredentialCipher(Fernet.generate_key())
    started = trio.current_time()
    late = BodySealer(cipher, stuck, budget_s=2.0)
    first, second = await late.seal([make_usage(1, body=BODY), make_usage(2, body=BODY)])
    assert trio.current_time() - started == 2.0  # one budget for the batch, not one each
    assert (first.body, second.body, first.body_sealed) == (None, None, False)
    assert late.dropped == 2
    failing = BodySealer(cipher, broken)
    [record] = await failing.seal([make_usage(3, body=BODY)])
    assert (record.body, failing.dropped) == (None, 1)
