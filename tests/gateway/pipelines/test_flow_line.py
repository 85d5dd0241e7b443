"""An answer spoken over one line (one speech socket per answer) at exact virtual times
(autojump clock, scripted stages and line), and the pure sentence bookkeeping of
`gateway.pipelines.voice_line`.

The line gets each sentence as soon as the model has written it, so the first audio
leaves at T+a+b as with a synthesis per sentence; the audio leaves in sentence order,
each sentence counts as spoken once its audio is all relayed, cancellation closes the
line, and a line that cannot be opened leaves the answer to the per-sentence path.
"""

from __future__ import annotations

from functools import partial

import pytest
import trio

from gateway.kernels.voice import flow
from gateway.kernels.voice.flow import Event, run_pipeline
from gateway.pipelines.voice_line import SentenceMap, visible_chars
from tests.gateway.pipelines.scripted import ScriptedStages
from tests.gateway.pipelines.test_flow import LLM, STT, A, B, T, first, run


async def test_the_line_gets_each_sentence_as_it_is_written(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B, line=True)
    timed, trace = await run(stages)

    assert first(timed, "audio.chunk") == pytest.approx(T + A + B)
    assert first(timed, "llm.done") == pytest.approx(T + 1.1)  # long after the first audio
    audio = [event["data"] for _, event in timed if event["type"] == "audio.chunk"]
    assert audio == [b"s0p0;", b"s0p1;", b"s1p0;", b"s1p1;"]
    assert stages.sentences == ["It is noon.", "The sun is high today."]
    assert trace.spoken == stages.sentences
    assert trace.providers["tts"] == "line-sim"
    assert stages.counters["line"].opened == 1 and stages.counters["tts"].opened == 0
    assert not [e for _, e in timed if e["type"] == "error"]
    assert stages.all_closed()


async def test_cancelling_the_answer_closes_the_line_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B, line=True)
    seen: list[str] = []
    send, receive = trio.open_memory_channel[Event](flow.EVENT_BUFFER)
    with trio.move_on_after(T + A + B + 0.001):  # the client leaves after the first audio
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(run_pipeline, stages, send, speak=True))
            async for event in receive:
                seen.append(event["type"])
    assert trio.current_time() == pytest.approx(T + A + B + 0.001)
    assert "audio.chunk" in seen and "llm.done" not in seen
    assert stages.counters["line"].opened == 1
    assert stages.all_closed()


async def test_a_line_that_cannot_open_leaves_the_answer_to_one_call_per_sentence(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B, line=True, line_refused=True)
    timed, trace = await run(stages)

    errors = [event for _, event in timed if event["type"] == "error"]
    assert len(errors) == 1 and errors[0]["recoverable"] is True
    assert "socket" in errors[0]["message"]
    assert first(timed, "audio.chunk") == pytest.approx(T + A + B)
    assert stages.counters["tts"].opened == 2
    assert trace.spoken == ["It is noon.", "The sun is high today."]
    assert timed[-1][1]["type"] == "done"
    assert stages.all_closed()


async def test_a_line_failing_before_a_sentences_audio_hands_the_rest_to_one_call_each(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The second sentence's audio never comes: it is synthesised on its own, after a
    recoverable error event, and the answer ends normally in sentence order."""
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B, line=True, line_fails_at=1)
    timed, trace = await run(stages)

    errors = [event for _, event in timed if event["type"] == "error"]
    assert len(errors) == 1 and errors[0]["recoverable"] is True
    audio = [event["data"] for _, event in timed if event["type"] == "audio.chunk"]
    # the line's labels for sentence 0; the per-sentence call's for the third request
    assert audio == [b"s0p0;", b"s0p1;", b"s2p0;", b"s2p1;"]
    assert stages.sentences == ["It is noon.", "The sun is high today.", "The sun is high today."]
    assert stages.counters["tts"].opened == 1
    assert trace.spoken == ["It is noon.", "The sun is high today."]
    assert timed[-1][1]["type"] == "done"
    assert stages.all_closed()


async def test_a_line_failing_in_the_middle_of_a_sentence_ends_the_answer(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(
        stt=STT, llm=LLM, tts_first_s=B, line=True, line_fails_at=0, line_fails_after_pieces=1
    )
    timed, trace = await run(stages)

    audio = [event["data"] for _, event in timed if event["type"] == "audio.chunk"]
    assert audio == [b"s0p0;"]
    failed = timed[-1][1]
    assert failed["type"] == "error" and failed["recoverable"] is False
    assert trace.spoken == []
    assert stages.counters["tts"].opened == 0
    assert stages.all_closed()


# -- SentenceMap: which sentence a piece of audio speaks -------------------------------------


def test_pieces_aligned_piece_by_piece_fall_in_their_sentences() -> None:
    book = SentenceMap()
    book.add("It is noon.")  # 9 characters without spaces
    book.add("Yes.")  # 4 more
    assert visible_chars("It is noon.") == 9
    placed = [book.place(chars) for chars in (4, 5, 2, 2)]
    assert placed == [0, 0, 1, 1]
    assert not book.outstanding


def test_a_piece_without_alignment_stays_with_the_sentence_before_it() -> None:
    book = SentenceMap()
    book.add("One two.")
    book.add("Three.")
    assert [book.place(chars) for chars in (7, 0, 3, 0, 3, 0)] == [0, 0, 1, 1, 1, 1]
    assert book.finished(0) and book.finished(1) and not book.finished(2)


def test_a_sentence_is_finished_once_its_last_character_was_aligned() -> None:
    book = SentenceMap()
    book.add("One two.")
    book.place(6)
    assert not book.finished(0)
    book.place(1)
    assert book.finished(0)


def test_a_vendor_counting_more_characters_never_points_past_what_was_sent() -> None:
    book = SentenceMap()
    book.add("One.")
    assert book.outstanding
    assert [book.place(chars) for chars in (3, 3, 3)] == [0, 0, 0]
    book.add("Two.")
    assert book.place(1) == 1  # later audio, of the sentence sent since
    assert not book.outstanding
