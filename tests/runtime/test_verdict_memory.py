"""The verdict memory: text the model ignored is settled by rule for hours, except where it
must not be, and forgotten when the storyteller's prompts change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest
from test_pipeline import AT_ONCE, T0, WATCHER, ZONES, Harness, Rig, crime, echo

from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.domain.verdict_memory import placeholder_text, prompts_digest, recallable
from storyteller_daemon.domain.work import WorkItem
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.verdict_memory import VerdictMemoryRepository
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.events import Cursor, RoomEcho, Speech

HOURS = 2.0
# In-memory repeats off, so every repeat below is the verdict memory's to settle.
REMEMBERING: AttentionConfig = AT_ONCE.model_copy(
    update={"repeat_seconds": 0, "room_repeat_seconds": 0, "verdict_memory_hours": HOURS}
)
GULLS = "Gulls wheel and shriek above the masts."
LISTENER = replace(WATCHER, subscriptions=WATCHER.subscriptions | {EventKind.SPEECH})


def speech(
    seq: int,
    speaker: int = 1001,
    target: int | None = None,
    text: str = GULLS,
    name: str = "Lucan Ashby",
) -> Speech:
    return Speech(
        cursor=Cursor("e", seq),
        cell_id=101,
        zone_id=1,
        occurred_at=echo().occurred_at,
        speaker_id=speaker,
        speaker_name=name,
        text=text,
        target_id=target,
        target_kind="character" if target is not None else None,
    )


@pytest.fixture
async def harness(sqlite_store: Store) -> AsyncIterator[Harness]:
    h = Harness(sqlite_store)
    try:
        yield h
    finally:
        await h.crash()


@pytest.fixture
async def memory_rig(harness: Harness, sqlite_store: Store) -> Rig:
    saved = await sqlite_store.storytellers.create("Watch")  # the rows' storyteller
    assert saved.id == WATCHER.id
    memory = VerdictMemoryRepository(sqlite_store.db, harness.clock)
    rig = await harness.start(REMEMBERING, storytellers=(LISTENER,), verdict_memory=memory)
    rig.runner.verdict = AttentionVerdict(False, "")
    return rig


async def judge(rig: Rig, *events: object) -> list[WorkItem]:
    """Take `events` in, let them be judged; the new work items, oldest first."""
    before = {i.id for i in await rig.backlog.items(1)}
    for event in events:
        await rig.pipeline.ingest(event)  # type: ignore[arg-type]
        await rig.pipeline.wait_idle()
    return sorted((i for i in await rig.backlog.items(1) if i.id not in before), key=lambda i: i.id)


async def test_ignored_text_is_settled_by_rule_without_a_model_call(memory_rig: Rig) -> None:
    [first] = await judge(memory_rig, echo(text=GULLS))
    assert first.state.value == "ignored" and first.rule is None
    asked = len(memory_rig.runner.judged)
    await memory_rig.clock.advance(3600)
    # The same text in another room of the zone, in other case and spacing.
    [again] = await judge(
        memory_rig, echo(cell=102, seq=2, text="  gulls WHEEL and shriek above the masts. ")
    )
    assert len(memory_rig.runner.judged) == asked  # no model call
    assert again.state.value == "ignored" and again.rule == f"repeat_of:{first.id}"
    assert again.reason is not None and f"work item {first.id}" in again.reason
    assert memory_rig.pipeline.stats.filtered["repeat_of"] == 1
    [entry] = await VerdictMemoryRepository(memory_rig.store.db, memory_rig.store.clock).list(1)
    assert (entry.item_id, entry.hits, entry.text) == (first.id, 1, GULLS.casefold())


async def test_past_the_horizon_or_in_another_zone_the_model_judges_again(memory_rig: Rig) -> None:
    await judge(memory_rig, echo(text=GULLS))
    other_zone = replace(echo(seq=2, text=GULLS), zone_id=2)
    await judge(memory_rig, other_zone)
    await memory_rig.clock.advance(HOURS * 3600 + 1)
    [late] = await judge(memory_rig, echo(seq=3, text=GULLS))
    assert len(memory_rig.runner.judged) == 3 and late.rule is None


async def test_only_ignored_verdicts_are_kept(memory_rig: Rig) -> None:
    memory_rig.runner.verdict = AttentionVerdict(True, "matters")
    await judge(memory_rig, echo(text=GULLS))
    await judge(memory_rig, echo(seq=2, text=GULLS))
    assert len(memory_rig.runner.judged) == 2
    memory_rig.runner.verdict = AttentionVerdict(False, "", violation="no verdict")
    await judge(memory_rig, echo(seq=3, text="A bell tolls."))
    await judge(memory_rig, echo(seq=4, text="A bell tolls."))
    assert len(memory_rig.runner.judged) == 4
    assert await VerdictMemoryRepository(memory_rig.store.db, memory_rig.store.clock).list(1) == []


async def test_crimes_are_always_judged(memory_rig: Rig) -> None:
    await judge(memory_rig, crime(1))
    [again] = await judge(memory_rig, crime(2))
    assert len(memory_rig.runner.judged) == 2 and again.rule is None
    assert recallable("crime", "Theft", room_id=101, zone_id=1) is None
    assert recallable("state", "Dead", room_id=101, zone_id=1) is None
    assert recallable("direct", "look at this", room_id=101, zone_id=1) is None


async def test_speech_is_settled_whoever_says_it(memory_rig: Rig) -> None:
    # The speaker is not part of the key, and the speaker's own name in the text is a
    # placeholder: "Lucan Ashby" and "Mara Quell" saying the same about themselves is one text.
    [first] = await judge(memory_rig, speech(1, text="Lucan Ashby buys the next round!"))
    [same] = await judge(memory_rig, speech(2, text="Lucan Ashby buys the next round!"))
    [other] = await judge(
        memory_rig,
        speech(3, speaker=1002, name="Mara Quell", text="Mara Quell buys the next round!"),
    )
    [named] = await judge(  # another character's name stays a word of the text
        memory_rig,
        speech(4, speaker=1002, name="Mara Quell", text="Lucan Ashby buys the next round!"),
    )
    assert same.rule == other.rule == f"repeat_of:{first.id}"
    assert named.rule is None
    assert len(memory_rig.runner.judged) == 2


def echo_by(seq: int, source: int, text: str, cell: int = 101) -> RoomEcho:
    return replace(echo(cell=cell, seq=seq, text=text), source_character_id=source)


async def test_an_echo_s_actor_is_a_placeholder_once_the_daemon_knows_the_name(
    memory_rig: Rig,
) -> None:
    # The names come from what the characters said: an echo carries only its source's id.
    await judge(
        memory_rig,
        speech(1, text="Evening."),
        speech(2, speaker=1002, name="Mara Quell", text="Evening."),
    )
    asked = len(memory_rig.runner.judged)
    [first] = await judge(memory_rig, echo_by(3, 1001, "Lucan Ashby grins."))
    [same] = await judge(memory_rig, echo_by(4, 1002, "Mara Quell grins.", cell=102))
    [unknown] = await judge(memory_rig, echo_by(5, 1003, "Ilsa Brand grins."))
    [sourceless] = await judge(memory_rig, echo(seq=6, text="Mara Quell grins."))
    assert same.rule == f"repeat_of:{first.id}"
    assert (unknown.rule, sourceless.rule) == (None, None)
    assert len(memory_rig.runner.judged) - asked == 3


async def test_numbers_are_compared_by_their_count_of_digits(memory_rig: Rig) -> None:
    [first] = await judge(memory_rig, echo(text="A porter counts 5 coins."))
    [same] = await judge(memory_rig, echo(seq=2, text="A porter counts 7 coins."))
    [more] = await judge(memory_rig, echo(seq=3, text="A porter counts 500 coins."))
    assert same.rule == f"repeat_of:{first.id}" and more.rule is None


async def test_an_echo_by_a_character_with_notes_is_always_judged(
    memory_rig: Rig, sqlite_store: Store
) -> None:
    await judge(memory_rig, speech(1, text="Evening."))  # the daemon learns Lucan's name
    await judge(memory_rig, echo_by(2, 1002, "Lucan Ashby grins."))  # by someone unknown
    await judge(memory_rig, echo_by(3, 1003, "Ilsa Brand grins."))
    await sqlite_store.situations.create(1, "Ashby owes money", "", character_id=1001)
    asked = len(memory_rig.runner.judged)
    [noted] = await judge(memory_rig, echo_by(4, 1001, "Lucan Ashby grins."))
    [stranger] = await judge(memory_rig, echo_by(5, 1003, "Ilsa Brand grins."))
    assert noted.rule is None
    assert stranger.rule is not None and stranger.rule.startswith("repeat_of:")
    assert len(memory_rig.runner.judged) - asked == 1


def test_names_are_replaced_as_whole_words_and_numbers_by_digits() -> None:
    assert (
        placeholder_text("Per perhaps waves at PER.", ["Per"])
        == "<someone> perhaps waves at <someone>."
    )
    assert placeholder_text("Osric Vell and Osric.", ["Osric", "Osric Vell"]) == (
        "<someone> and <someone>."
    )
    assert placeholder_text("Tide at 6, 12 boats.", []) == "tide at #, ## boats."
    assert placeholder_text("   ") == ""


@pytest.mark.parametrize("noted", ["situation", "memory"])
async def test_speech_by_or_to_a_character_with_notes_is_always_judged(
    memory_rig: Rig, sqlite_store: Store, noted: str
) -> None:
    await judge(memory_rig, speech(1), speech(2, target=2002))
    if noted == "situation":
        await sqlite_store.situations.create(1, "Ashby owes money", "", character_id=1001)
    else:
        await sqlite_store.memories.create(1, 2002, "Fenna", "Fenna runs the ferry.")
    asked = len(memory_rig.runner.judged)
    by_speaker, to_target, unrelated = await judge(
        memory_rig, speech(3), speech(4, target=2002), speech(5, speaker=1003)
    )
    await judge(memory_rig, speech(6, speaker=1003))
    if noted == "situation":  # the speaker has notes: both of his lines are judged
        assert (by_speaker.rule, to_target.rule) == (None, None)
    else:  # only the line addressed to Fenna is
        assert by_speaker.rule is not None and by_speaker.rule.startswith("repeat_of:")
        assert to_target.rule is None
    # Another speaker without notes saying what was ignored is settled.
    assert unrelated.rule is not None and unrelated.rule.startswith("repeat_of:")
    judged_now = len(memory_rig.runner.judged) - asked
    assert judged_now == (2 if noted == "situation" else 1)


async def test_a_prompt_change_forgets_what_was_settled(memory_rig: Rig) -> None:
    await judge(memory_rig, echo(text=GULLS))
    memory = VerdictMemoryRepository(memory_rig.store.db, memory_rig.store.clock)
    [entry] = await memory.list(1)
    assert entry.prompts == prompts_digest(WATCHER.system_prompt, WATCHER.attention_prompt)
    memory_rig.pipeline.router.update(
        [replace(LISTENER, attention_prompt="Gulls are omens now.")], ZONES
    )
    [again] = await judge(memory_rig, echo(seq=2, text=GULLS))
    assert again.rule is None and len(memory_rig.runner.judged) == 2
    [entry] = await memory.list(1)  # the new verdict, under the new prompts
    assert entry.item_id == again.id
    memory_rig.pipeline.router.update([replace(LISTENER, system_prompt="A new remit.")], ZONES)
    await judge(memory_rig, echo(seq=3, text=GULLS))
    assert len(memory_rig.runner.judged) == 3


async def test_settled_verdicts_are_listed_cleared_and_pruned(store: Store) -> None:
    clock = FakeClock(T0)
    memory = VerdictMemoryRepository(store.db, clock)
    event = recallable("room_echo", GULLS, room_id=101, zone_id=None)
    bell = recallable("room_echo", "A bell tolls.", room_id=101, zone_id=None)
    assert event is not None and bell is not None and event.room_class == "room:101"
    await memory.remember(1, [(event, 10), (bell, 11)], prompts="p")
    await memory.remember(2, [(event, 12)], prompts="p")
    listed = await memory.list(1)
    assert {e.item_id for e in listed} == {10, 11}
    assert await memory.clear(1, [listed[0].id]) == 1
    assert len(await memory.list(1)) == 1 and await memory.clear(1) == 1
    assert len(await memory.list(2)) == 1
    assert listed[0].ignored_at == T0
    later = T0 + timedelta(seconds=1)
    recalled = await memory.recall(2, [event.key, bell.key], prompts="p", since=later)
    assert recalled == {}
    assert set(await memory.recall(2, [event.key, bell.key], prompts="p", since=T0)) == {event.key}
    assert await memory.recall(2, [event.key], prompts="q", since=T0) == {}
    assert await memory.invalidate(2, keep_prompts="q") == 1
    await memory.remember(2, [(event, 12)], prompts="p")
    await memory.remember(3, [(event, 13)], prompts="p")
    await clock.advance(2)
    await memory.remember(3, [(bell, 14)], prompts="p")  # newer than `later`: kept
    await memory.hit([(await memory.list(2))[0].id] * 2)
    assert (await memory.list(2))[0].hits == 2
    assert await memory.prune(ignored_before=later) == 2
    assert [e.item_id for e in await memory.list(3)] == [14]


async def test_the_one_call_design_keeps_no_verdict_memory(
    harness: Harness, sqlite_store: Store
) -> None:
    await sqlite_store.storytellers.create("Watch")
    reference = REMEMBERING.model_copy(update={"one_call_per_event": True})
    memory = VerdictMemoryRepository(sqlite_store.db, harness.clock)
    rig = await harness.start(reference, verdict_memory=memory)
    rig.runner.verdict = AttentionVerdict(False, "")
    await judge(rig, echo(text=GULLS), echo(seq=2, text=GULLS))
    assert len(rig.runner.judged) == 2
    assert await memory.list(1) == []
