"""The rooms' speech history on SQLite and PostgreSQL: cleaning, bounds, reading back."""

from __future__ import annotations

import inspect
import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from storyteller_daemon.agent import fencing, trigger_text
from storyteller_daemon.agent.ports import SpeechHistory
from storyteller_daemon.domain import text
from storyteller_daemon.domain.text import SpeechLine, cap
from storyteller_daemon.storage.speech_history import MAX_LINES_PER_ROOM, SpeechHistoryRepository
from storyteller_daemon.storage.store import Store
from world_adapter.events import Cursor, Speech

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUAY, MARKET = 101, 102
_seq = itertools.count(1)


def speech(
    text: str = "Hello.",
    *,
    at: datetime = T0,
    cell: int = QUAY,
    speaker: str = "Maren Tidewell",
    **fields: object,
) -> Speech:
    fields = {"language": "Common", "accent": "a clipped harbour accent", **fields}
    return Speech(
        cursor=Cursor("e", next(_seq)),
        cell_id=cell,
        zone_id=1,
        occurred_at=at,
        speaker_id=1001,
        speaker_name=speaker,
        text=text,
        **fields,  # type: ignore[arg-type]
    )


async def everything(store: Store, cell: int = QUAY) -> list[SpeechLine]:
    return await store.speech.recent(cell, limit=10_000, since=T0 - timedelta(days=30))


async def test_a_line_is_stored_stripped_and_capped(store: Store) -> None:
    event = speech(
        "\x1b[1;31mGive\x1b[0m me \x03send href='x'\x04the\x03/send\x04 #1ledger#0,\n now. "
        + "x" * 500,
        speaker="<send href='look maren'>#2Maren#0 Tidewell</send>",
        volume="VeryLoud",
        target_id=2003,
        target_kind="character",
        target_description="  a rangy\x1b[0m young dockhand ",
    )
    stored = await store.speech.record(event)
    [line] = await everything(store)
    assert line == stored
    assert line.speaker_name == "Maren Tidewell"
    assert line.message.startswith("Give me the ledger, now. xxx")
    assert len(line.message) == 400 and line.message.endswith("xx...")
    assert (line.volume, line.language, line.accent) == (
        "VeryLoud",
        "Common",
        "a clipped harbour accent",
    )
    assert (line.target_id, line.target_kind, line.target_description) == (
        2003,
        "character",
        "a rangy young dockhand",
    )
    assert line.occurred_at == T0


async def test_blank_fields_read_none_and_a_blank_target_is_no_target(store: Store) -> None:
    await store.speech.record(
        speech("  ", speaker="\x1b[0m", language="", accent="", target_description=" ")
    )
    [line] = await everything(store)
    assert (line.speaker_name, line.message, line.language, line.accent) == ("(none)",) * 4
    assert line.target_description is None and line.target_kind is None


async def test_each_room_keeps_its_newest_200_lines(store: Store) -> None:
    for n in range(MAX_LINES_PER_ROOM + 5):
        await store.speech.record(speech(f"line {n}", at=T0 + timedelta(seconds=n)))
    await store.speech.record(speech("elsewhere", cell=MARKET))
    quay = await everything(store)
    assert len(quay) == MAX_LINES_PER_ROOM
    assert [line.message for line in quay[:2]] == ["line 5", "line 6"]
    assert quay[-1].message == "line 204"
    assert [line.message for line in await everything(store, MARKET)] == ["elsewhere"]


async def test_lines_older_than_24_hours_before_the_newest_are_dropped(store: Store) -> None:
    await store.speech.record(speech("too old", at=T0))
    await store.speech.record(speech("just in", at=T0 + timedelta(seconds=1)))
    await store.speech.record(speech("other room", at=T0, cell=MARKET))
    await store.speech.record(speech("now", at=T0 + timedelta(hours=24, seconds=1)))
    assert [line.message for line in await everything(store)] == ["just in", "now"]
    assert [line.message for line in await everything(store, MARKET)] == ["other room"]


async def test_recent_reads_the_newest_lines_in_the_window_oldest_first(store: Store) -> None:
    for n in range(6):
        await store.speech.record(speech(f"line {n}", at=T0 + timedelta(minutes=n)))
    await store.speech.record(speech("same moment", at=T0 + timedelta(minutes=5)))

    async def messages(**query: object) -> list[str]:
        lines = await store.speech.recent(QUAY, **query)  # type: ignore[arg-type]
        return [line.message for line in lines]

    assert await messages(limit=3, since=T0) == ["line 4", "line 5", "same moment"]
    assert await messages(limit=10, since=T0 + timedelta(minutes=4)) == [
        "line 4",
        "line 5",
        "same moment",
    ]
    until = T0 + timedelta(minutes=3)
    assert await messages(limit=2, since=T0, until=until) == ["line 2", "line 3"]
    assert await messages(limit=0, since=T0) == []
    assert await store.speech.recent(MARKET, limit=5, since=T0) == []


async def test_times_in_other_zones_are_compared_in_utc(store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    await store.speech.record(
        speech("at noon UTC", at=datetime(2026, 3, 1, 14, 0, tzinfo=plus_two))
    )
    [line] = await store.speech.recent(QUAY, limit=5, since=T0, until=T0)
    assert line.occurred_at == T0 and line.occurred_at.tzinfo is not None
    assert await store.speech.recent(QUAY, limit=5, since=T0 + timedelta(seconds=1)) == []


def test_the_repository_fits_the_agent_protocol(sqlite_store: Store) -> None:
    history: SpeechHistory = sqlite_store.speech
    assert isinstance(history, SpeechHistory)
    expected = inspect.signature(SpeechHistory.recent)
    actual = inspect.signature(SpeechHistoryRepository.recent)
    assert [(p.name, p.kind, p.default) for p in actual.parameters.values()] == [
        (p.name, p.kind, p.default) for p in expected.parameters.values()
    ]


def test_cap_counts_the_ellipsis_towards_the_limit() -> None:
    assert cap("abcdef", 6) == "abcdef"
    assert cap("abcdefg", 6) == "abc..."
    assert cap("abcdefg", 2) == "ab"


def test_prompts_use_the_domain_markup_rules() -> None:
    # One set of expressions: the prompt helpers are the domain's, not copies of them.
    assert fencing.strip_markup is text.strip_markup
    assert fencing.one_line is text.one_line
    assert trigger_text.strip_markup is text.strip_markup
    assert trigger_text.one_line is text.one_line
    assert trigger_text.split_camel is text.split_camel


async def test_a_speech_routed_again_keeps_one_line(store: Store) -> None:
    """The same event (its stream position and time) recorded again, alone or in a batch with
    a new one, keeps one line; the same position said at another time (a world that starts
    its positions over, as the embedded sim does) is another line."""
    first = speech("Where is the ledger?")
    await store.speech.record(first)
    later = speech("The tide turns.", at=T0 + timedelta(seconds=5))
    await store.speech.record_many([first, later])
    await store.speech.record(first)
    again = replace(first, occurred_at=T0 + timedelta(seconds=9))
    await store.speech.record(again)
    assert [line.message for line in await everything(store)] == [
        "Where is the ledger?",
        "The tide turns.",
        "Where is the ledger?",
    ]
