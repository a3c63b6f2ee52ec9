"""The recent-speech context of speech prompts: FutureMUD's header and line format, the count,
the window, and leaving out the speech the prompt is about."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.agent.prompts import PromptBuilder, TurnPrompt
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.trigger_text import SPEECH_CONTEXT_HEADER, speech_context_line
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.text import SpeechLine
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock
from world_adapter.events import Cursor, Speech
from world_adapter.sim import SimWorld

MAREN, OSRIC, PER = 1001, 1002, 2003
QUAY = 101
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def world(clock: FakeClock) -> SimWorld:
    return SimWorld.harbour_town(clock=clock.now)


@pytest.fixture
def builder(world: SimWorld, sqlite_store: Store) -> PromptBuilder:
    return PromptBuilder(world, sqlite_store.situations, LimitsConfig(), sqlite_store.speech)


@pytest.fixture
def listener(storyteller: Storyteller) -> Storyteller:
    """A storyteller that wants the last three lines of the last five minutes."""
    return replace(storyteller, speech_context_count=3, speech_context_window=timedelta(minutes=5))


async def said(
    world: SimWorld,
    store: Store,
    clock: FakeClock,
    seconds: float,
    speaker: int,
    text: str,
    **kw: str,
) -> Speech:
    """`speaker` says `text` `seconds` after T0, and the line goes into the history."""
    clock.set_now(T0 + timedelta(seconds=seconds))
    event = world.say(speaker, text, **kw)  # type: ignore[arg-type]
    await store.speech.record(event)
    return event


def context(prompt: TurnPrompt) -> list[str]:
    """The context lines of a prompt (empty when it has none)."""
    if SPEECH_CONTEXT_HEADER not in prompt.text:
        return []
    after = prompt.text.split(SPEECH_CONTEXT_HEADER + "\n", 1)[1]
    return after.split("\n\n", 1)[0].split("\n")


async def test_context_lines_follow_futuremud_format(
    builder: PromptBuilder,
    listener: Storyteller,
    world: SimWorld,
    sqlite_store: Store,
    clock: FakeClock,
) -> None:
    await said(world, sqlite_store, clock, 0, MAREN, "Meet me at dusk.", target_id=PER)
    await said(world, sqlite_store, clock, 30.5, PER, "Where?", language="Cant", volume="Quiet")
    now = await said(world, sqlite_store, clock, 60, MAREN, "By the nets.")
    prompt = await builder.build(listener, Trigger.from_event(now))
    spoken = prompt.text.index("from speech>>\nBy the nets.\n<<end world-text")
    header = prompt.text.index("\n\n" + SPEECH_CONTEXT_HEADER + "\n")
    assert spoken < header
    assert context(prompt) == [
        "- [2026-03-01T12:00:00+00:00] Maren Tidewell -> a rangy young dockhand with "
        'rope-burned palms (character #2003): "Meet me at dusk." '
        "(Normal, Common, a clipped harbour accent)",
        "- [2026-03-01T12:00:30.500000+00:00] Dockhand Per -> No direct target: "
        '"Where?" (Quiet, Cant, a clipped harbour accent)',
    ]
    # The speech prompt is what the attention gate judges, context included.
    assert prompt.attention_input == prompt.text


async def test_only_the_newest_count_lines_inside_the_window(
    builder: PromptBuilder,
    listener: Storyteller,
    world: SimWorld,
    sqlite_store: Store,
    clock: FakeClock,
) -> None:
    await said(world, sqlite_store, clock, 0, MAREN, "Too long ago.")
    for n in range(1, 5):
        await said(world, sqlite_store, clock, 100 + n, MAREN, f"Line {n}.")
    now = await said(world, sqlite_store, clock, 301, PER, "Now.")
    lines = context(await builder.build(listener, Trigger.from_event(now)))
    assert [line.split(": ", 1)[1].split(" (")[0] for line in lines] == [
        '"Line 2."',
        '"Line 3."',
        '"Line 4."',
    ]
    # The window's edge is included: 197 s before 301 s is exactly when "Line 4." was said.
    narrow = replace(listener, speech_context_window=timedelta(seconds=197))
    lines = context(await builder.build(narrow, Trigger.from_event(now)))
    assert [line.split('"')[1] for line in lines] == ["Line 4."]


async def test_the_current_and_later_speech_are_left_out(
    builder: PromptBuilder,
    listener: Storyteller,
    world: SimWorld,
    sqlite_store: Store,
    clock: FakeClock,
) -> None:
    before = await said(world, sqlite_store, clock, 10, MAREN, "Before.")
    now = await said(world, sqlite_store, clock, 20, PER, "The one.")
    await said(world, sqlite_store, clock, 20, MAREN, "Same instant, but later.")
    await said(world, sqlite_store, clock, 40, MAREN, "Afterwards.")
    lines = context(await builder.build(listener, Trigger.from_event(now)))
    assert lines == [speech_context_line(SpeechLine.from_event(before))]


async def test_a_speech_not_yet_recorded_still_gets_the_earlier_lines(
    builder: PromptBuilder,
    listener: Storyteller,
    world: SimWorld,
    sqlite_store: Store,
    clock: FakeClock,
) -> None:
    await said(world, sqlite_store, clock, 10, MAREN, "One.")
    await said(world, sqlite_store, clock, 11, MAREN, "Two.")
    clock.set_now(T0 + timedelta(seconds=12))
    unrecorded = world.say(PER, "Three.")
    lines = context(await builder.build(listener, Trigger.from_event(unrecorded)))
    assert [line.split('"')[1] for line in lines] == ["One.", "Two."]


async def test_no_context_without_a_count_a_history_or_earlier_speech(
    builder: PromptBuilder,
    listener: Storyteller,
    storyteller: Storyteller,
    world: SimWorld,
    sqlite_store: Store,
    clock: FakeClock,
) -> None:
    first = await said(world, sqlite_store, clock, 0, MAREN, "First words.")
    assert context(await builder.build(listener, Trigger.from_event(first))) == []
    now = await said(world, sqlite_store, clock, 5, PER, "Second words.")
    assert storyteller.speech_context_count == 0
    assert context(await builder.build(storyteller, Trigger.from_event(now))) == []
    blind = PromptBuilder(world, sqlite_store.situations, LimitsConfig())
    assert context(await blind.build(listener, Trigger.from_event(now))) == []
    assert len(context(await builder.build(listener, Trigger.from_event(now)))) == 1
    # Speech in another room is not context.
    clock.set_now(T0 + timedelta(seconds=6))
    elsewhere = world.say(OSRIC, "In the tavern.")
    assert context(await builder.build(listener, Trigger.from_event(elsewhere))) == []


def test_line_format_edge_cases() -> None:
    line = SpeechLine.heard(
        cell_id=QUAY,
        occurred_at=datetime(2026, 3, 1, 9, 30, tzinfo=UTC),
        speaker_id=12345,
        speaker_name="#2Coyle#0",
        message='He said "no".',
        volume="VeryLoud",
        language="Common",
        accent="",
        target_id=1234567,
        target_description="the ledger",
    )
    assert speech_context_line(line) == (
        "- [2026-03-01T09:30:00+00:00] Coyle -> the ledger (unknown #1234567): "
        '"He said \\"no\\"." (Very Loud, Common, (none))'
    )


def test_a_stored_line_is_built_from_the_speech_event() -> None:
    event = Speech(
        cursor=Cursor("e", 1),
        cell_id=QUAY,
        zone_id=1,
        occurred_at=T0,
        speaker_id=MAREN,
        speaker_name="Maren Tidewell",
        text="Hello.",
        language="Common",
        accent="a clipped harbour accent",
        volume="Shout",
        target_id=PER,
        target_kind="character",
        target_description="a rangy young dockhand",
    )
    assert SpeechLine.from_event(event) == SpeechLine(
        cell_id=QUAY,
        occurred_at=T0,
        speaker_id=MAREN,
        speaker_name="Maren Tidewell",
        message="Hello.",
        volume="Shout",
        language="Common",
        accent="a clipped harbour accent",
        target_id=PER,
        target_kind="character",
        target_description="a rangy young dockhand",
    )
