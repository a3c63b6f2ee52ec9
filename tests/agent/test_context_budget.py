"""The token budget: priorities decide who yields room, shares cap each block, stable blocks
come first, events are never dropped, and the report says what was left out and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from storyteller_daemon.agent.context import (
    EVENTS_FLOOR,
    Block,
    BlockReport,
    Item,
    Priority,
    assemble,
)
from storyteller_daemon.agent.models.tokens import estimate_tokens
from storyteller_daemon.agent.prompts import TRUNCATION_MARKER, PromptBuilder
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.storage.store import Store
from world_adapter.sim import SimWorld

MAREN, PER = 1001, 2003
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def listed(
    name: str, priority: Priority, count: int, *, share: float = 0.2, stable: bool = False
) -> Block:
    def render(lines: Sequence[str], dropped: int) -> str:
        note = [f"({dropped} more)"] if dropped else []
        return "\n".join([f"{name}:", *lines, *note]) if lines else ""

    items = tuple(Item(f"- {name} entry {n}: " + "salt and tar " * 4) for n in range(count))
    return Block(name, priority, items, render, share=share, stable=stable)


def events(words: int) -> Block:
    def render(texts: Sequence[str], dropped: int) -> str:
        return f"What happened:\n{texts[0]}" if texts else ""

    body = "the tide comes in " * words
    return Block("events", Priority.EVENTS, (Item(body),), render, cut_marker=TRUNCATION_MARKER)


def blocks(event_words: int = 20) -> list[Block]:
    return [
        listed("digest", Priority.DIGEST, 6, share=0.12, stable=True),
        listed("remit", Priority.SITUATIONS, 8, share=0.08, stable=True),
        listed("here", Priority.SITUATIONS, 8, share=0.08),
        listed("memories", Priority.MEMORIES, 12, share=0.2),
        events(event_words),
        listed("recent", Priority.RECENT, 8, share=0.08),
    ]


def reports(budget: int, event_words: int = 20) -> dict[str, BlockReport]:
    made = assemble(
        blocks(event_words),
        budget=budget,
        fixed=[("instructions", "You narrate the harbour. " * 10)],
        count=estimate_tokens,
    )
    assert made.report.tokens <= budget or made.report.over_budget
    return {r.name: r for r in made.report.blocks}


def test_lower_priorities_yield_room_first() -> None:
    # Growing events squeeze a fixed budget: each block gives up room only after every block
    # of lower priority has given up all of its own.
    for event_words in range(10, 900, 10):
        seen = reports(3000, event_words)
        assert seen["events"].kept == 1  # never dropped
        for report in seen.values():
            if report.limit == "room":
                below = [r for r in seen.values() if r.priority > report.priority]
                assert all(r.kept == 0 for r in below), (event_words, report, below)


def test_the_order_in_which_blocks_are_left_out() -> None:
    emptied: list[str] = []
    for event_words in range(10, 900, 5):
        for name, report in reports(3000, event_words).items():
            if report.kept == 0 and report.limit == "room" and name not in emptied:
                emptied.append(name)
    # Within a priority the storyteller-wide situations yield before those of the trigger.
    assert emptied == ["recent", "digest", "memories", "remit", "here"]


def test_each_block_keeps_to_its_share() -> None:
    budget = 1000
    share = {"digest": 0.12, "remit": 0.08, "here": 0.08, "memories": 0.2, "recent": 0.08}
    seen = reports(budget)
    for name, part in share.items():
        assert 0 < seen[name].tokens <= part * budget
        assert seen[name].limit == ("share" if seen[name].dropped else "")
    assert seen["memories"].dropped and seen["digest"].dropped


def test_events_are_cut_only_when_they_alone_exceed_the_room() -> None:
    seen = reports(600, event_words=500)
    assert seen["events"].cut and seen["events"].kept == 1
    assert all(r.kept == 0 for n, r in seen.items() if n not in ("events", "instructions"))
    # The instructions alone over the budget: the events keep their floor, marked over budget.
    made = assemble(
        blocks(500),
        budget=100,
        fixed=[("instructions", "You narrate the harbour. " * 50)],
        count=estimate_tokens,
    )
    assert made.report.over_budget
    assert estimate_tokens(made.text) <= EVENTS_FLOOR + 1


def test_stable_blocks_come_first_whatever_their_priority() -> None:
    made = assemble(blocks(), budget=4000, fixed=[], count=estimate_tokens)
    starts = [made.text.index(f"{name}:") for name in ("digest", "remit", "here", "memories")]
    assert starts == sorted(starts)
    assert made.text.index("What happened:") < made.text.index("recent:")
    assert made.stable_prefix.startswith("digest:")
    assert made.stable_prefix.rstrip().endswith("salt and tar")
    assert "here:" not in made.stable_prefix


async def test_growing_events_drop_recent_speech_before_the_digest_before_memories(
    sqlite_store: Store, storyteller: Storyteller
) -> None:
    now = T0
    world = SimWorld.harbour_town(clock=lambda: now)
    sid = storyteller.id or 0
    listener = replace(
        storyteller, speech_context_count=5, speech_context_window=timedelta(hours=1)
    )
    for n in range(5):
        now = T0 + timedelta(seconds=n)
        await sqlite_store.speech.record(world.say(PER, f"Line {n} about the tide."))
    await sqlite_store.digests.save(
        Digest(sid, "\n".join(f"Day {n}: ships came and went." for n in range(30)), "f", "k", T0)
    )
    for n in range(6):
        await sqlite_store.situations.create(sid, f"Thread {n}", "x")
        await sqlite_store.memories.create(sid, MAREN, f"Note {n}", "She keeps the nets.")
    now = T0 + timedelta(seconds=30)
    speech = Trigger.from_event(world.say(MAREN, "The tide is early.", target_id=PER))
    builder = PromptBuilder(
        world,
        sqlite_store.situations,
        LimitsConfig(prompt_max_tokens=4000),
        sqlite_store.speech,
        memories=sqlite_store.memories,
        digests=sqlite_store.digests,
    )

    async def build(reason_words: int) -> dict[str, BlockReport]:
        trigger = replace(speech, attention_reason="the tide " * reason_words)
        prompt = await builder.build(listener, trigger)
        assert prompt.report.tokens <= 4000
        return {r.name: r for r in prompt.report.blocks}

    calm = await build(1)
    assert all(not r.dropped and not r.cut for r in calm.values())
    # The report's blocks add up to the whole (each counted with the blank line after it).
    prompt = await builder.build(listener, replace(speech, attention_reason="the tide"))
    assert sum(r.tokens for r in prompt.report.blocks) == prompt.report.tokens + 1
    assert calm["recent speech"].kept == 5 and calm["digest"].kept == 1
    words = 1
    while not (squeezed := await build(words))["digest"].cut:
        words += 20
        assert words < 2000
    # The digest yields only once recent speech has given up all its room...
    assert squeezed["recent speech"].kept == 0 and squeezed["recent speech"].limit == "room"
    assert squeezed["digest"].limit == "room"
    # ...and memories and situations are still whole.
    for name in ("situations (remit)", "memories"):
        assert not squeezed[name].dropped, squeezed[name]
    while not (squeezed := await build(words))["memories"].dropped:
        words += 20
        assert words < 4000
    # Memories yield only once the digest is gone; the situations are still whole.
    assert squeezed["digest"].kept == 0 and squeezed["situations (remit)"].dropped == 0
