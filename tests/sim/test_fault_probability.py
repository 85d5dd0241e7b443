"""A fault's `probability`: how often it applies, chosen by seeded draws.

The book is pure (no I/O), so most of this is plain tables; two tests go through the
simulator's control API and the `x-sim-fault` header to show the field is parsed there.
"""

from __future__ import annotations

import math

import httpx
import pytest
import trio

from providers.sim.core import Fault
from providers.sim.faults import FaultBook, FaultError, fault_from_header, fault_from_json
from providers.sim.server import SimServer

DEADLINE_S = 10


def pattern(book: FaultBook, requests: int, model: str = "m") -> list[bool]:
    """Which of `requests` matching requests the book faulted."""
    return [book.take(model, "openai") is not None for _ in range(requests)]


def test_default_probability_is_one_and_draws_nothing() -> None:
    assert Fault(model="m").probability == 1.0
    book = FaultBook()
    book.add(Fault(model="m"))
    assert pattern(book, 50) == [True] * 50


@pytest.mark.parametrize("probability", [0.05, 0.3, 0.5, 0.9])
def test_share_of_faulted_requests_is_near_the_probability(probability: float) -> None:
    book = FaultBook(seed=7)
    book.add(Fault(model="m", probability=probability))
    share = sum(pattern(book, 20_000)) / 20_000
    # Four standard deviations of a binomial share: a wrong implementation fails, a
    # right one never does (the draws are seeded, so the figure is fixed anyway).
    assert abs(share - probability) < 4 * math.sqrt(probability * (1 - probability) / 20_000)


def test_zero_probability_never_applies() -> None:
    book = FaultBook()
    book.add(Fault(model="m", probability=0.0))
    assert not any(pattern(book, 1_000))


def test_same_seed_same_choices_other_seed_other_choices() -> None:
    def run(seed: int) -> list[bool]:
        book = FaultBook(seed=seed)
        book.add(Fault(model="m", probability=0.2))
        return pattern(book, 500)

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_clearing_and_adding_again_replays_the_same_choices() -> None:
    book = FaultBook(seed=3)
    book.add(Fault(model="m", probability=0.2))
    first = pattern(book, 300)
    book.clear()
    book.add(Fault(model="m", probability=0.2))
    assert pattern(book, 300) == first


def test_requests_that_do_not_match_draw_nothing() -> None:
    plain, mixed = FaultBook(seed=5), FaultBook(seed=5)
    plain.add(Fault(model="m", probability=0.3))
    mixed.add(Fault(model="m", probability=0.3))
    seen = []
    for _ in range(200):
        assert mixed.take("other-model", "openai") is None
        seen.append(mixed.take("m", "openai") is not None)
    assert seen == pattern(plain, 200)


def test_spared_requests_do_not_use_up_remaining() -> None:
    book = FaultBook(seed=11)
    book.add(Fault(model="m", probability=0.25, remaining=10))
    faulted = pattern(book, 2_000)
    assert sum(faulted) == 10
    assert book.active() == []


def test_a_spared_request_gives_the_next_fault_its_chance() -> None:
    book = FaultBook(seed=2)
    rare = Fault(model="m", status=500, probability=0.1)
    always = Fault(model="*", delay_ms=5)
    book.add(rare)
    book.add(always)
    taken = [book.take("m", "openai") for _ in range(1_000)]
    assert all(t is not None for t in taken)
    statuses = sum(1 for t in taken if t == rare)
    assert 60 < statuses < 140
    assert statuses + sum(1 for t in taken if t == always) == 1_000


@pytest.mark.parametrize(
    ("given", "stored"),
    [(0.05, 0.05), (1, 1.0), (0, 0.0), (1.0, 1.0)],
)
def test_probability_is_parsed_from_json(given: float, stored: float) -> None:
    fault = fault_from_json({"model": "m", "probability": given})
    assert fault.probability == stored
    assert isinstance(fault.probability, float)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, None, float("nan"), float("inf")])
def test_bad_probabilities_are_refused(bad: object) -> None:
    with pytest.raises(FaultError, match="probability"):
        fault_from_json({"model": "m", "probability": bad})


def test_header_fault_takes_a_probability() -> None:
    assert fault_from_header('{"status": 500, "probability": 0.25}').probability == 0.25


def test_one_request_faults_draw_from_their_own_seeded_generator() -> None:
    def run() -> list[bool]:
        book = FaultBook(seed=9)
        fault = Fault(model="*", status=500, probability=0.5)
        return [book.fires_once(fault) for _ in range(200)]

    first = run()
    assert first == run()
    assert 60 < sum(first) < 140


@pytest.fixture
async def http(sim: SimServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{sim.port}", trust_env=False)


async def test_control_api_sets_and_shows_probability(
    http: httpx.AsyncClient, sim: SimServer
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with http:
            created = await http.post(
                "/_sim/faults", json={"model": "gpt-4o", "status": 503, "probability": 0.5}
            )
            assert created.status_code == 201, created.text
            listed = (await http.get("/_sim/faults")).json()["faults"]
            assert listed[0]["probability"] == 0.5
            refused = await http.post("/_sim/faults", json={"model": "gpt-4o", "probability": 2})
            assert refused.status_code == 400
            assert "probability" in refused.text
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"authorization": "Bearer k"}
            statuses = [
                (
                    await http.post("/openai/v1/chat/completions", json=body, headers=headers)
                ).status_code
                for _ in range(40)
            ]
    assert set(statuses) == {200, 503}
    assert 8 < statuses.count(503) < 32
